import Foundation

/// A JSON document parsed once into a flat tape: one ``Token`` per value and per member name,
/// in document order, each naming the bytes it spans. What the record pipeline detects versions
/// on and decodes from (``JSONDocumentDecoder``), so that reading a record builds no tree — no
/// array of members per object, no `String` per member name or number — and a value is made
/// only when a decoder asks for it.
///
/// The parse is exactly as strict as ``JSONParser``'s (`JSONDocumentTests` checks the two accept
/// and refuse the same inputs): invalid UTF-8, control characters in strings, duplicate member
/// names (the same UTF-8 bytes), trailing data and nesting deeper than ``JSONParser/maxDepth``
/// are errors. Linear in the document's size.
///
/// Layout of the tape: an object's token is followed by its members, each a name token (a
/// string) then its value's tokens; an array's token by its elements' tokens. Every token's
/// ``Token/next`` is the position just past its value's tokens, so a reader steps over a member
/// in one move.
@usableFromInline
final class JSONDocument: Sendable {
    /// The document's bytes (UTF-8).
    let bytes: Data
    /// The tape: the root value is at 0.
    let tokens: [Token]
    /// The value of each string that holds an escape, decoded once by the parse (a string
    /// token's ``Token/count`` is its place here).
    let unescaped: [String]

    private init(bytes: Data, tape: Tape) {
        self.bytes = bytes
        self.tokens = tape.tokens
        self.unescaped = tape.unescaped
    }

    /// What a parse builds.
    struct Tape {
        var tokens: [Token] = []
        var unescaped: [String] = []
    }

    /// One value or member name on the tape.
    struct Token: Sendable {
        enum Kind: UInt8, Sendable {
            case object, array, string, number, `true`, `false`, null
        }

        let kind: Kind
        /// For a string: whether it holds an escape (its bytes are not its value as they are).
        let escaped: Bool
        /// Where the value's bytes start: for a string, the first byte after its opening quote.
        let start: UInt32
        /// Where its bytes end: for a string, its closing quote.
        var end: UInt32
        /// The position on the tape just past this value's tokens.
        var next: UInt32
        /// For an object, its members; for an array, its elements; for an escaped string, its
        /// place in ``JSONDocument/unescaped``.
        var count: UInt32
    }

    /// Parses `bytes` as exactly one JSON value (surrounding whitespace allowed).
    ///
    /// - Throws: ``JSONSyntaxError`` where ``JSONParser/parse(_:)`` would throw, and for a
    ///   document of 4 GiB or more, whose positions the tape does not hold.
    static func parse(_ bytes: Data) throws(JSONSyntaxError) -> JSONDocument {
        guard bytes.count < Int(UInt32.max) else {
            throw JSONSyntaxError(offset: 0, reason: "a JSON value of 4 GiB or more")
        }
        let tape = try JSONParser.withParser(bytes) { parser throws(JSONSyntaxError) in
            var tape = Tape()
            // A record of n bytes has about n/6 tokens in the usual layout.
            tape.tokens.reserveCapacity(min(bytes.count / 6 + 4, 4096))
            try parser.tape(into: &tape, depth: 0)
            try parser.expectEnd()
            return tape
        }
        return JSONDocument(bytes: bytes, tape: tape)
    }

    /// A document holding `null`: what a decoder reads where a member is absent (a super
    /// decoder's missing `super`).
    static let null: JSONDocument = JSONDocument(
        bytes: Data("null".utf8),
        tape: Tape(tokens: [Token(kind: .null, escaped: false, start: 0, end: 4, next: 1, count: 0)]))

    /// The value at `index` on the tape.
    var root: JSONNode { JSONNode(document: self, index: 0) }
}

// MARK: - Building the tape

