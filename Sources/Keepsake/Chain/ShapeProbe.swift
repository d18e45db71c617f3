import Foundation

/// Why the shape of a type could not be read off its `Decodable` conformance.
struct ProbeProblem: Error, Sendable, Equatable {
    /// The top-level field being decoded when the probe failed, if it had got that far.
    let field: String?
    let reason: String
}

/// The one probe of a `Decodable` type: a decoder that feeds it placeholder values and records
/// the JSON shape it reads — each key it asks for (`decode` required, `decodeIfPresent` or
/// `contains` optional) and what it decodes there, recursively: its ``RecordShape``, from
/// which a version's ``StoredKeys`` are derived (its top-level fields, required and optional).
///
/// Every nested value is probed the same way, with a decoder of its own: a single-value
/// container decoding a `String` is a string (so is a `String`-backed enum), an unkeyed
/// container is an array — it says it is not at its end until one element has been decoded, so
/// that `Array.init(from:)` decodes exactly one, whose shape is the element's — and a keyed
/// container is an object. A keyed container whose key type can be made from any string (a
/// dictionary's) is offered one key by `allKeys`, so that `Dictionary.init(from:)` decodes one
/// value, and is a map. `Date`, `Data`, `URL`, `UUID` and `Decimal` are known by their type.
///
/// An enum's cases are recorded when it lists them (`CaseIterable`, or ``DeclaredCases``): each
/// case is encoded to learn its raw value or key, and an enum with associated values is decoded
/// once per case — its keyed container offering that case's key — to read the payload's shape.
/// An enum that does not list them is recorded with its cases not declared: a raw-value enum
/// (`RawRepresentable`, an enum by its `Mirror`) as its raw type, an enum with associated values
/// (its decoder asks which of its cases' keys are present, and no probe can list them all) as
/// ``RecordShape/Value/taggedEnum(cases:)`` with `nil`.
///
/// What cannot be told is ``RecordShape/Value/unknown``: a type whose `init(from:)` throws on
/// placeholders, a recursive type where it recurs (one level: a type inside itself is recorded
/// once), anything nested deeper than ``maxDepth``.
///
/// Where a value is needed without its shape — a recursive type where it recurs, a type whose
/// `init(from:)` refused the probed values — the same decoder *builds* one
/// (``placeholder(_:context:)``): empty strings, zeros, empty collections, `nil` for optionals,
/// fixed dates, URLs and UUIDs, the first case of a `CaseIterable` enum, and — for a plain value
/// type without references (`RawRepresentable` enums that are not `CaseIterable`, enums with
/// associated values of plain types) — its all-zero bit pattern, which is its first case.
/// Values handed to a type's initializer only flow into it and are thrown away, except a
/// version's own sample, which the round-trip check encodes (``VersionProbe``); they are never
/// stored.
final class ShapeProbe: Decoder {
    /// How deep values nest before the probe stops: it records ``RecordShape/Value/unknown``,
    /// or, building a placeholder, gives up on it.
    static let maxDepth = 32

    typealias Value = RecordShape.Value

    /// How deep the value being probed is, which types it is nested in, and whether the probe
    /// reads its shape or only builds a placeholder of it.
    struct Context {
        var depth: Int
        var ancestors: [ObjectIdentifier]
        /// Whether the probe builds the smallest value the type accepts (empty collections,
        /// absent optionals, nulls where asked), reading no shape.
        var building = false
        /// The key this decoder's keyed container offers when asked for its keys: the case of an
        /// enum with associated values being probed. Not handed down to nested values.
        var offeredCase: String?

        /// A value one level down, inside a container of the same type.
        var nested: Context { Context(depth: depth + 1, ancestors: ancestors, building: building) }

        /// A value of type `id`, one level down.
        func entering(_ id: ObjectIdentifier) -> Context {
            Context(depth: depth + 1, ancestors: ancestors + [id], building: building)
        }
    }

    let context: Context
    let log = DecoderShape()
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(context: Context) { self.context = context }

    /// What probing a type found: a value of it built from the probe's placeholders, and the
    /// shape of its records.
    struct Probed<T> {
        let sample: T
        let shape: RecordShape
    }

