import Foundation

// How a chain's latest version is written: one envelope, keys sorted, verified to read back.

extension ModelChain {
    /// The envelope bytes Keepsake stores for `value` (an `Envelope`: the model's fields under
    /// its name and version), keys sorted, dates ISO 8601 — verified to decode back and
    /// re-encode to the same bytes.
    ///
    /// Dates are written losslessly: with milliseconds, or with as many more fraction digits as
    /// the date needs to read back equal (`2025-03-01T09:30:00.2501234Z`). A date that cannot be
    /// written exactly — outside the years 0001–9999, or not finite — is refused, never cut.
    ///
    /// - Throws: `.encodingFailed` (its cause names the field, e.g. `at data.startDate: …`) or
    ///   `.verificationFailed`.
    /// - Important: Nothing is written anywhere; when this throws there are no bytes to store.
    public func encode(_ value: Latest) throws(KeepsakeError) -> Data {
        try encodeVerified(value)
    }

    /// The envelope bytes for `value`, checked to decode back and re-encode to the same bytes.
    func encodeVerified(_ value: Latest) throws(KeepsakeError) -> Data {
        let bytes = try encodeEnvelope(value)
        do throws(KeepsakeError) {
            let parsed = try ParsedRecord.parse(bytes)
            let detected = try detect(parsed)
            guard detected.version == latestVersion, detected.form == .envelope else {
                throw KeepsakeError(.verificationFailed, "the encoded record was not read back as the latest envelope")
            }
            let again = try encodeEnvelope(try migrate(detected, context: .verification))
            guard again == bytes else {
                throw KeepsakeError(
                    .verificationFailed,
                    """
                    \(name) version \(latestVersion) does not encode the same after a round trip; \
                    its Codable conformance loses or changes data
                    """)
            }
        } catch {
            if error.code == .verificationFailed { throw error }
            throw KeepsakeError(
                .verificationFailed, "the encoded \(name) record does not read back: \(error.message)",
                cause: error.cause, underlying: error.underlying)
        }
        return bytes
    }

    private func encodeEnvelope(_ value: Latest) throws(KeepsakeError) -> Data {
        do {
            let oldestReader = Latest.oldestReader < latestVersion ? Latest.oldestReader : nil
            return try CanonicalJSON.encodeEnvelope(
                schema: name, version: latestVersion, oldestReader: oldestReader, data: value,
                dates: Latest.dateEncoding)
        } catch {
            throw KeepsakeError(
                .encodingFailed, "\(name) version \(latestVersion) could not be encoded",
                cause: encodingCause(error), underlying: error)
        }
    }
}
