import Foundation

// Keepsake's own `Encoder` for canonical JSON: the bytes Foundation's `JSONEncoder` writes with
// `.sortedKeys`, `.withoutEscapingSlashes`, base64 data and dates in the version's form (what
// `CanonicalJSON.foundationEncode` configures), without its per-value boxing and generic
// metadata lookups. `JSONTests` compares the two byte for byte over the sample models and
// random values. A type this encoder does not know how to write the way `JSONEncoder` does
// makes it give up (`Unsupported`, also remembered in case a conformance swallows the error),
// and `CanonicalJSON.encode` then uses `JSONEncoder` for the whole value.

/// A value under construction. Containers are references, so that a container handed out
/// earlier (a nested container, a second request for the same container) keeps writing into
/// the value that is serialised.
enum CanonicalNode {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case object(CanonicalObject)
    case array(CanonicalArray)
    /// A sub-encoder whose value is read when the tree is written (`superEncoder`).
    case encoder(CanonicalEncoder)
}

// The encoder's containers are used by one encode on one thread, never two accesses at once, so
// their stored properties skip the runtime's dynamic exclusivity checks: about 2k instructions
// of a write-back (`swift_beginAccess`, about 40 calls a record under callgrind).
final class CanonicalObject {
    @exclusivity(unchecked) var members: [CanonicalMember] = []
    /// Built once the object grows past a few members, so that setting a key stays O(1).
    @exclusivity(unchecked) private var index: [String: Int]?

    init() { members.reserveCapacity(4) }

    /// Sets `key` (compared as `JSONEncoder`'s dictionary compares it: by `String` equality,
    /// the last write winning).
    func set(_ key: String, _ value: CanonicalNode) {
        if let slot = find(key) {
            members[slot].value = value
            return
        }
        members.append(CanonicalMember(key: key, value: value))
        inWrittenOrder = false
        if index != nil {
            index?[key] = members.count - 1
        } else if members.count > 16 {
            var built: [String: Int] = [:]
            built.reserveCapacity(members.count * 2)
            for (slot, member) in members.enumerated() { built[member.key] = slot }
            index = built
        }
    }

    func find(_ key: String) -> Int? {
        if let index { return index[key] }
        return members.firstIndex { $0.key == key }
    }

    /// Whether ``members`` are known to be in written order (checked, or sorted, by
    /// ``writtenMembers`` since the last member was added).
    @exclusivity(unchecked) private var inWrittenOrder = false

    /// Records that the members were set in written order, so that nothing checks it again: for
    /// an object whose members are set in an order known to be sorted (an envelope's, by
    /// `EnvelopeMember.forEachWritten`). Comparing two short names by their bytes costs about 370
    /// instructions.
    func setInWrittenOrder() {
        assert(zip(members, members.dropFirst()).allSatisfy { $0.key.precedesExactly($1.key) })
        inWrittenOrder = true
    }

    /// The members in the order they are written: sorted by their names' UTF-8 bytes. Found once
    /// (and the members sorted in place when they were not) however often the tree is written
    /// or read back: a write-back writes it, then reads it back.
    var writtenMembers: [CanonicalMember] {
        if !inWrittenOrder {
            if members.count > 1
                && !zip(members, members.dropFirst()).allSatisfy({ $0.key.precedesExactly($1.key) })
            {
                members.sort { $0.key.precedesExactly($1.key) }
                index = nil  // positions moved; `find` scans until a later `set` builds it again
            }
            inWrittenOrder = true
        }
        return members
    }
}

/// One member of a ``CanonicalObject`` (a struct, not a tuple: see ``JSONMember``).
struct CanonicalMember {
    let key: String
    var value: CanonicalNode
}

final class CanonicalArray {
    @exclusivity(unchecked) var elements: [CanonicalNode] = []
}

/// Thrown when a value needs something only `JSONEncoder` writes exactly (a type this encoder
/// leaves to it); `CanonicalJSON.encode` then encodes the whole value with `JSONEncoder`.
struct CanonicalEncoderUnsupported: Error {}

final class CanonicalEncoder: Encoder {
    let parent: CanonicalEncoder?
    let key: (any CodingKey)?
    @exclusivity(unchecked) var node: CanonicalNode?
    /// On the root encoder: whether a type left to `JSONEncoder` was met — remembered, not only
    /// thrown, so that a conformance that swallows the error (`try?`) still sends the whole
    /// value to `JSONEncoder` instead of losing the member.
    @exclusivity(unchecked) private(set) var needsFoundation = false
    /// How dates are written: the form the encoded version declares.
    let dates: DateEncoding

    init(parent: CanonicalEncoder, key: (any CodingKey)?) {
        self.parent = parent
        self.key = key
        self.dates = parent.dates
    }

    /// A root encoder writing dates in the form `dates`.
    init(dates: DateEncoding) {
        self.parent = nil
        self.key = nil
        self.dates = dates
    }

    /// Marks this encode (on its root encoder) as needing `JSONEncoder`, and throws.
    func unsupported() throws -> Never {
        var root = self
        while let parent = root.parent { root = parent }
        root.needsFoundation = true
        throw CanonicalEncoderUnsupported()
    }

