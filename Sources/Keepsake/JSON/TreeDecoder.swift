import Foundation

/// Decodes `Decodable` types straight from a tree — a stored record's ``JSONTape`` (parsed once
/// to detect its version and decoded once into it), a parsed ``JSONValue``, or the encoder's own
/// `CanonicalNode` (what a write-back's proof reads the envelope it wrote from, instead of
/// parsing its bytes again), each a ``TreeNode``.
///
/// Dates are read in the form the decoded version declares (``DateEncoding``: by default a
/// number of seconds since 2001-01-01, Foundation's default, or an ISO 8601 string), exactly.
/// `Data` is base64, `URL` a string.
struct TreeDecoder: Decoder {
    let value: TreeNode
    let codingPath: [any CodingKey]
    /// Records the keys read from this decoder's object (the record's top level only).
    let readKeys: ReadKeys?
    /// How the dates below this decoder are stored.
    let dates: DateEncoding
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ value: TreeNode, codingPath: [any CodingKey] = [], readKeys: ReadKeys? = nil, dates: DateEncoding) {
        self.value = value
        self.codingPath = codingPath
        self.readKeys = readKeys
        self.dates = dates
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: TreeNode, dates: DateEncoding = .deferredToDate)
        throws -> T
    {
        try decodeAny(type, from: value, path: [], dates: dates)
    }

    /// Decodes `type` from `value` and returns the top-level keys its `init(from:)` read, so a
    /// caller can tell whether the object held keys the type does not know.
    static func decodeTrackingKeys<T: Decodable>(
        _ type: T.Type, from value: TreeNode, dates: DateEncoding = .deferredToDate
    ) throws
        -> (T, Set<ExactString>)
    {
        let readKeys = ReadKeys()
        let decoded = try T(from: TreeDecoder(value, readKeys: readKeys, dates: dates))
        return (decoded, readKeys.keys)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let object = value.asObject else {
            throw mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(
            KeyedContainer<Key>(object: object, codingPath: codingPath, readKeys: readKeys, dates: dates))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let elements = value.asArray else { throw mismatch([Any].self, value, codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath, dates: dates)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleContainer(value: value, codingPath: codingPath, dates: dates)
    }

    // MARK: Leaves

    static func decodeAny<T: Decodable>(
        _ type: T.Type, from value: TreeNode, path: [any CodingKey], dates: DateEncoding
    ) throws -> T {
        if T.self == Date.self { return try decodeDate(value, path, dates) as! T }
        if T.self == Data.self {
            guard let text = value.asString, let data = Data(base64Encoded: text) else {
                throw mismatch(Data.self, value, path)
            }
            return data as! T
        }
        if T.self == Decimal.self {
            // Written as a JSON number by JSONEncoder; read its literal text exactly.
            guard let text = value.asNumber, let decimal = Decimal(string: text, locale: nil),
                !decimal.isNaN
            else {
                throw mismatch(Decimal.self, value, path)
            }
            return decimal as! T
        }
        if T.self == URL.self {
            guard let text = value.asString else { throw mismatch(URL.self, value, path) }
            guard let url = URL(string: text) else {
                let shown = text.isEmpty ? "an empty string" : "the string \"\(text.prefix(80))\""
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path, debugDescription: "\(shown) is not a valid URL."))
            }
            return url as! T
        }
        return try T(from: TreeDecoder(value, codingPath: path, dates: dates))
    }

    /// A date in the declared form, read exactly. A value that does not fit the form, or a date
    /// Keepsake could not write back identically (not finite, outside the years 0001–9999, an
    /// impossible calendar date, finer than a `Date` holds) is a `dataCorrupted` error at the
    /// field's coding path.
    private static func decodeDate(_ value: TreeNode, _ path: [any CodingKey], _ dates: DateEncoding) throws -> Date {
        do throws(ISO8601.Failure) {
            if let date = try dates.date(from: value.leaf) { return date }
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "Invalid date: \(error.reason)."))
        }
        throw mismatch(Date.self, value, path)
    }
}

/// The top-level keys a decode read (asked for, or asked whether present), as exact strings.
final class ReadKeys {
    var keys = Set<ExactString>()
}

extension TreeDecoder {
    /// `type` decoded from a parsed value.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, dates: DateEncoding = .deferredToDate)
        throws -> T
    {
        try decode(type, from: .parsed(value), dates: dates)
    }

    /// `type` decoded from a parsed value, with the top-level keys its `init(from:)` read.
    static func decodeTrackingKeys<T: Decodable>(
        _ type: T.Type, from value: JSONValue, dates: DateEncoding = .deferredToDate
    ) throws -> (T, Set<ExactString>) {
        try decodeTrackingKeys(type, from: .parsed(value), dates: dates)
    }
}

/// The decoder of parsed records.
typealias JSONValueDecoder = TreeDecoder

