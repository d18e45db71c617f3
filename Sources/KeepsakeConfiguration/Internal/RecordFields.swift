#if Configuration
import Configuration
import Foundation
import Keepsake

// A record's fields as configuration values: the latest value as Keepsake stores it
// (`JSONValue.encoding(_:)`: canonical JSON, dates in the version's declared form with their
// fractions of a second, `Data` as base64, the model's own coding keys), read as a tree that
// keeps `true` apart from `1` and `1` apart from `1.5`.

extension JSONValue {
    /// The fields of `value`, a chain's latest version.
    ///
    /// - Throws: `KeepsakeError.Code.encodingFailed` naming `store` and `key` when the value
    ///   does not encode (its own `encode(to:)` threw, or a date its version's form cannot write).
    static func fields<V: ModelVersion>(of value: V, store: String, key: String) throws(KeepsakeError) -> JSONValue {
        do {
            return try JSONValue.encoding(value)
        } catch {
            throw KeepsakeError(
                .encodingFailed, store: store, key: key,
                "the record's latest value could not be encoded to read its fields", underlying: error)
        }
    }

    /// The field at `path` (object keys, one per component), or `nil` when there is none (or it
    /// is JSON `null`).
    func field(at path: ArraySlice<String>) -> JSONValue? {
        var current = self
        for component in path {
            guard case let .object(fields) = current, let next = fields[component] else { return nil }
            current = next
        }
        return current == .null ? nil : current
    }

    /// What this field is called in an error: its JSON kind, never its value.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a Boolean"
        case .number: int != nil ? "an integer" : "a number"
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
        guard case let .number(text) = self else { return nil }
        return Int(text) ?? Double(text).flatMap { Int(exactly: $0) }
    }

    private var double: Double? {
        guard case let .number(text) = self else { return nil }
        return Double(text)
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
                guard case let .number(text) = element, let byte = UInt8(text) else { return nil }
                bytes.append(byte)
            }
            return bytes
        default:
            return nil
        }
    }

    private func elements<Element>(_ convert: (JSONValue) -> Element?) -> [Element]? {
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