    var codingPath: [any CodingKey] {
        var path: [any CodingKey] = []
        var current: CanonicalEncoder? = self
        while let encoder = current, let key = encoder.key {
            path.append(key)
            current = encoder.parent
        }
        return path.reversed()
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: CanonicalObject
        if case let .object(existing)? = node {
            object = existing
        } else {
            object = CanonicalObject()
            node = .object(object)
        }
        return KeyedEncodingContainer(CanonicalKeyedContainer<Key>(encoder: self, object: object))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: CanonicalArray
        if case let .array(existing)? = node {
            array = existing
        } else {
            array = CanonicalArray()
            node = .array(array)
        }
        return CanonicalUnkeyedContainer(encoder: self, array: array)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        CanonicalSingleValueContainer(encoder: self)
    }

    /// The node for `value` encoded at `key` below this encoder.
    @inline(__always)
    func wrap<T: Encodable>(_ value: T, key: (any CodingKey)?) throws -> CanonicalNode {
        if T.self == String.self, let text = value as? String { return .string(text) }
        if T.self == Date.self, let date = value as? Date { return try wrapDate(date, key: key) }
        if T.self == Data.self || T.self == URL.self || T.self == Decimal.self { try unsupported() }
        let encoder = CanonicalEncoder(parent: self, key: key)
        try value.encode(to: encoder)
        return encoder.node ?? .object(CanonicalObject())
    }

    func wrapDate(_ date: Date, key: (any CodingKey)?) throws -> CanonicalNode {
        do throws(ISO8601.Failure) {
            switch try dates.written(date) {
            case let .string(text): return .string(text)
            case let .number(text): return .number(text)
            }
        } catch {
            var path = codingPath
            if let key { path.append(key) }
            throw EncodingError.invalidValue(
                date, .init(codingPath: path, debugDescription: "Cannot write the date: \(error.reason)."))
        }
    }

