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
    /// 1. the envelope is read back as a reader would read it — from the encoder's own tree, seen
    ///    as `JSONParser` reads the bytes written from it (`TreeNode.written`), or by parsing the
    ///    bytes when `JSONEncoder` wrote them — and checked to be the latest envelope, with the
    ///    stored keys the latest version declares (``readBackAsLatest(_:)``);
    /// 2. its data is decoded into `Latest`, from that tree;
    /// 3. that value is compared with `value`: by `==` when `Latest` is `Equatable` (so a field
    ///    the encoding drops or changes is caught, which a byte comparison alone would miss when
    ///    decoding fills in the same default again), else by encoding it again and comparing what
    ///    would be written.
    @inlinable
    func encodeVerified(_ value: Latest) throws(KeepsakeError) -> Data {
        let encoded = try encodeEnvelope(value)
        do throws(KeepsakeError) {
            let decoded = try readBackAsLatest(encoded)
            try checkSame(decoded, as: value, encoded)
        } catch {
            throw proofFailure(error)
        }
        return encoded.bytes
    }

    /// The encoded envelope read back as a reader would read it, checked to be the latest
    /// envelope, and its data decoded as `Latest`.
    ///
    /// From the encoder's own tree when there is one: the checks detection makes of a stored
    /// envelope (`detect(_:)`), made on the tree — it nests no deeper than the parser reads; it
    /// is exactly `data`, `schema`, `version` and, when declared, `oldestReader`; the schema is
    /// this model's, the version the latest; the data is an object of the keys the latest version
    /// stores, whose own `version`, if it has one, agrees — and the data decoded from the tree.
    /// `CanonicalEncoderTests` checks that decoding from the tree gives what decoding the parsed
    /// bytes gives. Else (`JSONEncoder` wrote the bytes) by parsing and detecting the bytes.
    @usableFromInline
    func readBackAsLatest(_ encoded: EncodedEnvelope) throws(KeepsakeError) -> Latest {
        guard let tree = encoded.tree else {
            let detected = try detect(ParsedRecord.parse(encoded.bytes))
            guard detected.version == latestVersion, detected.form == .envelope else {
                throw KeepsakeError(.verificationFailed, "the encoded record was not read back as the latest envelope")
            }
            return try migrate(detected, context: .verification)
        }
        // The parser reads the record's top level as level 1 and refuses level `maxDepth`.
        guard encoded.nesting < JSONParser.maxDepth else {
            throw KeepsakeError(
                .corruptRecord, "the encoded bytes would not parse", cause: JSONParser.tooDeep.cause)
        }
        let data = try writtenData(of: tree)
        return try decodeFields(Latest.self, .written(data), version: latestVersion, form: .envelope)
    }

    /// The data of the envelope the encoder wrote as `tree`, checked as detection checks a
    /// stored envelope of the latest version.
    private func writtenData(of tree: CanonicalNode) throws(KeepsakeError) -> CanonicalNode {
        // Made only when thrown: a `KeepsakeError` built per record costs more than these checks.
        var notLatest: KeepsakeError {
            KeepsakeError(.verificationFailed, "the encoded record was not read back as the latest envelope")
        }
        guard case let .object(envelope) = tree.resolved else { throw notLatest }
        var schema: String?
        var version: String?
        var oldestReader: String?
        var data: CanonicalNode?
        for member in envelope.writtenMembers {
            // Each of the four names has a length of its own (as `StoredEnvelope.Parts` tells them).
            let key = member.key
            switch (key.utf8.count, member.value.resolved) {
            case (4, _) where key.isExactly(EnvelopeMember.data.rawValue): data = member.value
            case let (6, .string(text)) where key.isExactly(EnvelopeMember.schema.rawValue): schema = text
            case let (7, .number(text)) where key.isExactly(EnvelopeMember.version.rawValue): version = text
            case let (12, .number(text)) where key.isExactly(EnvelopeMember.oldestReader.rawValue):
                guard let reader = Int(text), (0...latestVersion).contains(reader) else { throw notLatest }
                oldestReader = text
            default: throw notLatest
            }
        }
        guard let schema, schema.isExactly(name), let version, Int(version) == latestVersion, let data,
            (oldestReader != nil) == (envelope.members.count == 4)
        else { throw notLatest }
        guard case let .object(fields) = data.resolved else {
            throw KeepsakeError(
                .corruptRecord,
                """
                the envelope's "\(EnvelopeMember.data.rawValue)" is \(TreeNode.written(data).kindName), \
                expected an object
                """)
        }
        let members = fields.writtenMembers
        let entry = try entry(forVersion: latestVersion)
        if let keys = entry.keys, !keys.matches(members.lazy.map(\.key)) {
            try checkKeys(members.map(\.key), of: entry, keys: keys)
        }
        let versionKey = StoredEnvelope.versionKey
        for member in members where member.key.utf8.count == versionKey.utf8.count && member.key.isExactly(versionKey) {
            if case let .number(text) = member.value.resolved, Int(text) != latestVersion {
                throw KeepsakeError(
                    .corruptRecord, "the envelope says version \(latestVersion) but its data says version \(text)")
            }
        }
        return data
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
            let (bytes, tree, nesting) = try CanonicalJSON.encodeEnvelopeWithTree(
                schema: name, version: latestVersion, oldestReader: oldestReader, data: value,
                dates: Latest.dateEncoding)
            return EncodedEnvelope(bytes: bytes, tree: tree, nesting: nesting)
        } catch {
            throw KeepsakeError(
                .encodingFailed, "\(name) version \(latestVersion) could not be encoded",
                cause: encodingCause(error), underlying: error)
        }
    }
}

/// An envelope as encoded: its bytes, and the encoder's tree they were written from (`nil` when
/// `JSONEncoder` wrote them) and how deeply that tree nests (`CanonicalNode.write(to:depth:)`).
@usableFromInline
struct EncodedEnvelope {
    @usableFromInline let bytes: Data
    let tree: CanonicalNode?
    let nesting: Int
}
