import Foundation

/// A JSON document parsed into one flat array of entries over its own bytes: what a stored
/// record is parsed into, so that its version is detected and its fields decoded without a
/// tree of `String`s and arrays built per record (``JSONValue`` is built from it only where a
/// caller needs one: ``value(at:)``).
///
/// Entry 0 is the document's value; an array's elements and an object's names and values (a
/// name's entry, then its value's) follow their container in document order, and each entry
/// says where the next value after it starts, so that a container is stepped over in one move.
/// The parse is as strict as ``JSONParser``'s (``JSONParser/parseTape(depth:into:)``): the same
/// input is refused, with the same errors, so a string on the tape is known to be valid and a
/// name known to be unique in its object.
final class JSONTape: Sendable {
    /// The document's bytes. A copy, not the `Data` a store handed over: reading a `Data`'s
    /// bytes goes through its storage object with a dynamic exclusivity check each time, which
    /// cost more than the copy (callgrind, `migrate status` of 10,000 records: +25M instructions).
    let bytes: [UInt8]
    let entries: [Entry]

    struct Entry: Sendable {
        enum Kind: UInt8, Sendable {
            case null, `false`, `true`, number, array, object
            /// A string of printable ASCII without escapes: its bytes are its value.
            case plain
            /// A string without escapes holding other characters: its bytes are its value's UTF-8.
            case unescaped
            /// A string with escapes, decoded when it is read.
            case escaped
        }

        var kind: Kind
        /// A container's members (an object) or elements (an array); 0 for any other value.
        var count: Int
        /// Where the value starts: a string's first byte after its opening quote, a container's
        /// opening bracket.
        var start: Int
        /// Where the value ends: a string's closing quote, a container's byte after its closing
        /// bracket.
        var end: Int
        /// The entry after this value's own (a container's last descendant's).
        var next: Int

        var isString: Bool { kind == .plain || kind == .unescaped || kind == .escaped }
    }

    init(bytes: [UInt8], entries: [Entry]) {
        self.bytes = bytes
        self.entries = entries
    }

    /// Parses `data` as exactly one JSON value (surrounding whitespace allowed).
    static func parse(_ data: Data) throws(JSONSyntaxError) -> JSONTape {
        try parse(bytes: copy(data))
    }

