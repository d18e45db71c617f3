import Foundation

/// A record as Keepsake writes it: the model's name, its version, the oldest version whose
/// readers can read it, and the model's fields.
///
/// ```json
/// {"data": {"alias": "Ada", "email": "ada@example.com"}, "schema": "Person", "version": 3}
/// ```
///
/// The one definition of the envelope's layout — its members' names are ``EnvelopeMember``'s
/// and are spelled nowhere else:
/// - **Written** with its keys sorted, `oldestReader` only when the version declares older
///   readers compatible (``ModelVersion/oldestReader``), in the order
///   ``EnvelopeMember/forEachWritten(oldestReader:_:)`` gives: by `CanonicalJSON.encodeEnvelope`; by `JSONEncoder` through
///   `Encodable` (the reference the canonical bytes are checked against); and as a parsed tree
///   (``json``) for a record merged into a newer release's (`RecordMerge`).
/// - **Recognised** by ``StoredEnvelope/Parts/envelopeSchema``: an object of exactly `schema` (a string),
///   `version` and `data`, and `oldestReader` when the writer declared it. `ParsedRecord.layout`
///   tells it from the other stored forms.
/// - **Read** by ``StoredEnvelope/version(of:expecting:)`` and ``StoredEnvelope/fields(of:)``,
///   which check each member's value.
struct Envelope<Model> {
    /// The model's name: the chain's ``ModelChain/name``.
    let schema: String
    /// The version of ``data``.
    let version: Int
    /// The oldest version whose readers can read ``data``; `nil` when only readers of
    /// ``version`` itself can.
    let oldestReader: Int?
    /// The model's fields.
    let data: Model

    /// The envelope's members (``EnvelopeMember``).
    typealias Member = EnvelopeMember

    /// Hands each member to `data`, `integer` or `string` in the order Keepsake writes them
    /// (``EnvelopeMember/forEachWritten(oldestReader:_:)``).
    func writeMembers(
        data: (Member, Model) throws -> Void, integer: (Member, Int) throws -> Void,
        string: (Member, String) throws -> Void
    ) rethrows {
        try Member.forEachWritten(oldestReader: oldestReader != nil) { member in
            switch member {
            case .data: try data(member, self.data)
            case .oldestReader: if let oldestReader { try integer(member, oldestReader) }
            case .schema: try string(member, schema)
            case .version: try integer(member, version)
            }
        }
    }
}

/// The names of an ``Envelope``'s members, in the order Keepsake writes them (sorted): the only
/// place they are spelled. Not nested in the generic `Envelope`, so that using one needs no
/// type metadata at run time.
enum EnvelopeMember: String, CodingKey, CaseIterable {
    case data, oldestReader, schema, version

    /// Hands each member of an envelope to `body` in the order Keepsake writes them (keys
    /// sorted), `oldestReader` only when the envelope has one. Not generic, so that a writer
    /// in code not specialised for its model (`CanonicalJSON.encodeEnvelope`) builds no
    /// `Envelope` to write one.
    @inline(__always)
    static func forEachWritten(oldestReader: Bool, _ body: (EnvelopeMember) throws -> Void) rethrows {
        try body(.data)
        if oldestReader { try body(.oldestReader) }
        try body(.schema)
        try body(.version)
    }
}

extension Envelope: Sendable where Model: Sendable {}

extension Envelope: Encodable where Model: Encodable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Member.self)
        try container.encode(schema, forKey: .schema)
        try container.encode(version, forKey: .version)
        try container.encodeIfPresent(oldestReader, forKey: .oldestReader)
        try container.encode(data, forKey: .data)
    }
}

/// An envelope as stored, not yet decoded: its members are read where they were parsed (on the
/// record's tape, ``Parts``), by static functions, rather than copied into a value.
typealias StoredEnvelope = Envelope<JSONValue>

extension Envelope where Model == JSONValue {
    /// The name an object with an inline version keeps it under: the envelope's own
    /// (`ParsedRecord.Layout.inlineVersion`).
    static var versionKey: String { Member.version.rawValue }

    /// The envelope's members of an object on a record's tape, found in one pass over its
    /// members (a record has a few): what ``Parts/envelopeSchema``, ``version(of:expecting:)``
    /// and ``fields(of:)`` read, so that a record's envelope is not looked up member by member,
    /// once for each of them. Each is the entry of the member's value.
    struct Parts: Sendable {
        let tape: JSONTape
        var schema: Int?
        var version: Int?
        var data: Int?
        var oldestReader: Int?
        /// How many members the object has, the envelope's and any others.
        var count: Int

