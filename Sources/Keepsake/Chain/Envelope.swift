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
/// - **Recognised** by ``StoredEnvelope/schema(of:)``: an object of exactly `schema` (a string),
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

/// An envelope as stored: its data a parsed tree, not yet decoded. Its members are read where
/// they were parsed, by static functions, rather than copied into a value.
typealias StoredEnvelope = Envelope<JSONValue>

extension Envelope where Model == JSONValue {
    /// The name an object with an inline version keeps it under: the envelope's own
    /// (`ParsedRecord.Layout.inlineVersion`).
    static var versionKey: String { Member.version.rawValue }

    /// The `schema` of `object` when it is laid out as an envelope — exactly `schema` (a
    /// string), `version` and `data`, and `oldestReader` when the writer declared older
    /// readers compatible — or `nil`. The other members' values are checked by
    /// ``version(of:expecting:)`` and ``fields(of:)``.
    static func schema(of object: JSONObject) -> String? {
        guard object.count == 3 || (object.count == 4 && object[Member.oldestReader.rawValue] != nil),
            case let .string(schema)? = object[Member.schema.rawValue],
            object[Member.version.rawValue] != nil, object[Member.data.rawValue] != nil
        else { return nil }
        return schema
    }

    /// The version and oldest reader of the envelope `object` holds (recognised by
    /// ``schema(of:)``), read as a record of the model `name`. Its data is read by
    /// ``fields(of:)``, once the caller knows the version. Static, on the parsed object, so that
    /// reading a record copies nothing out of it.
    ///
    /// - Throws: `.schemaMismatch` when the envelope is another model's; `.corruptRecord` when
    ///   its version or oldest reader is not an integer, or the oldest reader is not between 0
    ///   and the version.
    static func version(
        of object: JSONObject, expecting name: String
    ) throws(KeepsakeError) -> (version: Int, oldestReader: Int?) {
        guard case let .string(schema)? = object[Member.schema.rawValue], schema.isExactly(name) else {
            let found: String
            if case let .string(schema)? = object[Member.schema.rawValue] {
                found = "'\(schema)'"
            } else {
                found = "none"
            }
            throw KeepsakeError(.schemaMismatch, "the envelope's schema is \(found), expected '\(name)'")
        }
        let version = try (object[Member.version.rawValue] ?? .null).recordVersion(
            at: "the envelope's \"\(Member.version.rawValue)\"")
        guard let value = object[Member.oldestReader.rawValue] else { return (version, nil) }
        let reader = try value.recordVersion(at: "the envelope's \"\(Member.oldestReader.rawValue)\"")
        guard (0...version).contains(reader) else {
            throw KeepsakeError(
                .corruptRecord,
                "the envelope's \(Member.oldestReader.rawValue) \(reader) is not between 0 and its version \(version)")
        }
        return (version, reader)
    }

    /// The record's fields: the `data` of the envelope `object` holds, which must be an object.
    ///
    /// - Throws: `.corruptRecord` naming what `data` is instead.
    static func fields(of object: JSONObject) throws(KeepsakeError) -> JSONObject {
        guard case let .object(fields)? = object[Member.data.rawValue] else {
            let found = (object[Member.data.rawValue] ?? .null).kindName
            throw KeepsakeError(
                .corruptRecord, "the envelope's \"\(Member.data.rawValue)\" is \(found), expected an object")
        }
        return fields
    }
}

extension JSONValue {
    /// The value as a record's version number (an envelope's `version` or `oldestReader`, an
    /// inline `version`).
    ///
    /// - Throws: `.corruptRecord` naming `place` (made only then) when the value is not an
    ///   integer.
    func recordVersion(at place: @autoclosure () -> String) throws(KeepsakeError) -> Int {
        guard case let .number(text) = self, let version = Int(text) else {
            throw KeepsakeError(.corruptRecord, "\(place()) is \(kindName), expected an integer")
        }
        return version
    }
}