extension JSONParser {
    /// Reads one value onto `tape` (see ``JSONDocument``), checking it as ``parseValue(depth:)``
    /// does.
    mutating func tape(into tape: inout JSONDocument.Tape, depth: Int) throws(JSONSyntaxError) {
        let first = try peek()
        let start = UInt32(truncatingIfNeeded: offset)
        switch first {
        case UInt8(ascii: "{"):
            guard depth + 1 < Self.maxDepth else { throw Self.tooDeep(at: offset) }
            let me = tape.tokens.count
            tape.tokens.append(.init(kind: .object, escaped: false, start: start, end: start, next: 0, count: 0))
            offset += 1
            var count = 0
            if try peek() != UInt8(ascii: "}") {
                // Duplicate names are found by comparing bytes while the names are unescaped and
                // few, then by a set of the names, so the check stays linear in the object's size.
                var seen: Set<ExactString>?
                while true {
                    guard try peek() == UInt8(ascii: "\"") else {
                        throw JSONSyntaxError(offset: offset, reason: "expected a member name")
                    }
                    let nameOffset = offset
                    let name = tape.tokens.count
                    try tapeString(into: &tape)
                    if seen == nil, !tape.tokens[name].escaped, count < JSONObject.indexThreshold {
                        if holdsName(at: name, among: me, count: count, tape) {
                            throw JSONSyntaxError(offset: nameOffset, reason: "duplicate member name")
                        }
                    } else {
                        if seen == nil { seen = names(of: me, count: count, tape) }
                        guard seen!.insert(ExactString(string(tape.tokens[name], tape.unescaped))).inserted else {
                            throw JSONSyntaxError(offset: nameOffset, reason: "duplicate member name")
                        }
                    }
                    try expect(UInt8(ascii: ":"), "':'")
                    try self.tape(into: &tape, depth: depth + 1)
                    count += 1
                    if try peek() == UInt8(ascii: ",") {
                        offset += 1
                        continue
                    }
                    try expect(UInt8(ascii: "}"), "',' or '}'")
                    break
                }
            } else {
                offset += 1
            }
            close(me, count: count, &tape)
        case UInt8(ascii: "["):
            guard depth + 1 < Self.maxDepth else { throw Self.tooDeep(at: offset) }
            let me = tape.tokens.count
            tape.tokens.append(.init(kind: .array, escaped: false, start: start, end: start, next: 0, count: 0))
            offset += 1
            var count = 0
            if try peek() != UInt8(ascii: "]") {
                while true {
                    try self.tape(into: &tape, depth: depth + 1)
                    count += 1
                    if try peek() == UInt8(ascii: ",") {
                        offset += 1
                        continue
                    }
                    try expect(UInt8(ascii: "]"), "',' or ']'")
                    break
                }
            } else {
                offset += 1
            }
            close(me, count: count, &tape)
        case UInt8(ascii: "\""):
            try tapeString(into: &tape)
        case UInt8(ascii: "t"):
            try literal("true")
            appendLeaf(.true, from: start, &tape)
        case UInt8(ascii: "f"):
            try literal("false")
            appendLeaf(.false, from: start, &tape)
        case UInt8(ascii: "n"):
            try literal("null")
            appendLeaf(.null, from: start, &tape)
        default:
            _ = try scanNumber()
            appendLeaf(.number, from: start, &tape)
        }
    }