    /// Probes `type`, which must decode a JSON object: its shape and a sample value.
    ///
    /// - Returns: The failure names the top-level field being decoded when `type`'s
    ///   `init(from:)` threw on the probe's placeholders (or no placeholder of a field's type
    ///   could be made), or says that `type` does not decode a JSON object.
    static func record<T: Decodable>(_ type: T.Type) -> Result<Probed<T>, ProbeProblem> {
        let decoder = ShapeProbe(context: Context(depth: 0, ancestors: [ObjectIdentifier(T.self)]))
        let sample: T
        do {
            sample = try T(from: decoder)
        } catch {
            let detail: String
            if let failure = error as? PlaceholderFailure {
                detail = "no placeholder value of \(failure.typeName) could be made to probe it"
            } else {
                detail = "its init(from:) threw on placeholder values (\(error))"
            }
            return .failure(ProbeProblem(field: (decoder.log.container as? KeyedShape)?.current, reason: detail))
        }
        guard case let .object(shape) = decoder.log.value else {
            return .failure(ProbeProblem(field: nil, reason: "it does not decode a JSON object"))
        }
        return .success(Probed(sample: sample, shape: shape))
    }

    /// The shape of the records of `type`, which must decode a JSON object; `nil` when its
    /// `init(from:)` throws on the probe's placeholders or it decodes anything else.
    static func shape<T: Decodable>(of type: T.Type) -> RecordShape? {
        try? record(T.self).get().shape
    }

    /// A value of `type` to hand back to the initializer being probed, and the shape it was
    /// decoded as.
    static func probe<T: Decodable>(_ type: T.Type, context: Context) throws -> (value: T, shape: any ShapeLog) {
        if let known = knownShape(T.self) {
            return (try placeholder(T.self, context: context), FixedShape(known))
        }
        let id = ObjectIdentifier(T.self)
        guard context.depth < maxDepth, !context.ancestors.contains(id) else {
            return (try placeholder(T.self, context: context), FixedShape(.unknown))
        }
        if let cases = caseValues(T.self) {
            let shape = enumShape(T.self, cases: cases, context: context)
            let value = try (cases.first as? T) ?? placeholder(T.self, context: context)
            return (value, FixedShape(shape))
        }
        let decoder = ShapeProbe(context: context.entering(id))
        do {
            let value = try T(from: decoder)
            if let undeclared = undeclaredRawEnum(value, decoder.log.value) { return (value, FixedShape(undeclared)) }
            return (value, decoder.log)
        } catch {
            // A raw-value enum refusing the placeholder raw value still said what it decodes.
            let value = try placeholder(T.self, context: context)
            let shape = decoder.log.valueAfterFailure
            return (value, FixedShape(undeclaredRawEnum(value, shape) ?? shape))
        }
    }

    /// One value of each case of an enum that lists them (``DeclaredCases``, or `CaseIterable`
    /// and `Encodable`); `nil` for any other type.
    private static func caseValues<T>(_ type: T.Type) -> [any Encodable]? {
        if let declared = T.self as? any DeclaredCases.Type { return declaredCases(of: declared) }
        if let iterable = T.self as? any (CaseIterable & Encodable).Type { return allCases(of: iterable) }
        return nil
    }

    private static func declaredCases<C: DeclaredCases>(of type: C.Type) -> [any Encodable] {
        C.declaredCases.map { $0 }
    }

    private static func allCases<C: CaseIterable & Encodable>(of type: C.Type) -> [any Encodable] {
        C.allCases.map { $0 }
    }

    /// The cases of the enum `T`, from one value of each: a raw-value enum's raw values, or each
    /// case's key and payload shape. A value that encodes as neither a raw value nor an object of
    /// one key leaves the cases not declared.
    private static func enumShape<T: Decodable>(_ type: T.Type, cases: [any Encodable], context: Context) -> Value {
        var rawType: Value?
        var rawValues: [String] = []
        var tagged: [String: Value] = [:]
        for sample in cases {
            let json: JSONValue
            do {
                json = try JSONParser.parse(CanonicalJSON.encode(sample))
            } catch {
                return .taggedEnum(cases: nil)
            }
            switch json {
            case let .string(text):
                rawType = .string
                rawValues.append(text)
            case let .number(text):
                rawType = text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? .number : .integer
                rawValues.append(text)
            case let .object(object) where object.members.count == 1:
                let key = object.members[0].key
                tagged[key] = caseShape(T.self, key: key, context: context)
            default:
                return .taggedEnum(cases: nil)
            }
        }
        if let rawType, tagged.isEmpty { return .rawEnum(rawType, values: rawValues.sorted()) }
        if rawType == nil { return .taggedEnum(cases: tagged) }
        return .taggedEnum(cases: nil)
    }

