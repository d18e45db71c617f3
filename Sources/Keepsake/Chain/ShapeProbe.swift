import Foundation

/// A decoder that feeds placeholder values to a `Decodable` type and records the JSON shape it
/// reads: each key it asks for (`decode` required, `decodeIfPresent` or `contains` optional) and
/// what it decodes there, recursively — the ``RecordShape`` of ``KeyProbe``'s keys.
///
/// Every nested value is probed the same way, with a decoder of its own: a single-value
/// container decoding a `String` is a string (so is a `String`-backed enum), an unkeyed
/// container is an array — it says it is not at its end until one element has been decoded, so
/// that `Array.init(from:)` decodes exactly one, whose shape is the element's — and a keyed
/// container is an object. A keyed container whose key type can be made from any string (a
/// dictionary's) is offered one key by `allKeys`, so that `Dictionary.init(from:)` decodes one
/// value, and is a map. `Date`, `Data`, `URL`, `UUID` and `Decimal` are known by their type.
///
/// What cannot be told is ``RecordShape/Value/unknown``: an enum with associated values (its
/// decoder asks which of its cases' keys are present, and no probe can list them all), a type
/// whose `init(from:)` throws on placeholders, a recursive type where it recurs, anything
/// nested deeper than ``maxDepth``. Values handed back to a type's initializer are
/// placeholders (the probed nested values, or ``KeyProbe/placeholder(_:)``), never stored.
final class ShapeProbe: Decoder {
    /// How deep values nest before the probe stops and records ``RecordShape/Value/unknown``.
    static let maxDepth = 32

    typealias Value = RecordShape.Value

    /// How deep the value being probed is, and which types it is nested in.
    struct Context {
        var depth: Int
        var ancestors: [ObjectIdentifier]

        /// A value one level down, inside a container of the same type.
        var nested: Context { Context(depth: depth + 1, ancestors: ancestors) }

        /// A value of type `id`, one level down.
        func entering(_ id: ObjectIdentifier) -> Context {
            Context(depth: depth + 1, ancestors: ancestors + [id])
        }
    }

    let context: Context
    let log = DecoderShape()
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(context: Context) { self.context = context }

    /// The shape of the records of `type`, which must decode a JSON object; `nil` when its
    /// `init(from:)` throws on the probe's placeholders or it decodes anything else.
    static func shape<T: Decodable>(of type: T.Type) -> RecordShape? {
        let decoder = ShapeProbe(context: Context(depth: 0, ancestors: [ObjectIdentifier(T.self)]))
        do {
            _ = try T(from: decoder)
        } catch {
            return nil
        }
        guard case let .object(shape) = decoder.log.value else { return nil }
        return shape
    }

    /// A value of `type` to hand back to the initializer being probed, and the shape it was
    /// decoded as.
    static func probe<T: Decodable>(_ type: T.Type, context: Context) throws -> (value: T, shape: any ShapeLog) {
        if let known = knownShape(T.self) {
            return (try KeyProbe.placeholder(T.self), FixedShape(known))
        }
        let id = ObjectIdentifier(T.self)
        guard context.depth < maxDepth, !context.ancestors.contains(id) else {
            return (try KeyProbe.placeholder(T.self), FixedShape(.unknown))
        }
        let decoder = ShapeProbe(context: context.entering(id))
        do {
            return (try T(from: decoder), decoder.log)
        } catch {
            // A raw-value enum refusing the placeholder raw value still said what it decodes.
            return (try KeyProbe.placeholder(T.self), FixedShape(decoder.log.valueAfterFailure))
        }
    }

    /// The Foundation types with a JSON form of their own in Keepsake's records.
    private static func knownShape<T>(_ type: T.Type) -> Value? {
        switch type {
        case is Date.Type: .date
        case is Data.Type: .data
        case is URL.Type: .url
        case is UUID.Type: .uuid
        case is Decimal.Type: .decimal
        default: nil
        }
    }

    // The first container asked for decides the shape; asking again for one of the same kind
    // logs into it.

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(shape: log.claim(KeyedShape.init), context: context))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        Unkeyed(shape: log.claim(UnkeyedShape.init), context: context)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        Single(shape: log.claim(SingleShape.init), context: context)
    }
}

// MARK: - What the probe saw

/// What a probe saw of one value, read once the probed initializer has returned.
protocol ShapeLog: AnyObject {
    var value: RecordShape.Value { get }
}

/// A value whose shape was known at once: a primitive, a known Foundation type, an unknown.
final class FixedShape: ShapeLog {
    let value: RecordShape.Value
    init(_ value: RecordShape.Value) { self.value = value }
}

/// Everything one decoder was asked: its first container.
final class DecoderShape: ShapeLog {
    private(set) var container: (any ShapeLog)?

    var value: RecordShape.Value { container?.value ?? .unknown }

