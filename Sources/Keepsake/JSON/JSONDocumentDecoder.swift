import Foundation

/// Decodes `Decodable` types straight from a parsed ``JSONDocument`` — the tape of where each
/// value lies in the record's bytes — so that a record is parsed once (to detect its version)
/// and decoded once (into that version), with no tree built between the two: a number is read
/// from its digits, a string made from its bytes, only when the type asks for it.
///
/// Dates are read in the form the decoded version declares (``DateEncoding``: by default a
/// number of seconds since 2001-01-01, Foundation's default, or an ISO 8601 string), exactly.
/// `Data` is base64, `URL` a string.
struct JSONDocumentDecoder: Decoder {
    let node: JSONNode
    let codingPath: [any CodingKey]
    /// Records the keys read from this decoder's object (the record's top level only).
    let readKeys: ReadKeys?
    /// How the dates below this decoder are stored.
    let dates: DateEncoding
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ node: JSONNode, codingPath: [any CodingKey] = [], readKeys: ReadKeys? = nil, dates: DateEncoding) {
        self.node = node
        self.codingPath = codingPath
        self.readKeys = readKeys
        self.dates = dates
    }

    /// The top-level keys a decode read (asked for, or asked whether present), as exact strings.
    final class ReadKeys {
        var keys = Set<ExactString>()
    }

    static func decode<T: Decodable>(_ type: T.Type, from node: JSONNode, dates: DateEncoding = .deferredToDate)
        throws -> T
    {
        try decodeAny(type, from: node, path: [], dates: dates)
    }

    /// Decodes `type` from `node` and returns the top-level keys its `init(from:)` read, so a
    /// caller can tell whether the object held keys the type does not know.
    static func decodeTrackingKeys<T: Decodable>(
        _ type: T.Type, from node: JSONNode, dates: DateEncoding = .deferredToDate
    ) throws
        -> (T, Set<ExactString>)
    {
        let readKeys = ReadKeys()
        let decoded = try T(from: JSONDocumentDecoder(node, readKeys: readKeys, dates: dates))
        return (decoded, readKeys.keys)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard node.kind == .object else { throw mismatch([String: Any].self, node, codingPath) }
        return KeyedDecodingContainer(
            KeyedContainer<Key>(object: node, codingPath: codingPath, readKeys: readKeys, dates: dates))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard node.kind == .array else { throw mismatch([Any].self, node, codingPath) }
        return UnkeyedContainer(array: node, codingPath: codingPath, dates: dates)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleContainer(value: node, codingPath: codingPath, dates: dates)
    }

    // MARK: Leaves

    static func decodeAny<T: Decodable>(
        _ type: T.Type, from value: JSONNode, path: [any CodingKey], dates: DateEncoding
    ) throws -> T {
        if T.self == Date.self { return try decodeDate(value, path, dates) as! T }
        if T.self == Data.self {
            guard let text = value.string, let data = Data(base64Encoded: text) else {
                throw mismatch(Data.self, value, path)
            }
            return data as! T
        }
        if T.self == Decimal.self {
            // Written as a JSON number by JSONEncoder; read its literal text exactly.
            guard value.kind == .number, let decimal = Decimal(string: value.numberText, locale: nil),
                !decimal.isNaN
            else {
                throw mismatch(Decimal.self, value, path)
            }
            return decimal as! T
        }
        if T.self == URL.self {
            guard let text = value.string else { throw mismatch(URL.self, value, path) }
            guard let url = URL(string: text) else {
                let shown = text.isEmpty ? "an empty string" : "the string \"\(text.prefix(80))\""
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path, debugDescription: "\(shown) is not a valid URL."))
            }
            return url as! T
        }
        return try T(from: JSONDocumentDecoder(value, codingPath: path, dates: dates))
    }

    /// A date in the declared form, read exactly. A value that does not fit the form, or a date
    /// Keepsake could not write back identically (not finite, outside the years 0001–9999, an
    /// impossible calendar date, finer than a `Date` holds) is a `dataCorrupted` error at the
    /// field's coding path.
    private static func decodeDate(_ value: JSONNode, _ path: [any CodingKey], _ dates: DateEncoding) throws -> Date {
        // The leaf as `DateEncoding` reads it; anything else is a mismatch, named by its kind.
        let leaf: JSONValue
        switch value.kind {
        case .number: leaf = .number(value.numberText)
        case .string: leaf = .string(value.string ?? "")
        default: leaf = .null
        }
        do throws(ISO8601.Failure) {
            if let date = try dates.date(from: leaf) { return date }
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "Invalid date: \(error.reason)."))
        }
        throw mismatch(Date.self, value, path)
    }
}