    /// The payload shape of the case stored under `key`: `T` decoded with its keyed container
    /// offering that key. ``RecordShape/Value/unknown`` when `T` refuses the placeholders.
    private static func caseShape<T: Decodable>(_ type: T.Type, key: String, context: Context) -> Value {
        var inner = context.entering(ObjectIdentifier(T.self))
        inner.offeredCase = key
        let decoder = ShapeProbe(context: inner)
        do {
            _ = try T(from: decoder)
        } catch {
            return .unknown
        }
        guard let keyed = decoder.log.container as? KeyedShape, case let .object(shape) = keyed.value,
            let field = shape.fields[key]
        else { return .unknown }
        return field.type
    }

    /// A raw-value enum that does not list its cases, decoded as `shape`: recorded with its cases
    /// not declared. `nil` for anything else (a `RawRepresentable` struct has no cases).
    private static func undeclaredRawEnum<T>(_ value: T, _ shape: Value) -> Value? {
        guard T.self is any RawRepresentable.Type, Mirror(reflecting: value).displayStyle == .enum else { return nil }
        switch shape {
        case .string, .integer, .number: return .rawEnum(shape, values: nil)
        default: return nil
        }
    }

    /// No placeholder of a type could be made.
    struct PlaceholderFailure: Error {
        let typeName: String
    }