    /// What can be told after the probed initializer threw: what a single-value container
    /// decoded (a raw-value enum that refused the placeholder raw value), nothing else.
    var valueAfterFailure: RecordShape.Value {
        guard let single = container as? SingleShape else { return .unknown }
        return single.value
    }

    /// The log of the first container, when it is of kind `Log`; otherwise a new log that
    /// nothing reads (a second container of another kind).
    func claim<Log: ShapeLog>(_ make: () -> Log) -> Log {
        if let existing = container as? Log { return existing }
        let log = make()
        if container == nil { container = log }
        return log
    }
}

/// An object (or a map) being decoded.
final class KeyedShape: ShapeLog {
    struct Entry {
        var required = false
        var nullable = false
        var logs: [any ShapeLog] = []
    }

    var entries: [String: Entry] = [:]
    /// The key `allKeys` offered as a dictionary's one entry.
    var offeredEntry: String?
    /// Whether `allKeys` was asked of a fixed key type: an enum with associated values, which
    /// stores one of its cases' keys.
    var askedWhichCase = false

    func note(_ key: String, required: Bool, _ log: (any ShapeLog)?) {
        var entry = entries[key] ?? Entry()
        entry.required = entry.required || required
        if let log { entry.logs.append(log) }
        entries[key] = entry
    }

    func noteNullable(_ key: String) {
        var entry = entries[key] ?? Entry()
        entry.nullable = true
        entries[key] = entry
    }

    private func type(of entry: Entry) -> RecordShape.Value {
        let type = entry.logs.lazy.map(\.value).first { $0 != .unknown } ?? .unknown
        guard entry.nullable, type != .unknown else { return type }
        if case .nullable = type { return type }
        return .nullable(type)
    }

    var value: RecordShape.Value {
        if askedWhichCase { return .unknown }
        if let offeredEntry, entries.keys.allSatisfy({ $0 == offeredEntry }) {
            return .map(entries[offeredEntry].map(type(of:)) ?? .unknown)
        }
        return .object(
            RecordShape(fields: entries.mapValues { RecordShape.Field(required: $0.required, type: type(of: $0)) }))
    }
}

/// An array being decoded.
final class UnkeyedShape: ShapeLog {
    var elements: [(log: any ShapeLog, nullable: Bool)] = []

    var value: RecordShape.Value {
        let types = elements.map { element -> RecordShape.Value in
            let type = element.log.value
            if !element.nullable || type == .unknown { return type }
            if case .nullable = type { return type }
            return .nullable(type)
        }
        guard let first = types.first, types.allSatisfy({ $0 == first }) else { return .array(.unknown) }
        return .array(first)
    }
}

/// A single value being decoded.
final class SingleShape: ShapeLog {
    var nullChecked = false
    var inner: (any ShapeLog)?

    func set(_ log: any ShapeLog) {
        if inner == nil { inner = log }
    }

    var value: RecordShape.Value {
        guard let type = inner?.value else { return .unknown }
        guard nullChecked, type != .unknown else { return type }
        if case .nullable = type { return type }
        return .nullable(type)
    }
}

// MARK: - Containers

extension ShapeProbe {
    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let shape: KeyedShape
        let context: Context
        var codingPath: [any CodingKey] { [] }

        /// A dictionary's key type takes any string: offer one entry (key `0`, which an
        /// `Int`-keyed dictionary accepts too). A fixed key type asked for its keys is an enum
        /// with associated values: offer its first case, so that it decodes, and record it as
        /// unknown.
        var allKeys: [Key] {
            if let any = Key(stringValue: "*") {
                let key = Key(intValue: 0) ?? any
                shape.offeredEntry = key.stringValue
                return [key]
            }
            shape.askedWhichCase = true
            return KeyProbe.zeroBitPattern(Key.self).map { [$0] } ?? []
        }

        func contains(_ key: Key) -> Bool {
            shape.note(key.stringValue, required: false, nil)
            return true
        }

        /// Never null, so that the value is decoded and its shape seen; the key may be null.
        func decodeNil(forKey key: Key) throws -> Bool {
            shape.noteNullable(key.stringValue)
            return false
        }