    /// The error for nesting deeper than ``maxDepth``, at `offset`.
    static func tooDeep(at offset: Int) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset, reason: "nesting deeper than \(maxDepth) levels")
    }

    private func appendLeaf(_ kind: JSONDocument.Token.Kind, from start: UInt32, _ tape: inout JSONDocument.Tape) {
        tape.tokens.append(
            .init(
                kind: kind, escaped: false, start: start, end: UInt32(truncatingIfNeeded: offset),
                next: UInt32(truncatingIfNeeded: tape.tokens.count + 1), count: 0))
    }

    private func close(_ container: Int, count: Int, _ tape: inout JSONDocument.Tape) {
        tape.tokens[container].end = UInt32(truncatingIfNeeded: offset)
        tape.tokens[container].next = UInt32(truncatingIfNeeded: tape.tokens.count)
        tape.tokens[container].count = UInt32(truncatingIfNeeded: count)
    }

    /// Reads the string at `offset` (its opening quote) onto `tape`. An ASCII string without
    /// escapes is checked in one pass over its bytes; any other by ``readString(strict:)``,
    /// whose value is kept when the string holds an escape.
    private mutating func tapeString(into tape: inout JSONDocument.Tape) throws(JSONSyntaxError) {
        let quote = offset
        var index = quote + 1
        var plain = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                plain = true
                break
            }
            if byte == UInt8(ascii: "\\") || byte >= 0x80 || byte < 0x20 { break }
            index += 1
        }
        var escaped = false
        var place = 0
        if plain {
            offset = index + 1
        } else {
            // The whole check (escapes, surrogates, UTF-8, control characters, the end).
            offset = quote
            let text = try readString(strict: true)
            index = offset - 1
            escaped = memchr(bytes.baseAddress! + quote + 1, Int32(UInt8(ascii: "\\")), index - quote - 1) != nil
            if escaped {
                place = tape.unescaped.count
                tape.unescaped.append(text)
            }
        }
        tape.tokens.append(
            .init(
                kind: .string, escaped: escaped, start: UInt32(truncatingIfNeeded: quote + 1),
                end: UInt32(truncatingIfNeeded: index), next: UInt32(truncatingIfNeeded: tape.tokens.count + 1),
                count: UInt32(truncatingIfNeeded: place)))
    }

    /// Whether the object at `object`, whose first `count` members are on the tape, already has
    /// a member named as the unescaped name at `name`, compared byte for byte. (No earlier name
    /// is escaped: the caller has moved to the set once one was.)
    private func holdsName(at name: Int, among object: Int, count: Int, _ tape: JSONDocument.Tape) -> Bool {
        let new = tape.tokens[name]
        let length = Int(new.end - new.start)
        var position = object + 1
        for _ in 0..<count {
            let other = tape.tokens[position]
            if Int(other.end - other.start) == length,
                length == 0
                    || memcmp(bytes.baseAddress! + Int(other.start), bytes.baseAddress! + Int(new.start), length) == 0
            {
                return true
            }
            position = Int(tape.tokens[position + 1].next)
        }
        return false
    }

    /// The names of the first `count` members of the object at `object`.
    private func names(of object: Int, count: Int, _ tape: JSONDocument.Tape) -> Set<ExactString> {
        var names = Set<ExactString>(minimumCapacity: 2 * count)
        var position = object + 1
        for _ in 0..<count {
            names.insert(ExactString(string(tape.tokens[position], tape.unescaped)))
            position = Int(tape.tokens[position + 1].next)
        }
        return names
    }

    /// The value of the string `token` of this parser's bytes.
    func string(_ token: JSONDocument.Token, _ unescaped: [String]) -> String {
        if token.escaped { return unescaped[Int(token.count)] }
        return String(
            decoding: UnsafeRawBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)]), as: UTF8.self)
    }
}

// MARK: - Reading the tape

/// A value of a ``JSONDocument``: the document and the value's position on its tape.
@usableFromInline
struct JSONNode: Sendable {
    let document: JSONDocument
    let index: Int

    var token: JSONDocument.Token { document.tokens[index] }
    var kind: JSONDocument.Token.Kind { document.tokens[index].kind }

