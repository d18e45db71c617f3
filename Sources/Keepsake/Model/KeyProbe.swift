import Foundation

/// A decoder that feeds placeholder values to a `Decodable` type and records which top-level
/// keys it asks for: `decode` marks a key required, `contains`/`decodeIfPresent` optional.
final class KeyProbe: Decoder {
    final class Log {
        var required = Set<String>()
        var optional = Set<String>()
    }

    let log = Log()
    let recording: Bool
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(recording: Bool) { self.recording = recording }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(probe: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single() }

    static func placeholder<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Date.self { return Date(timeIntervalSinceReferenceDate: 0) as! T }
        if T.self == Data.self { return Data() as! T }
        if T.self == URL.self { return URL(string: "about:blank")! as! T }
        return try T(from: KeyProbe(recording: false))
    }

    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let probe: KeyProbe
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool {
            guard probe.recording else { return false }
            probe.log.optional.insert(key.stringValue)
            return true
        }

        func decodeNil(forKey key: Key) throws -> Bool { true }

        private func required(_ key: Key) {
            if probe.recording { probe.log.required.insert(key.stringValue) }
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { required(key); return false }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { required(key); return "" }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { required(key); return 0 }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { required(key); return 0 }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { required(key); return 0 }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { required(key); return 0 }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { required(key); return 0 }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { required(key); return 0 }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { required(key); return 0 }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { required(key); return 0 }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { required(key); return 0 }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { required(key); return 0 }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { required(key); return 0 }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { required(key); return 0 }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            required(key)
            return try KeyProbe.placeholder(type)
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            required(key)
            return KeyedDecodingContainer(KeyProbe.Keyed<NestedKey>(probe: KeyProbe(recording: false)))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            required(key)
            return Unkeyed()
        }

        func superDecoder() throws -> any Decoder { KeyProbe(recording: false) }
        func superDecoder(forKey key: Key) throws -> any Decoder { required(key); return KeyProbe(recording: false) }
    }

    private struct Unkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }
        private func end() -> DecodingError {
            .valueNotFound(Any.self, .init(codingPath: [], debugDescription: "placeholder array is empty"))
        }
        mutating func decodeNil() throws -> Bool { true }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw end() }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> { throw end() }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw end() }
        mutating func superDecoder() throws -> any Decoder { throw end() }
    }

    private struct Single: SingleValueDecodingContainer {
        var codingPath: [any CodingKey] { [] }
        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { false }
        func decode(_ type: String.Type) throws -> String { "" }
        func decode(_ type: Double.Type) throws -> Double { 0 }
        func decode(_ type: Float.Type) throws -> Float { 0 }
        func decode(_ type: Int.Type) throws -> Int { 0 }
        func decode(_ type: Int8.Type) throws -> Int8 { 0 }
        func decode(_ type: Int16.Type) throws -> Int16 { 0 }
        func decode(_ type: Int32.Type) throws -> Int32 { 0 }
        func decode(_ type: Int64.Type) throws -> Int64 { 0 }
        func decode(_ type: UInt.Type) throws -> UInt { 0 }
        func decode(_ type: UInt8.Type) throws -> UInt8 { 0 }
        func decode(_ type: UInt16.Type) throws -> UInt16 { 0 }
        func decode(_ type: UInt32.Type) throws -> UInt32 { 0 }
        func decode(_ type: UInt64.Type) throws -> UInt64 { 0 }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try KeyProbe.placeholder(type) }
    }
}
