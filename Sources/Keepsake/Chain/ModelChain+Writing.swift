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

    /// The envelope bytes for `value`, proven to read back as `value` before anything writes them.
    ///
    /// The proof, paid once per record written:
    /// 1. the envelope is read back as a reader would read it — from the encoder's own tree, which
    ///    is what `JSONParser` reads from these bytes (`CanonicalNode.readBack(depth:)`), or by
    ///    parsing the bytes when `JSONEncoder` wrote them — and detected as the latest envelope,
    ///    with the stored keys the latest version declares;
    /// 2. its data is decoded into `Latest`;
    /// 3. that value is compared with `value`: by `==` when `Latest` is `Equatable` (so a field
    ///    the encoding drops or changes is caught, which a byte comparison alone would miss when
    ///    decoding fills in the same default again), else by encoding it again and comparing what
    ///    would be written.
    @usableFromInline
    func encodeVerified(_ value: Latest) throws(KeepsakeError) -> Data {
        let (bytes, tree) = try encodeEnvelopeWithTree(value)
        do throws(KeepsakeError) {
            let parsed: ParsedRecord
            if let tree {
                do throws(JSONSyntaxError) {
                    parsed = ParsedRecord(root: try tree.readBack(), stringWrapped: false)
                } catch {
                    throw KeepsakeError(.corruptRecord, "the encoded bytes would not parse", cause: error.cause)
                }
            } else {
                parsed = try ParsedRecord.parse(bytes)
            }
            let detected = try detect(parsed)
            guard detected.version == latestVersion, detected.form == .envelope else {
                throw KeepsakeError(.verificationFailed, "the encoded record was not read back as the latest envelope")
            }
            let decoded = try migrate(detected, context: .verification)
            let same: Bool
            if let equal = latestEquality {
                same = equal(decoded, value)
            } else if let tree {
                same = try encodeEnvelopeWithTree(decoded).tree?.writesSame(as: tree) ?? false
            } else {
                same = try encodeEnvelopeWithTree(decoded).bytes == bytes
            }
            guard same else {
                throw KeepsakeError(
                    .verificationFailed,
                    """
                    \(name) version \(latestVersion) does not read back as the value written; \
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

    /// `Latest`'s `==`, when it is `Equatable`: how a write-back compares the value it read
    /// back (looked up once, when the chain is built).
    static var equality: (@Sendable (Latest, Latest) -> Bool)? {
        guard let type = Latest.self as? any (Equatable & Sendable).Type else { return nil }
        return equality(as: type)
    }

    private static func equality<E: Equatable & Sendable>(as _: E.Type) -> @Sendable (Latest, Latest) -> Bool {
        { first, second in
            guard let first = first as? E, let second = second as? E else { return false }
            return first == second
        }
    }

    private func encodeEnvelopeWithTree(_ value: Latest) throws(KeepsakeError) -> (bytes: Data, tree: CanonicalNode?) {
        do {
            let oldestReader = Latest.oldestReader < latestVersion ? Latest.oldestReader : nil
            return try CanonicalJSON.encodeEnvelopeWithTree(
                schema: name, version: latestVersion, oldestReader: oldestReader, data: value,
                dates: Latest.dateEncoding)
        } catch {
            throw KeepsakeError(
                .encodingFailed, "\(name) version \(latestVersion) could not be encoded",
                cause: encodingCause(error), underlying: error)
        }
    }
}