    /// A short name of the value's kind, for error messages (as ``JSONValue/kindName``).
    var kindName: String {
        switch kind {
        case .null: "null"
        case .true, .false: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// An object's members or an array's elements.
    var count: Int { Int(token.count) }

    /// The member of this object whose name is `name` (compared by UTF-8 bytes), if any.
    /// Linear in the object's size: for the few names a record's form is told by (a decoder of
    /// a large object indexes it once instead).
    subscript(name: String) -> JSONNode? {
        guard kind == .object else { return nil }
        var position = index + 1
        for _ in 0..<count {
            if document.name(at: position, is: name) { return JSONNode(document: document, index: position + 1) }
            position = Int(document.tokens[position + 1].next)
        }
        return nil
    }

    /// The members of this object in document order: each name's tape position and its value.
    func forEachMember(_ body: (_ name: Int, _ value: JSONNode) throws -> Void) rethrows {
        guard kind == .object else { return }
        var position = index + 1
        for _ in 0..<count {
            try body(position, JSONNode(document: document, index: position + 1))
            position = Int(document.tokens[position + 1].next)
        }
    }

    /// This object's member names in document order.
    var keys: [String] {
        var keys: [String] = []
        keys.reserveCapacity(count)
        forEachMember { name, _ in keys.append(document.string(at: name)) }
        return keys
    }

    /// This object's member names in document order, made one at a time.
    var lazyKeys: MemberNames {
        MemberNames(document: document, position: index + 1, left: kind == .object ? count : 0)
    }

    /// The member names of an object, one at a time.
    struct MemberNames: Sequence, IteratorProtocol {
        let document: JSONDocument
        var position: Int
        var left: Int

        mutating func next() -> String? {
            guard left > 0 else { return nil }
            left -= 1
            defer { position = Int(document.tokens[position + 1].next) }
            return document.string(at: position)
        }
    }

    /// This value as a string, when it is one.
    var string: String? { kind == .string ? document.string(at: index) : nil }

    /// A number's literal text, as written.
    var numberText: String { document.text(of: index) }

    /// A number without fraction or exponent that fits `T`, read straight from its bytes; `nil`
    /// for any other number, which the caller reads from its text.
    func plainInteger<T: FixedWidthInteger>(_: T.Type) -> T? {
        let token = token
        return document.bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> T? in
            var position = Int(token.start)
            let end = Int(token.end)
            let negative = raw[position] == UInt8(ascii: "-")
            if negative {
                guard T.isSigned else { return nil }
                position += 1
            }
            guard end - position <= 18 else { return nil }  // 18 digits cannot overflow below
            var magnitude: Int64 = 0
            while position < end {
                let digit = raw[position] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                magnitude = magnitude &* 10 &+ Int64(digit)
                position += 1
            }
            return T(exactly: negative ? -magnitude : magnitude)
        }
    }

    /// The value as a ``JSONValue`` tree, for the rare readers that need one (a save merging into
    /// a newer release's record). Parses the value's bytes again, which the document's parse
    /// already accepted.
    ///
    /// - Throws: ``JSONSyntaxError`` only where the document's parse would have (never).
    func value() throws(JSONSyntaxError) -> JSONValue {
        let token = token
        let quote: UInt32 = kind == .string ? 1 : 0
        let base = document.bytes.startIndex
        return try JSONParser.parse(
            document.bytes[(base + Int(token.start - quote))..<(base + Int(token.end + quote))])
    }

    /// The value as a record's version number (an envelope's `version` or `oldestReader`, an
    /// inline `version`).
    ///
    /// - Throws: `.corruptRecord` naming `place` (made only then) when the value is not an
    ///   integer.
    func recordVersion(at place: @autoclosure () -> String) throws(KeepsakeError) -> Int {
        guard kind == .number, let version = plainInteger(Int.self) ?? Int(numberText) else {
            throw KeepsakeError(.corruptRecord, "\(place()) is \(kindName), expected an integer")
        }
        return version
    }
}

extension JSONDocument {
    /// The string at tape position `position`: its value, decoded by the parse.
    func string(at position: Int) -> String {
        let token = tokens[position]
        if token.escaped { return unescaped[Int(token.count)] }
        return text(of: position)
    }

    /// The bytes of the token at `position` as text (a number's literal, an unescaped string's
    /// value, both checked by the parse).
    func text(of position: Int) -> String {
        let token = tokens[position]
        return bytes.withUnsafeBytes { raw in
            String(decoding: UnsafeRawBufferPointer(rebasing: raw[Int(token.start)..<Int(token.end)]), as: UTF8.self)
        }
    }

    /// Whether the member name at tape position `position` is `name`, by UTF-8 bytes.
    func name(at position: Int, is name: String) -> Bool {
        let token = tokens[position]
        if token.escaped { return unescaped[Int(token.count)].isExactly(name) }
        var name = name
        return name.withUTF8 { wanted in
            let length = Int(token.end - token.start)
            guard length == wanted.count else { return false }
            guard length > 0 else { return true }
            return bytes.withUnsafeBytes { raw in
                memcmp(raw.baseAddress! + Int(token.start), wanted.baseAddress!, length) == 0
            }
        }
    }
}
