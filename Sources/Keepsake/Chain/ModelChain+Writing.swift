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
    @inlinable
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
    @inlinable
    func encodeVerified(_ value: Latest) throws(KeepsakeError) -> Data {
        let encoded = try encodeEnvelope(value)
        do throws(KeepsakeError) {
            let detected = try readBackAsLatest(encoded)
            let decoded = try migrate(detected, context: .verification)
            try checkSame(decoded, as: value, encoded)
        } catch {
            throw proofFailure(error)
        }
        return encoded.bytes
    }

    /// The encoded envelope read back as a reader would read it — from the encoder's own tree
    /// when there is one, else by parsing the bytes — and detected as the latest envelope.
    @usableFromInline
    func readBackAsLatest(_ encoded: EncodedEnvelope) throws(KeepsakeError) -> DetectedRecord {
        let parsed: ParsedRecord
        if let tree = encoded.tree {
            do throws(JSONSyntaxError) {
                parsed = ParsedRecord(root: try tree.readBack(), stringWrapped: false)
            } catch {
                throw KeepsakeError(.corruptRecord, "the encoded bytes would not parse", cause: error.cause)
            }
        } else {
            parsed = try ParsedRecord.parse(encoded.bytes)
        }
        let detected = try detect(parsed)
        guard detected.version == latestVersion, detected.form == .envelope else {
            throw KeepsakeError(.verificationFailed, "the encoded record was not read back as the latest envelope")
        }
        return detected
    }

    /// Throws unless `decoded`, read back from `encoded`, is `value`: by `==` when `Latest` is
    /// `Equatable`, else by what encoding it again would write.
    @usableFromInline
    func checkSame(_ decoded: Latest, as value: Latest, _ encoded: EncodedEnvelope) throws(KeepsakeError) {
        let same: Bool
        if let equal = latestEquality {
            same = equal(decoded, value)
        } else if let tree = encoded.tree {
            same = try encodeEnvelope(decoded).tree?.writesSame(as: tree) ?? false
        } else {
            same = try encodeEnvelope(decoded).bytes == encoded.bytes
        }
        guard same else {
            throw KeepsakeError(
                .verificationFailed,
                """
                \(name) version \(latestVersion) does not read back as the value written; \
                its Codable conformance loses or changes data
                """)
        }
    }

    /// A failed proof as `.verificationFailed`, naming the model.
    @usableFromInline
    func proofFailure(_ error: KeepsakeError) -> KeepsakeError {
        if error.code == .verificationFailed { return error }
        return KeepsakeError(
            .verificationFailed, "the encoded \(name) record does not read back: \(error.message)",
            cause: error.cause, underlying: error.underlying)
    }

    /// `Latest`'s `==`, when it is `Equatable`: how a write-back compares the value it read
    /// back (looked up once, when the chain is built).
    static var equality: (@Sendable (Latest, Latest) -> Bool)? {
        guard let type = Latest.self as? any (Equatable & Sendable).Type else { return nil }
        return equality(as: type)
    }

    private static func equality<E: Equatable & Sendable>(as _: E.Type) -> @Sendable (Latest, Latest) -> Bool {
        guard E.self == Latest.self else {
            // Unreachable: `E` is `Latest` opened as `Equatable`.
            return { first, second in
                guard let first = first as? E, let second = second as? E else { return false }
                return first == second
            }
        }
        // `E` is `Latest` (checked above): its `==` is called on the values in place, with no
        // dynamic cast per record.
        return { first, second in
            withUnsafePointer(to: first) { first in
                withUnsafePointer(to: second) { second in
                    UnsafeRawPointer(first).assumingMemoryBound(to: E.self).pointee
                        == UnsafeRawPointer(second).assumingMemoryBound(to: E.self).pointee
                }
            }
        }
    }

    /// `value`'s envelope: its bytes, and the encoder's tree they were written from.
    @usableFromInline
    func encodeEnvelope(_ value: Latest) throws(KeepsakeError) -> EncodedEnvelope {
        do {
            let oldestReader = Latest.oldestReader < latestVersion ? Latest.oldestReader : nil
            let (bytes, tree) = try CanonicalJSON.encodeEnvelopeWithTree(
                schema: name, version: latestVersion, oldestReader: oldestReader, data: value,
                dates: Latest.dateEncoding)
            return EncodedEnvelope(bytes: bytes, tree: tree)
        } catch {
            throw KeepsakeError(
                .encodingFailed, "\(name) version \(latestVersion) could not be encoded",
                cause: encodingCause(error), underlying: error)
        }
    }
}

/// An envelope as encoded: its bytes, and the encoder's tree they were written from (`nil` when
/// `JSONEncoder` wrote them).
@usableFromInline
struct EncodedEnvelope {
    @usableFromInline let bytes: Data
    let tree: CanonicalNode?
}