        /// The envelope's members of the object at entry `object` of `tape`.
        init(tape: JSONTape, object: Int) {
            self.tape = tape
            count = tape.entries[object].count
            for name in tape.memberNames(of: object) {
                // Each of the four names has a length of its own: one comparison a member. (A
                // name with escapes is measured decoded: `"d\u0061ta"` is `data`.)
                let entry = tape.entries[name]
                switch entry.kind == .escaped ? tape.string(at: name).utf8.count : entry.end - entry.start {
                case 4: if tape.string(at: name, isExactly: Member.data.rawValue) { data = name + 1 }
                case 6: if tape.string(at: name, isExactly: Member.schema.rawValue) { schema = name + 1 }
                case 7: if tape.string(at: name, isExactly: Member.version.rawValue) { version = name + 1 }
                case 12: if tape.string(at: name, isExactly: Member.oldestReader.rawValue) { oldestReader = name + 1 }
                default: break
                }
            }
        }

        /// Whether the object is laid out as an envelope: exactly `schema` (a string), `version`
        /// and `data`, and `oldestReader` when the writer declared older readers compatible.
        var isEnvelope: Bool {
            guard count == 3 || (count == 4 && oldestReader != nil), let schema, tape.entries[schema].isString,
                version != nil, data != nil
            else { return false }
            return true
        }

        /// The `schema` when the object is laid out as an envelope (``isEnvelope``), or `nil`.
        var envelopeSchema: String? {
            guard isEnvelope, let schema else { return nil }
            return tape.string(at: schema)
        }
    }

    /// The version and oldest reader of the envelope whose members are `parts` (recognised by
    /// ``Parts/envelopeSchema``), read as a record of the model `name`. Its data is read by
    /// ``fields(of:)``, once the caller knows the version. Static, on the parsed members, so
    /// that reading a record copies nothing out of it.
    ///
    /// - Throws: `.schemaMismatch` when the envelope is another model's; `.corruptRecord` when
    ///   its version or oldest reader is not an integer, or the oldest reader is not between 0
    ///   and the version.
    static func version(
        of parts: Parts, expecting name: String
    ) throws(KeepsakeError) -> (version: Int, oldestReader: Int?) {
        let tape = parts.tape
        guard let schema = parts.schema, tape.entries[schema].isString, tape.string(at: schema, isExactly: name) else {
            let found: String
            if let schema = parts.schema, tape.entries[schema].isString {
                found = "'\(tape.string(at: schema))'"
            } else {
                found = "none"
            }
            throw KeepsakeError(.schemaMismatch, "the envelope's schema is \(found), expected '\(name)'")
        }
        guard let versionEntry = parts.version else {
            // Unreachable: an envelope has a version (`Parts.isEnvelope`).
            throw KeepsakeError(.corruptRecord, "the envelope has no \"\(Member.version.rawValue)\"")
        }
        let version = try TreeNode.tape(tape, versionEntry).recordVersion(
            at: "the envelope's \"\(Member.version.rawValue)\"")
        guard let value = parts.oldestReader else { return (version, nil) }
        let reader = try TreeNode.tape(tape, value).recordVersion(
            at: "the envelope's \"\(Member.oldestReader.rawValue)\"")
        guard (0...version).contains(reader) else {
            throw KeepsakeError(
                .corruptRecord,
                "the envelope's \(Member.oldestReader.rawValue) \(reader) is not between 0 and its version \(version)")
        }
        return (version, reader)
    }

    /// The record's fields: the `data` of the envelope whose members are `parts`, which must be
    /// an object.
    ///
    /// - Throws: `.corruptRecord` naming what `data` is instead.
    static func fields(of parts: Parts) throws(KeepsakeError) -> Int {
        guard let data = parts.data, parts.tape.entries[data].kind == .object else {
            let found = parts.data.map(parts.tape.kindName(at:)) ?? "null"
            throw KeepsakeError(
                .corruptRecord, "the envelope's \"\(Member.data.rawValue)\" is \(found), expected an object")
        }
        return data
    }
}

extension TreeNode {
    /// The value as a record's version number (an envelope's `version` or `oldestReader`, an
    /// inline `version`).
    ///
    /// - Throws: `.corruptRecord` naming `place` (made only then) when the value is not an
    ///   integer.
    func recordVersion(at place: @autoclosure () -> String) throws(KeepsakeError) -> Int {
        guard let text = asNumber, let version = Int(text) else {
            throw KeepsakeError(.corruptRecord, "\(place()) is \(kindName), expected an integer")
        }
        return version
    }
}