    func wrapFloat<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F, key: (any CodingKey)?) throws
        -> CanonicalNode
    {
        guard value.isFinite else {
            var path = codingPath
            if let key { path.append(key) }
            throw EncodingError.invalidValue(
                value,
                .init(codingPath: path, debugDescription: "Unable to encode \(F.self).\(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .number(text)
    }
}

struct CanonicalKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: CanonicalEncoder
    let object: CanonicalObject

    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil(forKey key: Key) throws { object.set(key.stringValue, .null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { object.set(key.stringValue, .bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { object.set(key.stringValue, .string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        object.set(key.stringValue, try encoder.wrapFloat(value, key: key))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        object.set(key.stringValue, try encoder.wrapFloat(value, key: key))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.set(key.stringValue, .number(String(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { object.set(key.stringValue, .number(String(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { object.set(key.stringValue, .number(String(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { object.set(key.stringValue, .number(String(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.set(key.stringValue, .number(String(value))) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { object.set(key.stringValue, .number(String(value))) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { object.set(key.stringValue, .number(String(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        object.set(key.stringValue, .number(String(value)))
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        object.set(key.stringValue, .number(String(value)))
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        object.set(key.stringValue, .number(String(value)))
    }
    mutating func encode(_ value: Int128, forKey key: Key) throws { try encoder.unsupported() }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try encoder.unsupported() }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.set(key.stringValue, try encoder.wrap(value, key: key))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested: CanonicalObject
        if let slot = object.find(key.stringValue), case let .object(existing) = object.members[slot].value {
            nested = existing
        } else {
            nested = CanonicalObject()
            object.set(key.stringValue, .object(nested))
        }
        return KeyedEncodingContainer(
            CanonicalKeyedContainer<NestedKey>(encoder: CanonicalEncoder(parent: encoder, key: key), object: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested: CanonicalArray
        if let slot = object.find(key.stringValue), case let .array(existing) = object.members[slot].value {
            nested = existing
        } else {
            nested = CanonicalArray()
            object.set(key.stringValue, .array(nested))
        }
        return CanonicalUnkeyedContainer(encoder: CanonicalEncoder(parent: encoder, key: key), array: nested)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(key: CanonicalKey(stringValue: "super")) }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

    private func superEncoder(key: any CodingKey) -> any Encoder {
        let sub = CanonicalEncoder(parent: encoder, key: key)
        object.set(key.stringValue, .encoder(sub))
        return sub
    }
}

struct CanonicalUnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: CanonicalEncoder
    let array: CanonicalArray

    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { array.elements.count }
    private var nextKey: CanonicalKey { CanonicalKey(index: array.elements.count) }

    mutating func encodeNil() throws { array.elements.append(.null) }
    mutating func encode(_ value: Bool) throws { array.elements.append(.bool(value)) }
    mutating func encode(_ value: String) throws { array.elements.append(.string(value)) }
    mutating func encode(_ value: Double) throws { array.elements.append(try encoder.wrapFloat(value, key: nextKey)) }
    mutating func encode(_ value: Float) throws { array.elements.append(try encoder.wrapFloat(value, key: nextKey)) }
    mutating func encode(_ value: Int) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { array.elements.append(.number(String(value))) }
    mutating func encode(_ value: Int128) throws { try encoder.unsupported() }
    mutating func encode(_ value: UInt128) throws { try encoder.unsupported() }
    mutating func encode<T: Encodable>(_ value: T) throws {
        array.elements.append(try encoder.wrap(value, key: nextKey))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = CanonicalObject()
        let key = nextKey
        array.elements.append(.object(nested))
        return KeyedEncodingContainer(
            CanonicalKeyedContainer<NestedKey>(encoder: CanonicalEncoder(parent: encoder, key: key), object: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = CanonicalArray()
        let key = nextKey
        array.elements.append(.array(nested))
        return CanonicalUnkeyedContainer(encoder: CanonicalEncoder(parent: encoder, key: key), array: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let sub = CanonicalEncoder(parent: encoder, key: nextKey)
        array.elements.append(.encoder(sub))
        return sub
    }
}

struct CanonicalSingleValueContainer: SingleValueEncodingContainer {
    let encoder: CanonicalEncoder

    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.node = .null }
    mutating func encode(_ value: Bool) throws { encoder.node = .bool(value) }
    mutating func encode(_ value: String) throws { encoder.node = .string(value) }
    mutating func encode(_ value: Double) throws { encoder.node = try encoder.wrapFloat(value, key: nil) }
    mutating func encode(_ value: Float) throws { encoder.node = try encoder.wrapFloat(value, key: nil) }
    mutating func encode(_ value: Int) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int8) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int16) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int32) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int64) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt8) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt16) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt32) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: UInt64) throws { encoder.node = .number(String(value)) }
    mutating func encode(_ value: Int128) throws { try encoder.unsupported() }
    mutating func encode(_ value: UInt128) throws { try encoder.unsupported() }
    mutating func encode<T: Encodable>(_ value: T) throws { encoder.node = try encoder.wrap(value, key: nil) }
}

struct CanonicalKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }

    init(index: Int) { self.init(intValue: index) }
}

extension CanonicalNode {
    /// Writes the value as `JSONEncoder` does with sorted keys: members sorted by their keys'
    /// UTF-8 bytes, strings escaped as its writer escapes them (`\b \f \n \r \t`, other
    /// control characters as `\u00XX`, slashes left alone).
    ///
    /// - Returns: How deeply the value nests: 0 for a string, number, literal; for an array or
    ///   object, 1 more than its deepest element or member — what a write-back's proof checks
    ///   against what a reader parses (`JSONParser.maxDepth`), found as the bytes are written.
    @discardableResult
    func write(to out: inout [UInt8], depth: Int) throws -> Int {
        switch self {
        case let .string(text): Self.writeString(text, to: &out)
        case let .number(text): Self.writeBytes(of: text, to: &out)
        case let .bool(flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case let .encoder(encoder):
            return try (encoder.node ?? .object(CanonicalObject())).write(to: &out, depth: depth)
        case let .array(array):
            guard depth < 512 else { throw Self.tooDeep }
            out.append(UInt8(ascii: "["))
            var deepest = 0
            for (position, element) in array.elements.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                deepest = Swift.max(deepest, try element.write(to: &out, depth: depth + 1))
            }
            out.append(UInt8(ascii: "]"))
            return deepest + 1
        case let .object(object):
            guard depth < 512 else { throw Self.tooDeep }
            out.append(UInt8(ascii: "{"))
            var first = true
            var deepest = 0
            for member in object.writtenMembers {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                Self.writeString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                deepest = Swift.max(deepest, try member.value.write(to: &out, depth: depth + 1))
            }
            out.append(UInt8(ascii: "}"))
            return deepest + 1
        }
        return 0
    }

    private static var tooDeep: EncodingError {
        EncodingError.invalidValue(
            0, .init(codingPath: [], debugDescription: "Too many nested arrays or dictionaries."))
    }

    static func writeString(_ text: String, to out: inout [UInt8]) {
        var text = text
        // Contiguous UTF-8 (a bridged string is made native first): one pass finds whether any
        // byte needs escaping, and a string with none (nearly every one) is copied whole.
        text.withUTF8 { bytes in
            out.append(UInt8(ascii: "\""))
            var plain = true
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                plain = false
                break
            }
            if plain { out.append(contentsOf: bytes) } else { writeEscaped(bytes, to: &out) }
            out.append(UInt8(ascii: "\""))
        }
    }

    /// `text`'s UTF-8 bytes as they are (a number's digits).
    private static func writeBytes(of text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// `bytes` as the inside of a JSON string: quote, backslash and control characters escaped.
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var mark = 0
        for position in bytes.indices {
            let byte = bytes[position]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if position > mark { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[mark..<position])) }
            mark = position + 1
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            default:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [
                    0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hex[Int(byte >> 4)], hex[Int(byte & 0xF)]
                ])
            }
        }
        if bytes.count > mark { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[mark...])) }
    }
}