// The leaves take their coding path as an autoclosure: it is an array built only for an error,
// not once per field decoded.
private func mismatch(_ type: Any.Type, _ value: JSONNode, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError
{
    .typeMismatch(type, .init(codingPath: path(), debugDescription: "Expected \(type) but found \(value.kindName)."))
}

private func decodeBool(_ value: JSONNode, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
    switch value.kind {
    case .true: return true
    case .false: return false
    default: throw mismatch(Bool.self, value, path())
    }
}

private func decodeString(_ value: JSONNode, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
    guard let text = value.string else { throw mismatch(String.self, value, path()) }
    return text
}

private func decodeFloat<T: BinaryFloatingPoint & LosslessStringConvertible>(
    _ type: T.Type, _ value: JSONNode, _ path: @autoclosure () -> [any CodingKey]
) throws -> T {
    guard value.kind == .number, let number = T(value.numberText) else { throw mismatch(T.self, value, path()) }
    return number
}

private func decodeInteger<T: FixedWidthInteger>(
    _ type: T.Type, _ value: JSONNode, _ path: @autoclosure () -> [any CodingKey]
) throws
    -> T
{
    guard value.kind == .number else { throw mismatch(T.self, value, path()) }
    if let number = value.plainInteger(T.self) { return number }
    let text = value.numberText
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
    let object: JSONNode
    /// Member name → value position on the tape, for an object of more than
    /// `JSONObject.indexThreshold` members (built once per container, so that decoding a large
    /// object — a dictionary — stays linear); a smaller one is scanned.
    let index: [ExactString: Int]?
    let codingPath: [any CodingKey]
    let readKeys: JSONDocumentDecoder.ReadKeys?
    let dates: DateEncoding

    init(object: JSONNode, codingPath: [any CodingKey], readKeys: JSONDocumentDecoder.ReadKeys?, dates: DateEncoding) {
        self.object = object
        self.codingPath = codingPath
        self.readKeys = readKeys
        self.dates = dates
        guard object.count > JSONObject.indexThreshold else {
            index = nil
            return
        }
        var index = [ExactString: Int](minimumCapacity: 2 * object.count)
        object.forEachMember { name, value in index[ExactString(object.document.string(at: name))] = value.index }
        self.index = index
    }

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    private func member(_ name: String) -> JSONNode? {
        guard let index else { return object[name] }
        return index[ExactString(name)].map { JSONNode(document: object.document, index: $0) }
    }

    func contains(_ key: Key) -> Bool {
        readKeys?.keys.insert(ExactString(key.stringValue))
        return member(key.stringValue) != nil
    }

    private func value(_ key: Key) throws -> JSONNode {
        readKeys?.keys.insert(ExactString(key.stringValue))
        guard let value = member(key.stringValue) else {
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: codingPath, debugDescription: "No value for key '\(key.stringValue)'."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).kind == .null }

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
        try JSONDocumentDecoder.decodeAny(type, from: value(key), path: codingPath + [key], dates: dates)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try JSONDocumentDecoder(value(key), codingPath: codingPath + [key], dates: dates).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONDocumentDecoder(value(key), codingPath: codingPath + [key], dates: dates).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        readKeys?.keys.insert(ExactString("super"))
        return JSONDocumentDecoder(member("super") ?? JSONDocument.null.root, codingPath: codingPath, dates: dates)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        readKeys?.keys.insert(ExactString(key.stringValue))
        return JSONDocumentDecoder(
            member(key.stringValue) ?? JSONDocument.null.root, codingPath: codingPath + [key], dates: dates)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let document: JSONDocument
    let elements: Int
    let codingPath: [any CodingKey]
    let dates: DateEncoding
    var currentIndex = 0
    /// The tape position of the element at ``currentIndex``.
    private var position: Int

    init(array: JSONNode, codingPath: [any CodingKey], dates: DateEncoding) {
        document = array.document
        elements = array.count
        position = array.index + 1
        self.codingPath = codingPath
        self.dates = dates
    }

    var count: Int? { elements }
    var isAtEnd: Bool { currentIndex >= elements }

    private var current: JSONNode { JSONNode(document: document, index: position) }

    private mutating func advance() {
        position = Int(document.tokens[position].next)
        currentIndex += 1
    }

    private mutating func next<T>(_ type: T.Type) throws -> (JSONNode, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "Unkeyed container is at end.")
            )
        }
        let element = (current, codingPath + [IndexKey(currentIndex)])
        advance()
        return element
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, current.kind == .null else { return false }
        advance()
        return true
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
        return try JSONDocumentDecoder.decodeAny(type, from: v, path: p, dates: dates)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        let (v, p) = try next([String: Any].self)
        return try JSONDocumentDecoder(v, codingPath: p, dates: dates).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, p) = try next([Any].self)
        return try JSONDocumentDecoder(v, codingPath: p, dates: dates).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (v, p) = try next(Any.self)
        return JSONDocumentDecoder(v, codingPath: p, dates: dates)
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let value: JSONNode
    let codingPath: [any CodingKey]
    let dates: DateEncoding

    func decodeNil() -> Bool { value.kind == .null }

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
        try JSONDocumentDecoder.decodeAny(type, from: value, path: codingPath, dates: dates)
    }
}