// The leaves take their coding path as an autoclosure: it is an array built only for an error,
// not once per field decoded.
private func mismatch(_ type: Any.Type, _ value: TreeNode, _ path: @autoclosure () -> [any CodingKey])
    -> DecodingError
{
    .typeMismatch(type, .init(codingPath: path(), debugDescription: "Expected \(type) but found \(value.kindName)."))
}

private func decodeBool(_ value: TreeNode, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
    guard let flag = value.asBool else { throw mismatch(Bool.self, value, path()) }
    return flag
}

private func decodeString(_ value: TreeNode, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
    guard let text = value.asString else { throw mismatch(String.self, value, path()) }
    return text
}

private func decodeFloat<T: BinaryFloatingPoint & LosslessStringConvertible>(
    _ type: T.Type, _ value: TreeNode, _ path: @autoclosure () -> [any CodingKey]
) throws -> T {
    guard let text = value.asNumber, let number = T(text) else { throw mismatch(T.self, value, path()) }
    return number
}

private func decodeInteger<T: FixedWidthInteger>(
    _ type: T.Type, _ value: TreeNode, _ path: @autoclosure () -> [any CodingKey]
) throws
    -> T
{
    guard let text = value.asNumber else { throw mismatch(T.self, value, path()) }
    if let number = T(text) { return number }
    // 1e3 or 2.0: accept when the value is integral and fits.
    if let double = Double(text), double.rounded() == double, let number = T(exactly: double) { return number }
    throw DecodingError.dataCorrupted(
        .init(
            codingPath: path(), debugDescription: "Number does not fit in \(T.self)."))
}

private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: TreeObject
    let codingPath: [any CodingKey]
    let readKeys: ReadKeys?
    let dates: DateEncoding

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool {
        readKeys?.keys.insert(ExactString(key.stringValue))
        return object[key.stringValue] != nil
    }

    private func value(_ key: Key) throws -> TreeNode {
        readKeys?.keys.insert(ExactString(key.stringValue))
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: codingPath, debugDescription: "No value for key '\(key.stringValue)'."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        try value(key).isNull
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodeBool(value(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try decodeString(value(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try decodeFloat(type, value(key), codingPath + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try decodeFloat(type, value(key), codingPath + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try decodeInteger(type, value(key), codingPath + [key])
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try decodeInteger(type, value(key), codingPath + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try TreeDecoder.decodeAny(type, from: value(key), path: codingPath + [key], dates: dates)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try TreeDecoder(value(key), codingPath: codingPath + [key], dates: dates).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try TreeDecoder(value(key), codingPath: codingPath + [key], dates: dates).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        readKeys?.keys.insert(ExactString("super"))
        return TreeDecoder(object["super"] ?? .null, codingPath: codingPath, dates: dates)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        readKeys?.keys.insert(ExactString(key.stringValue))
        return TreeDecoder(object[key.stringValue] ?? .null, codingPath: codingPath + [key], dates: dates)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: TreeElements
    let codingPath: [any CodingKey]
    let dates: DateEncoding
    var currentIndex = 0

    init(elements: TreeElements, codingPath: [any CodingKey], dates: DateEncoding) {
        self.elements = elements
        self.codingPath = codingPath
        self.dates = dates
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next<T>(_ type: T.Type) throws -> (TreeNode, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "Unkeyed container is at end.")
            )
        }
        defer { currentIndex += 1 }
        return (elements[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if elements[currentIndex].isNull {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let (v, p) = try next(type)
        return try decodeBool(v, p)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let (v, p) = try next(type)
        return try decodeString(v, p)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let (v, p) = try next(type)
        return try decodeFloat(type, v, p)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let (v, p) = try next(type)
        return try decodeFloat(type, v, p)
    }
    mutating func decode(_ type: Int.Type) throws -> Int {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: Int8.Type) throws -> Int8 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: Int16.Type) throws -> Int16 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: Int32.Type) throws -> Int32 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: UInt.Type) throws -> UInt {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 {
        let (v, p) = try next(type)
        return try decodeInteger(type, v, p)
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, p) = try next(type)
        return try TreeDecoder.decodeAny(type, from: v, path: p, dates: dates)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        let (v, p) = try next([String: Any].self)
        return try TreeDecoder(v, codingPath: p, dates: dates).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, p) = try next([Any].self)
        return try TreeDecoder(v, codingPath: p, dates: dates).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (v, p) = try next(Any.self)
        return TreeDecoder(v, codingPath: p, dates: dates)
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let value: TreeNode
    let codingPath: [any CodingKey]
    let dates: DateEncoding

    func decodeNil() -> Bool { value.isNull }

    func decode(_ type: Bool.Type) throws -> Bool { try decodeBool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try decodeString(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try decodeFloat(type, value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try decodeFloat(type, value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type, value, codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try TreeDecoder.decodeAny(type, from: value, path: codingPath, dates: dates)
    }
}
