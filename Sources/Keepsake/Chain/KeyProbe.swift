import Foundation

/// Why the stored keys of a type could not be read off its `Decodable` conformance.
struct ProbeProblem: Error, Sendable, Equatable {
    /// The top-level field being decoded when the probe failed, if it had got that far.
    let field: String?
    let reason: String
}

/// A decoder that feeds placeholder values to a `Decodable` type and records which top-level
/// keys it asks for: `decode` marks a key required, `contains`/`decodeIfPresent` optional.
///
/// Nested values get placeholders that their own `init(from:)` accepts where one can be found:
/// empty strings, zeros, empty collections, `nil` for optionals, fixed dates, URLs and UUIDs,
/// the first case of a `CaseIterable` enum, and — for a plain value type without references
/// (`RawRepresentable` enums that are not `CaseIterable`, enums with associated values of plain
/// types) — its all-zero bit pattern, which is its first case. The placeholder only flows into
/// the probed type's own initializer and is thrown away; it is never stored or returned.
final class KeyProbe: Decoder {
    final class Log {
        var required = Set<String>()
        var optional = Set<String>()
        /// The top-level key whose value was being decoded last.
        var current: String?
    }

    let log = Log()
    let recording: Bool
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(recording: Bool) { self.recording = recording }

    /// Reads the top-level keys `type` decodes.
    static func storedKeys<T: Decodable>(of type: T.Type) -> Result<StoredKeys, ProbeProblem> {
        let probe = KeyProbe(recording: true)
        do {
            _ = try T(from: probe)
        } catch {
            let field = probe.log.current
            let detail: String
            if let failure = error as? PlaceholderFailure {
                detail = "no placeholder value of \(failure.typeName) could be made to probe it"
            } else {
                detail = "its init(from:) threw on placeholder values (\(error))"
            }
            let place = field.map { "field '\($0)'" } ?? "its top level"
            return .failure(
                ProbeProblem(
                    field: field,
                    reason: """
                        the stored keys of \(T.self) cannot be read off its Decodable conformance at \(place): \(detail); \
                        declare them with `static let storedKeys = StoredKeys(required: [...], optional: [...])`
                        """))
        }
        return .success(StoredKeys(required: probe.log.required, optional: probe.log.optional))
    }

    struct PlaceholderFailure: Error {
        let typeName: String
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(probe: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single() }

    /// A value of `T` its own decoder accepts, for probing only.
    static func placeholder<T: Decodable>(_ type: T.Type) throws -> T {
        if let value = knownPlaceholder(type) { return value }
        do {
            return try T(from: KeyProbe(recording: false))
        } catch {
            if let cases = T.self as? any CaseIterable.Type, let first = firstCase(of: cases) as? T {
                return first
            }
            if let zero = zeroBitPattern(T.self) { return zero }
            throw PlaceholderFailure(typeName: String(describing: T.self))
        }
    }

    /// Placeholders for the Foundation types whose decoders reject empty strings or zeros.
    private static func knownPlaceholder<T>(_ type: T.Type) -> T? {
        switch type {
        case is Date.Type: return Date(timeIntervalSinceReferenceDate: 0) as? T
        case is Data.Type: return Data() as? T
        case is URL.Type: return URL(fileURLWithPath: "/") as? T
        case is UUID.Type: return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) as? T
        case is Decimal.Type: return Decimal.zero as? T
        default: return nil
        }
    }

    private static func firstCase<C: CaseIterable>(of type: C.Type) -> Any? {
        C.allCases.first
    }

    /// The all-zero value of a plain value type (no references, no resilient storage): for a
    /// fieldless enum its first case, for an enum with plain payloads its first case with zero
    /// payload, for a struct of such values all-zero fields. `nil` for anything else.
    static func zeroBitPattern<T>(_ type: T.Type) -> T? {
        guard _isPOD(T.self) else { return nil }
        let size = max(MemoryLayout<T>.size, 1)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<T>.alignment)
        defer { raw.deallocate() }
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        return raw.load(as: T.self)
    }

    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let probe: KeyProbe
        var codingPath: [any CodingKey] { [] }

        /// At the top level nothing is offered, so that only the keys asked for are recorded.
        /// Nested, one key is offered when one can be made (the first case of a synthesized
        /// `CodingKeys` enum), so that an enum with associated values decodes its first case.
        var allKeys: [Key] {
            guard !probe.recording, let key = KeyProbe.zeroBitPattern(Key.self) else { return [] }
            return [key]
        }

        func contains(_ key: Key) -> Bool {
            guard probe.recording else { return false }
            probe.log.optional.insert(key.stringValue)
            return true
        }

        func decodeNil(forKey key: Key) throws -> Bool { true }

        private func required(_ key: Key) {
            guard probe.recording else { return }
            probe.log.required.insert(key.stringValue)
            probe.log.current = key.stringValue
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            required(key)
            return false
        }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            required(key)
            return ""
        }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            required(key)
            return 0
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
            required(key)
            return 0
        }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
            required(key)
            return 0
        }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
            required(key)
            return 0
        }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
            required(key)
            return 0
        }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
            required(key)
            return 0
        }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            required(key)
            return 0
        }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
            required(key)
            return 0
        }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
            required(key)
            return 0
        }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
            required(key)
            return 0
        }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
            required(key)
            return 0
        }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
            required(key)
            return 0
        }
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
        func superDecoder(forKey key: Key) throws -> any Decoder {
            required(key)
            return KeyProbe(recording: false)
        }
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
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        { throw end() }
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
