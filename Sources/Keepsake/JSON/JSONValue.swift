import Foundation

/// A JSON value: the one JSON tree of this package — the tree the record codec detects versions
/// on and decodes from, and what the outside world is shown (every `--json` output of the CLI,
/// a record's fields as configuration values).
///
/// Numbers keep their literal text so that integers and doubles decode exactly as written.
/// Objects keep their members in document order; duplicate member names are rejected by the
/// parser, so a lookup has one answer. Building one for output: `JSONValue+Building.swift`.
package enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// A short name of the value's kind, for error messages (never the value itself).
    package var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// A JSON object's members in document order. Records are small, so a linear scan over
/// a contiguous array is faster than hashing; an object of more than ``indexThreshold``
/// members also has an index, so that a hostile object of 100k members costs linear time to
/// decode, not quadratic. Member names are exact strings: compared by their UTF-8 bytes, so
/// `"caf\u{E9}"` and `"cafe\u{301}"` are two members.
package struct JSONObject: Sendable {
    /// Up to this many members, lookups scan; above it, they use ``index``.
    static let indexThreshold = 16

    package let members: [JSONMember]
    /// Member name → position in ``members``, for objects above ``indexThreshold`` members.
    private let index: [ExactString: Int]?

    /// An object of `members`, whose names must be distinct byte sequences; `index`, when
    /// given, maps each name to its position.
    init(members: [JSONMember], index: [ExactString: Int]? = nil) {
        self.members = members
        self.index = index
    }

    package subscript(key: String) -> JSONValue? {
        if let index { return index[ExactString(key)].map { members[$0].value } }
        for member in members where member.key.isExactly(key) { return member.value }
        return nil
    }

    package var keys: [String] { members.map(\.key) }
    package var count: Int { members.count }
}

/// One member of a ``JSONObject``. A struct rather than a `(key:value:)` tuple: an array of
/// tuples is copied and destroyed through the runtime's generic tuple witnesses, an array of
/// structs through code compiled for this type.
package struct JSONMember: Sendable {
    package let key: String
    package let value: JSONValue
}
