#if Configuration
import Configuration
import Foundation
import Keepsake

/// A record's fields as a tree: the latest value encoded with `JSONEncoder` (dates as ISO 8601,
/// `Data` as base64, the model's own `CodingKeys`), then decoded into this small enum — which,
/// unlike `JSONSerialization`'s `NSNumber`s, keeps `true` apart from `1` and `1` apart from `1.0`.
indirect enum FieldTree: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([FieldTree])
    case object([String: FieldTree])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Order matters: a JSON `true` is never an Int, a `3.5` never an Int, `42` an Int first.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([FieldTree].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: FieldTree].self))
        }
    }

    /// The fields of `value`, a chain's latest version.
    ///
    /// - Throws: `KeepsakeError.Code.encodingFailed` naming `store` and `key` when the value
    ///   does not encode (its own `encode(to:)` threw).
    static func of(_ value: some Encodable, store: String, key: String) throws(KeepsakeError) -> FieldTree {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.dataEncodingStrategy = .base64
        do {
            return try JSONDecoder().decode(FieldTree.self, from: encoder.encode(value))
        } catch {
            throw KeepsakeError(
                .encodingFailed, store: store, key: key,
                "the record's latest value could not be encoded to read its fields", underlying: error)
        }
    }

    /// The field at `path` (object keys, one per component), or `nil` when there is none (or it
    /// is JSON `null`).
    func field(at path: ArraySlice<String>) -> FieldTree? {
        guard let first = path.first else { return self == .null ? nil : self }
        guard case let .object(fields) = self, let next = fields[first] else { return nil }
        return next.field(at: path.dropFirst())
    }

    /// What this field is called in an error: its JSON kind, never its value.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a Boolean"
        case .int: "an integer"
        case .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The field as `type`, or `nil` when it is not one (the caller throws, naming the field).
    func content(as type: ConfigType) -> ConfigContent? {
        switch type {
        case .string: string.map(ConfigContent.string)
        case .int: int.map(ConfigContent.int)
        case .double: double.map(ConfigContent.double)
        case .bool: bool.map(ConfigContent.bool)
        case .bytes: bytes.map(ConfigContent.bytes)
        case .stringArray: elements(\.string).map(ConfigContent.stringArray)
        case .intArray: elements(\.int).map(ConfigContent.intArray)
        case .doubleArray: elements(\.double).map(ConfigContent.doubleArray)
        case .boolArray: elements(\.bool).map(ConfigContent.boolArray)
        case .byteChunkArray: elements(\.bytes).map(ConfigContent.byteChunkArray)
        }
    }

    private var string: String? {
        if case let .string(value) = self { return value }
        return nil
    }

    /// An integer, or a number with no fractional part that fits.
    private var int: Int? {
        switch self {
        case let .int(value): return value
        case let .double(value): return Int(exactly: value)
        default: return nil
        }
    }

    private var double: Double? {
        switch self {
        case let .int(value): return Double(value)
        case let .double(value): return value
        default: return nil
        }
    }

    private var bool: Bool? {
        if case let .bool(value) = self { return value }
        return nil
    }

    /// Bytes as `Data` encodes them (a base64 string) or as `[UInt8]` does (integers 0…255).
    private var bytes: [UInt8]? {
        switch self {
        case let .string(text):
            return Data(base64Encoded: text).map { Array($0) }
        case let .array(elements):
            var bytes: [UInt8] = []
            bytes.reserveCapacity(elements.count)
            for element in elements {
                guard case let .int(value) = element, let byte = UInt8(exactly: value) else { return nil }
                bytes.append(byte)
            }
            return bytes
        default:
            return nil
        }
    }

    private func elements<Element>(_ convert: (FieldTree) -> Element?) -> [Element]? {
        guard case let .array(elements) = self else { return nil }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let value = convert(element) else { return nil }
            result.append(value)
        }
        return result
    }
}
#endif