    /// A value of `T` its own decoder accepts, for probing only: a known Foundation value, the
    /// smallest value the probe can build, the first case of a `CaseIterable` enum, or a plain
    /// value type's all-zero bit pattern.
    ///
    /// - Throws: ``PlaceholderFailure`` when none of them can be made.
    static func placeholder<T: Decodable>(
        _ type: T.Type, context: Context = Context(depth: 0, ancestors: [], building: true)
    ) throws -> T {
        if let value = knownPlaceholder(type) { return value }
        do {
            // Building starts its own count of levels: it never reads a shape, so it only
            // needs a bound on a type that requires itself.
            let start = context.building ? context : Context(depth: 0, ancestors: [], building: true)
            guard start.depth < maxDepth else { throw PlaceholderFailure(typeName: String(describing: T.self)) }
            return try T(from: ShapeProbe(context: start.nested))
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
    /// The key whose required value was being decoded last: where a failed probe stopped.
    var current: String?

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
        if askedWhichCase { return .taggedEnum(cases: nil) }
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
    /// Reads an object's keys, or — building — offers none and reads every key as absent or
    /// null where asked, so that only what a type requires is built.
    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let shape: KeyedShape
        let context: Context
        var codingPath: [any CodingKey] { [] }

        /// A dictionary's key type takes any string: offer one entry (key `0`, which an
        /// `Int`-keyed dictionary accepts too). A fixed key type asked for its keys is an enum
        /// with associated values: offer its first case, so that it decodes, and record it as
        /// unknown. Building, a dictionary is offered nothing: it is empty.
        var allKeys: [Key] {
            if let offered = context.offeredCase, let key = Key(stringValue: offered) { return [key] }
            if !context.building, let any = Key(stringValue: "*") {
                let key = Key(intValue: 0) ?? any
                shape.offeredEntry = key.stringValue
                return [key]
            }
            shape.askedWhichCase = true
            return ShapeProbe.zeroBitPattern(Key.self).map { [$0] } ?? []
        }

        func contains(_ key: Key) -> Bool {
            shape.note(key.stringValue, required: false, nil)
            return !context.building
        }

        /// Never null, so that the value is decoded and its shape seen; the key may be null.
        /// Building, always null.
        func decodeNil(forKey key: Key) throws -> Bool {
            shape.noteNullable(key.stringValue)
            return context.building
        }

        private func plain<T>(_ key: Key, _ type: Value, _ placeholder: T) -> T {
            shape.current = key.stringValue
            shape.note(key.stringValue, required: true, FixedShape(type))
            return placeholder
        }

        /// An optional key holding a plain value: absent when building.
        private func present<T>(_ key: Key, _ type: Value, _ placeholder: T) -> T? {
            shape.note(key.stringValue, required: false, FixedShape(type))
            return context.building ? nil : placeholder
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
            shape.current = key.stringValue
            if context.building { return try ShapeProbe.placeholder(T.self, context: context) }
            let (value, log) = try ShapeProbe.probe(T.self, context: context)
            shape.note(key.stringValue, required: true, log)
            return value
        }

        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { present(key, .bool, false) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { present(key, .string, "") }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { present(key, .number, 0) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { present(key, .number, 0) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { present(key, .integer, 0) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { present(key, .integer, 0) }
        /// An optional key: its shape is recorded; a value that cannot be made is absent, and
        /// building, every value is.
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            guard !context.building, let (value, log) = try? ShapeProbe.probe(T.self, context: context) else {
                shape.note(key.stringValue, required: false, FixedShape(.unknown))
                return nil
            }
            shape.note(key.stringValue, required: false, log)
            return value
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            shape.current = key.stringValue
            let nested = KeyedShape()
            shape.note(key.stringValue, required: true, nested)
            return KeyedDecodingContainer(Keyed<NestedKey>(shape: nested, context: context.nested))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            shape.current = key.stringValue
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
            shape.current = key.stringValue
            let decoder = ShapeProbe(context: context.nested)
            shape.note(key.stringValue, required: true, decoder.log)
            return decoder
        }
    }

    /// Not at its end until one element has been decoded; building, empty.
    private struct Unkeyed: UnkeyedDecodingContainer {
        let shape: UnkeyedShape
        let context: Context
        var codingPath: [any CodingKey] { [] }
        var count: Int? { context.building ? 0 : nil }
        var isAtEnd: Bool { context.building || currentIndex >= 1 }
        private(set) var currentIndex = 0
        /// Whether the next element was asked whether it is null.
        private var nullChecked = false

        init(shape: UnkeyedShape, context: Context) {
            self.shape = shape
            self.context = context
        }

        /// A built placeholder array has no element to decode.
        private func checkNotBuilding() throws {
            guard context.building else { return }
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: [], debugDescription: "placeholder array is empty"))
        }

        private mutating func append<T>(_ log: any ShapeLog, _ value: T) throws -> T {
            try checkNotBuilding()
            shape.elements.append((log, nullChecked))
            nullChecked = false
            currentIndex += 1
            return value
        }

        mutating func decodeNil() throws -> Bool {
            nullChecked = true
            return context.building
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try append(FixedShape(.bool), false) }
        mutating func decode(_ type: String.Type) throws -> String { try append(FixedShape(.string), "") }
        mutating func decode(_ type: Double.Type) throws -> Double { try append(FixedShape(.number), 0) }
        mutating func decode(_ type: Float.Type) throws -> Float { try append(FixedShape(.number), 0) }
        mutating func decode(_ type: Int.Type) throws -> Int { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try append(FixedShape(.integer), 0) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try append(FixedShape(.integer), 0) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try checkNotBuilding()
            let (value, log) = try ShapeProbe.probe(T.self, context: context)
            return try append(log, value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            let nested = KeyedShape()
            return try append(
                nested, KeyedDecodingContainer(Keyed<NestedKey>(shape: nested, context: context.nested)))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let nested = UnkeyedShape()
            return try append(nested, Unkeyed(shape: nested, context: context.nested))
        }

        mutating func superDecoder() throws -> any Decoder {
            let decoder = ShapeProbe(context: context.nested)
            return try append(decoder.log, decoder)
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
            if context.building { return try ShapeProbe.placeholder(T.self, context: context) }
            let (value, log) = try ShapeProbe.probe(T.self, context: context)
            shape.set(log)
            return value
        }
    }
}
