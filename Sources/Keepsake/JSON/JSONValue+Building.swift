import Foundation

// `JSONValue` for the outside world: what the CLI's `--json` outputs are built from (as literals,
// `["key": .string(key), "deleted": true]`), and a record's fields as Keepsake stores them, which
// KeepsakeConfiguration serves as configuration values.

extension JSONValue {
    /// An integer.
    package static func int(_ value: Int) -> JSONValue { .number(String(value)) }

    /// An object of `members`, in the order of their names' UTF-8 bytes (the order JSON output
    /// sorts them into anyway).
    package static func object(_ members: [String: JSONValue]) -> JSONValue {
        .object(JSONObject(sorting: members))
    }

    /// `text`, or `null` when there is none.
    package init(_ text: String?) { self = text.map(JSONValue.string) ?? .null }

    /// `number`, or `null` when there is none.
    package init(_ number: Int?) { self = number.map(JSONValue.int) ?? .null }

    /// `value` as Keepsake stores it, read back as a tree: canonical JSON, its dates in its
    /// version's ``DateEncoding`` with every fraction of a second they hold, `Data` as base64,
    /// the model's own coding keys.
    ///
    /// - Throws: What encoding `value` throws: an `EncodingError` for a date its version's form
    ///   cannot write exactly, and what the value's own `encode(to:)` throws.
    package static func encoding<V: ModelVersion>(_ value: V) throws -> JSONValue {
        try JSONParser.parse(CanonicalJSON.encode(value, dates: V.dateEncoding))
    }
}

extension JSONObject {
    /// An object of `members`, in the order of their names' UTF-8 bytes.
    init(sorting members: [String: JSONValue]) {
        let sorted = members.sorted { $0.key.precedesExactly($1.key) }.map { JSONMember(key: $0.key, value: $0.value) }
        guard sorted.count > Self.indexThreshold else {
            self.init(members: sorted)
            return
        }
        var index = [ExactString: Int](minimumCapacity: 2 * sorted.count)
        for (position, member) in sorted.enumerated() { index[ExactString(member.key)] = position }
        self.init(members: sorted, index: index)
    }
}

extension JSONValue: Equatable {
    /// Whether the two are the same JSON: strings and member names compared by their UTF-8
    /// bytes, numbers by their text, objects whatever the order of their members.
    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(first), .bool(second)): return first == second
        case let (.number(first), .number(second)): return first == second
        case let (.string(first), .string(second)): return first.isExactly(second)
        case let (.array(first), .array(second)): return first == second
        case let (.object(first), .object(second)):
            guard first.count == second.count else { return false }
            for member in first.members where second[member.key] != member.value { return false }
            return true
        default: return false
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .int(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
    package init(nilLiteral: ()) { self = .null }
}

// Through Foundation's coders, for output written by `JSONEncoder` (the CLI's `--json`, which
// also prints types of its own): a number is written as an integer when its text is one that
// fits, else as a double — what reading it with `JSONDecoder` and writing it back gives.

extension JSONValue: Encodable {
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(value): try container.encode(value)
        case let .number(text):
            if let integer = Int(text) {
                try container.encode(integer)
            } else if let double = Double(text) {
                try container.encode(double)
            } else {
                throw EncodingError.invalidValue(
                    text, .init(codingPath: encoder.codingPath, debugDescription: "Not a JSON number: \(text)."))
            }
        case let .string(value): try container.encode(value)
        case let .array(values): try container.encode(values)
        case let .object(object):
            // Names equal as `String`s but not as bytes (two normalisations) keep the first.
            try container.encode(
                Dictionary(object.members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first }))
        }
    }
}

extension JSONValue: Decodable {
    /// Any JSON text `JSONDecoder` reads, its numbers as `JSONEncoder` writes them: an integer
    /// when whole and it fits, else a double.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Order matters: a JSON `true` is never an Int, a `3.5` never an Int, `42` an Int first.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            guard value.isFinite else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "Not a finite number.")
            }
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            self = .number(text)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}