        private func plain<T>(_ key: Key, _ type: Value, required: Bool = true, _ placeholder: T) -> T {
            shape.note(key.stringValue, required: required, FixedShape(type))
            return placeholder
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { plain(key, .bool, false) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { plain(key, .string, "") }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { plain(key, .number, 0) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { plain(key, .number, 0) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { plain(key, .integer, 0) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { plain(key, .integer, 0) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { plain(key, .integer, 0) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { plain(key, .integer, 0) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { plain(key, .integer, 0) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { plain(key, .integer, 0) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { plain(key, .integer, 0) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { plain(key, .integer, 0) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { plain(key, .integer, 0) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { plain(key, .integer, 0) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let (value, log) = try ShapeProbe.probe(T.self, context: context)
            shape.note(key.stringValue, required: true, log)
            return value
        }

        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            plain(key, .bool, required: false, false)
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            plain(key, .string, required: false, "")
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            plain(key, .number, required: false, 0)
        }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
            plain(key, .number, required: false, 0)
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
            plain(key, .integer, required: false, 0)
        }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
            plain(key, .integer, required: false, 0)
        }
        /// An optional key: its shape is recorded; a value that cannot be made is absent.
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            guard let (value, log) = try? ShapeProbe.probe(T.self, context: context) else {
                shape.note(key.stringValue, required: false, FixedShape(.unknown))
                return nil
            }
            shape.note(key.stringValue, required: false, log)
            return value
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            let nested = KeyedShape()
            shape.note(key.stringValue, required: true, nested)
            return KeyedDecodingContainer(Keyed<NestedKey>(shape: nested, context: context.nested))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            let nested = UnkeyedShape()
            shape.note(key.stringValue, required: true, nested)
            return Unkeyed(shape: nested, context: context.nested)
        }

        func superDecoder() throws -> any Decoder {
            let decoder = ShapeProbe(context: context.nested)
            shape.note("super", required: true, decoder.log)
            return decoder
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            let decoder = ShapeProbe(context: context.nested)
            shape.note(key.stringValue, required: true, decoder.log)
            return decoder
        }
    }

    /// Not at its end until one element has been decoded.
    private struct Unkeyed: UnkeyedDecodingContainer {
        let shape: UnkeyedShape
        let context: Context
        var codingPath: [any CodingKey] { [] }
        var count: Int? { nil }
        var isAtEnd: Bool { currentIndex >= 1 }
        private(set) var currentIndex = 0
        /// Whether the next element was asked whether it is null.
        private var nullChecked = false

        init(shape: UnkeyedShape, context: Context) {
            self.shape = shape
            self.context = context
        }

        private mutating func append<T>(_ log: any ShapeLog, _ value: T) -> T {
            shape.elements.append((log, nullChecked))
            nullChecked = false
            currentIndex += 1
            return value
        }

        mutating func decodeNil() throws -> Bool {
            nullChecked = true
            return false
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { append(FixedShape(.bool), false) }
        mutating func decode(_ type: String.Type) throws -> String { append(FixedShape(.string), "") }
        mutating func decode(_ type: Double.Type) throws -> Double { append(FixedShape(.number), 0) }
        mutating func decode(_ type: Float.Type) throws -> Float { append(FixedShape(.number), 0) }
        mutating func decode(_ type: Int.Type) throws -> Int { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { append(FixedShape(.integer), 0) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (value, log) = try ShapeProbe.probe(T.self, context: context)
            return append(log, value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            let nested = KeyedShape()
            return append(nested, KeyedDecodingContainer(Keyed<NestedKey>(shape: nested, context: context.nested)))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let nested = UnkeyedShape()
            return append(nested, Unkeyed(shape: nested, context: context.nested))
        }

        mutating func superDecoder() throws -> any Decoder {
            let decoder = ShapeProbe(context: context.nested)
            return append(decoder.log, decoder)
        }
    }

    private struct Single: SingleValueDecodingContainer {
        let shape: SingleShape
        let context: Context
        var codingPath: [any CodingKey] { [] }

        /// Never null, so that the value is decoded and its shape seen; the value may be null.
        func decodeNil() -> Bool {
            shape.nullChecked = true
            return false
        }

        private func plain<T>(_ type: Value, _ placeholder: T) -> T {
            shape.set(FixedShape(type))
            return placeholder
        }

        func decode(_ type: Bool.Type) throws -> Bool { plain(.bool, false) }
        func decode(_ type: String.Type) throws -> String { plain(.string, "") }
        func decode(_ type: Double.Type) throws -> Double { plain(.number, 0) }
        func decode(_ type: Float.Type) throws -> Float { plain(.number, 0) }
        func decode(_ type: Int.Type) throws -> Int { plain(.integer, 0) }
        func decode(_ type: Int8.Type) throws -> Int8 { plain(.integer, 0) }
        func decode(_ type: Int16.Type) throws -> Int16 { plain(.integer, 0) }
        func decode(_ type: Int32.Type) throws -> Int32 { plain(.integer, 0) }
        func decode(_ type: Int64.Type) throws -> Int64 { plain(.integer, 0) }
        func decode(_ type: UInt.Type) throws -> UInt { plain(.integer, 0) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { plain(.integer, 0) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { plain(.integer, 0) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { plain(.integer, 0) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { plain(.integer, 0) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (value, log) = try ShapeProbe.probe(T.self, context: context)
            shape.set(log)
            return value
        }
    }
}