    /// `data`'s bytes, copied by one `memcpy` (`[UInt8](data)` copies a byte at a time through
    /// `Data`'s iterator: a thousand instructions for a record of 80 bytes).
    static func copy(_ data: Data) -> [UInt8] {
        data.withUnsafeBytes { raw in
            [UInt8](unsafeUninitializedCapacity: raw.count) { buffer, count in
                if let base = raw.baseAddress, let target = buffer.baseAddress, raw.count > 0 {
                    target.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: raw.count)
                }
                count = raw.count
            }
        }
    }

    /// Parses a UTF-8 string as exactly one JSON value.
    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONTape {
        try parse(bytes: Array(text.utf8))
    }

    /// Parses `bytes` as exactly one JSON value; the tape keeps them.
    static func parse(bytes: [UInt8]) throws(JSONSyntaxError) -> JSONTape {
        let result: Result<[Entry], JSONSyntaxError> = bytes.withUnsafeBytes { raw in
            var parser = JSONParser(raw)
            var entries: [Entry] = []
            entries.reserveCapacity(16)
            do throws(JSONSyntaxError) {
                try parser.parseTape(depth: 0, into: &entries)
                try parser.expectEnd()
                return .success(entries)
            } catch {
                return .failure(error)
            }
        }
        return JSONTape(bytes: bytes, entries: try result.get())
    }

    // MARK: Reading entries

    /// The text of the string at `index`.
    func string(at index: Int) -> String {
        let entry = entries[index]
        return bytes.withUnsafeBytes { raw in
            if entry.kind != .escaped {
                return String(decoding: UnsafeRawBufferPointer(rebasing: raw[entry.start..<entry.end]), as: UTF8.self)
            }
            var parser = JSONParser(raw)
            parser.seek(to: entry.start - 1)
            do throws(JSONSyntaxError) {
                return try parser.parseString()
            } catch {
                // Unreachable: the string was read the same way, strictly, when the tape was parsed.
                return String(decoding: UnsafeRawBufferPointer(rebasing: raw[entry.start..<entry.end]), as: UTF8.self)
            }
        }
    }

    /// The literal text of the number at `index`.
    func number(at index: Int) -> String {
        let entry = entries[index]
        return bytes.withUnsafeBytes { raw in
            String(decoding: UnsafeRawBufferPointer(rebasing: raw[entry.start..<entry.end]), as: UTF8.self)
        }
    }

    /// Whether the string at `index` is exactly `text`, byte for byte.
    func string(at index: Int, isExactly text: String) -> Bool {
        let entry = entries[index]
        guard entry.kind != .escaped else { return string(at: index).isExactly(text) }
        let compared = text.utf8.withContiguousStorageIfAvailable { theirs in
            bytes.withUnsafeBytes { mine in
                theirs.count == entry.end - entry.start
                    && (theirs.isEmpty
                        || memcmp(mine.baseAddress! + entry.start, theirs.baseAddress!, theirs.count) == 0)
            }
        }
        if let compared { return compared }
        return bytes[entry.start..<entry.end].elementsEqual(text.utf8)
    }

    /// The entries of the names of the object at `index`: each member's value is the entry after
    /// its name's.
    func memberNames(of index: Int) -> MemberNames {
        MemberNames(tape: self, object: index)
    }

    /// The names of an object's members, in document order, as entry indices.
    struct MemberNames: Sequence, IteratorProtocol {
        let tape: JSONTape
        var remaining: Int
        var cursor: Int

        init(tape: JSONTape, object: Int) {
            self.tape = tape
            remaining = tape.entries[object].count
            cursor = object + 1
        }

        mutating func next() -> Int? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let name = cursor
            cursor = tape.entries[name + 1].next
            return name
        }
    }

    /// The value of the member `name` of the object at `index`, by a scan of its names: linear
    /// in the object's size, so a caller that looks up many names of a large object looks them
    /// up in a `JSONObject`, which has an index (as `TreeNode.asObject` does).
    func member(_ name: String, of index: Int) -> Int? {
        for key in memberNames(of: index) where string(at: key, isExactly: name) { return key + 1 }
        return nil
    }

    /// The entries of the elements of the array at `index`.
    func elements(of index: Int) -> [Int] {
        var elements: [Int] = []
        elements.reserveCapacity(entries[index].count)
        var cursor = index + 1
        for _ in 0..<entries[index].count {
            elements.append(cursor)
            cursor = entries[cursor].next
        }
        return elements
    }

    /// The value at `index` as a ``JSONValue`` tree (built in linear time; an object of more than
    /// `JSONObject.indexThreshold` members gets its index, as the parser gives it).
    func value(at index: Int) -> JSONValue {
        let entry = entries[index]
        switch entry.kind {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .number: return .number(number(at: index))
        case .plain, .unescaped, .escaped: return .string(string(at: index))
        case .array: return .array(elements(of: index).map(value(at:)))
        case .object:
            var members: [JSONMember] = []
            members.reserveCapacity(entry.count)
            for key in memberNames(of: index) {
                members.append(JSONMember(key: string(at: key), value: value(at: key + 1)))
            }
            guard members.count > JSONObject.indexThreshold else { return .object(JSONObject(members: members)) }
            var positions = [ExactString: Int](minimumCapacity: members.count)
            for (position, member) in members.enumerated() { positions[ExactString(member.key)] = position }
            return .object(JSONObject(members: members, index: positions))
        }
    }

    /// Whether the names of the object at `index` are exactly a record of `table`'s keys: every
    /// required key present, no other key but an optional one. Compared byte for byte, building
    /// no `String`; `nil` when a name has escapes (the caller compares decoded names then).
    func names(of index: Int, match table: KeyTable) -> Bool? {
        let count = entries[index].count
        guard count >= table.requiredCount, count <= table.names.count else { return false }
        var requiredSeen = 0
        return bytes.withUnsafeBytes { mine -> Bool? in
            for name in memberNames(of: index) {
                let entry = entries[name]
                guard entry.kind != .escaped else { return nil }
                let length = entry.end - entry.start
                guard
                    let found = table.names.firstIndex(where: { key in
                        key.count == length
                            && key.withUnsafeBufferPointer {
                                length == 0 || memcmp($0.baseAddress!, mine.baseAddress! + entry.start, length) == 0
                            }
                    })
                else { return false }
                // Names are distinct (the parser refuses duplicates): each required one counts once.
                if found < table.requiredCount { requiredSeen += 1 }
            }
            return requiredSeen == table.requiredCount
        }
    }

    /// A short name of the kind of the value at `index`, for error messages.
    func kindName(at index: Int) -> String {
        switch entries[index].kind {
        case .null: return "null"
        case .false, .true: return "a boolean"
        case .number: return "a number"
        case .plain, .unescaped, .escaped: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// A version's stored keys as UTF-8 bytes, the required ones first: what a tape's member names
/// are matched against (``JSONTape/names(of:match:)``) without building a `String` per name.
struct KeyTable: Sendable {
    let names: [[UInt8]]
    let requiredCount: Int

    init(_ keys: StoredKeys) {
        let required = keys.required.map(ExactString.init).sorted().map { Array($0.value.utf8) }
        let optional = keys.optional.map(ExactString.init).sorted().map { Array($0.value.utf8) }
        names = required + optional
        requiredCount = required.count
    }
}
