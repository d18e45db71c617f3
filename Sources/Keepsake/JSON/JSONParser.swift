import Foundation

/// A JSON syntax error: where, and what was expected.
package struct JSONSyntaxError: Error, Sendable {
    package var offset: Int
    package var reason: String

    package var cause: KeepsakeError.Cause { .json(offset: offset, reason: reason) }

    package init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
}

/// A strict RFC 8259 parser over UTF-8 bytes.
///
/// Strict where it matters for stored records: invalid UTF-8, control characters in strings,
/// duplicate member names (the same UTF-8 bytes: names are exact strings), trailing data and
/// nesting deeper than 256 levels are errors.
/// Besides building a ``JSONValue`` tree it can validate a value without building it
/// (``skipValue()``), which the defaults store uses to slice a document into raw records.
package struct JSONParser: ~Copyable {
    let bytes: UnsafeRawBufferPointer
    package internal(set) var offset: Int = 0
    /// The plain member names of the objects ``skipValue(depth:)`` is inside, innermost last:
    /// one array for the whole document (each object truncates it back when it ends), not one
    /// per object — indexing a million-record suite allocated five arrays a record.
    private var plainNames: [Range<Int>] = []
    /// How deep arrays and objects may nest: deeper input is refused, not recursed into.
    static let maxDepth = 256

    /// The error for input nested deeper than ``maxDepth``, where no offset applies.
    static var tooDeep: JSONSyntaxError { JSONSyntaxError(offset: 0, reason: "nesting deeper than \(maxDepth) levels") }

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Runs `body` with a parser over `data`'s bytes.
    package static func withParser<T>(
        _ data: Data, _ body: (inout JSONParser) throws(JSONSyntaxError) -> T
    ) throws(JSONSyntaxError) -> T {
        let result: Result<T, JSONSyntaxError> = data.withUnsafeBytes { raw in
            var parser = JSONParser(raw)
            do throws(JSONSyntaxError) {
                return .success(try body(&parser))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses `data` as exactly one JSON value (surrounding whitespace allowed).
    package static func parse(_ data: Data) throws(JSONSyntaxError) -> JSONValue {
        try withParser(data) { parser throws(JSONSyntaxError) in
            let value = try parser.parseValue(depth: 0)
            try parser.expectEnd()
            return value
        }
    }

    /// Parses `bytes` as exactly one JSON value.
    static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        let result: Result<JSONValue, JSONSyntaxError> = bytes.withUnsafeBytes { raw in
            var parser = JSONParser(raw)
            do throws(JSONSyntaxError) {
                let value = try parser.parseValue(depth: 0)
                try parser.expectEnd()
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses a UTF-8 string as exactly one JSON value.
    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        var text = text
        let result: Result<JSONValue, JSONSyntaxError> = text.withUTF8 { utf8 in
            var parser = JSONParser(UnsafeRawBufferPointer(utf8))
            do throws(JSONSyntaxError) {
                let value = try parser.parseValue(depth: 0)
                try parser.expectEnd()
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    // MARK: Cursor

    private func fail(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset, reason: reason)
    }

    // The cursor's loops advance a local index and store it once: `offset`, a stored property
    // of the parser the caller holds `inout`, was loaded and stored on every byte.
    @inline(__always)
    package mutating func skipWhitespace() {
        var index = offset
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default:
                offset = index
                return
            }
        }
        offset = index
    }

    /// Moves the parser to `offset` (clamped to the bytes): where a caller that already knows
    /// the document's structure up to there resumes reading it.
    package mutating func seek(to offset: Int) {
        self.offset = min(max(0, offset), bytes.count)
    }

    /// The next non-whitespace byte, not consumed.
    @inline(__always)
    package mutating func peek() throws(JSONSyntaxError) -> UInt8 {
        skipWhitespace()
        guard offset < bytes.count else { throw fail("unexpected end of input") }
        return bytes[offset]
    }

    /// Consumes `byte`, after any whitespace. Inlined for the usual case — the byte comes next,
    /// as in compact JSON — which then costs a comparison, not a call (160 instructions each,
    /// four a record).
    @inline(__always)
    package mutating func expect(_ byte: UInt8, _ what: String) throws(JSONSyntaxError) {
        if offset < bytes.count, bytes[offset] == byte {
            offset += 1
            return
        }
        try expectAfterWhitespace(byte, what)
    }

    @inline(never)
    private mutating func expectAfterWhitespace(_ byte: UInt8, _ what: String) throws(JSONSyntaxError) {
        guard try peek() == byte else { throw fail("expected \(what)") }
        offset += 1
    }

    package mutating func expectEnd() throws(JSONSyntaxError) {
        skipWhitespace()
        guard offset == bytes.count else { throw fail("unexpected data after the JSON value") }
    }

    // MARK: Values

    mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        switch try peek() {
        case UInt8(ascii: "{"): return .object(try parseObject(depth: depth + 1))
        case UInt8(ascii: "["): return .array(try parseArray(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default:
            let range = try scanNumber()
            return .number(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self))
        }
    }

    /// Validates one value and returns the byte range it spans, building nothing.
    package mutating func skipValue(depth: Int = 0) throws(JSONSyntaxError) -> Range<Int> {
        let first = try peek()
        let start = offset
        guard depth < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth) levels") }
        switch first {
        case UInt8(ascii: "{"):
            offset += 1
            if try peek() == UInt8(ascii: "}") {
                offset += 1
                return start..<offset
            }
            // Duplicate names are found without building strings while names are plain (ASCII,
            // no escape: their bytes are the name) and few; then by a set of the names, so the
            // check stays linear in the object's size.
            let base = plainNames.count
            defer { plainNames.removeSubrange(base...) }
            var seen: Set<ExactString>?
            while true {
                guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let nameStart = offset
                if seen == nil, let raw = skipPlainString(), plainNames.count - base < JSONObject.indexThreshold {
                    for other in plainNames[base...]
                    where other.count == raw.count
                        && memcmp(bytes.baseAddress! + other.lowerBound, bytes.baseAddress! + raw.lowerBound, raw.count)
                            == 0
                    {
                        throw JSONSyntaxError(offset: nameStart, reason: "duplicate member name")
                    }
                    plainNames.append(raw)
                } else {
                    offset = nameStart
                    if seen == nil {
                        seen = Set(
                            plainNames[base...].map {
                                ExactString(
                                    String(decoding: UnsafeRawBufferPointer(rebasing: bytes[$0]), as: UTF8.self))
                            })
                    }
                    let name = try parseString()
                    guard seen!.insert(ExactString(name)).inserted else {
                        throw JSONSyntaxError(offset: nameStart, reason: "duplicate member name")
                    }
                }
                try expect(UInt8(ascii: ":"), "':'")
                _ = try skipValue(depth: depth + 1)
                if try peek() == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                try expect(UInt8(ascii: "}"), "',' or '}'")
                return start..<offset
            }
        case UInt8(ascii: "["):
            offset += 1
            if try peek() == UInt8(ascii: "]") {
                offset += 1
                return start..<offset
            }
            while true {
                _ = try skipValue(depth: depth + 1)
                if try peek() == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                try expect(UInt8(ascii: "]"), "',' or ']'")
                return start..<offset
            }
        case UInt8(ascii: "\""):
            if skipPlainString() == nil {
                offset = start
                _ = try parseString()
            }
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try scanNumber()
        }
        return start..<offset
    }

    /// Skips a string at `offset` (its opening quote) that is plain — printable ASCII without
    /// escapes, whose bytes are its value and need no validation — and returns the range of its
    /// contents. Returns `nil`, with `offset` wherever it stopped, for any other string: the
    /// caller goes back and parses it in full (which also reports what is wrong with it).
    private mutating func skipPlainString() -> Range<Int>? {
        let start = offset + 1
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                offset = index + 1
                return start..<index
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard offset + count <= bytes.count else { throw fail("invalid literal") }
        let expected = UnsafeRawBufferPointer(start: word.utf8Start, count: count)
        for index in 0..<count where bytes[offset + index] != expected[index] {
            throw fail("invalid literal")
        }
        offset += count
    }

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONObject {
        guard depth < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth) levels") }
        offset += 1  // {
        var members: [JSONMember] = []
        if try peek() == UInt8(ascii: "}") {
            offset += 1
            return JSONObject(members: members)
        }
        members.reserveCapacity(4)
        // Small objects (records) check duplicates by scanning; past the threshold a hash index
        // takes over, so the check stays linear in the object's size.
        var index: [ExactString: Int]?
        while true {
            guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let nameOffset = offset
            let name = try parseString()
            if index != nil {
                guard index?.updateValue(members.count, forKey: ExactString(name)) == nil else {
                    throw JSONSyntaxError(offset: nameOffset, reason: "duplicate member name")
                }
            } else {
                for member in members where member.key.isExactly(name) {
                    throw JSONSyntaxError(offset: nameOffset, reason: "duplicate member name")
                }
                if members.count == JSONObject.indexThreshold {
                    var built = [ExactString: Int](minimumCapacity: 2 * JSONObject.indexThreshold)
                    for (position, member) in members.enumerated() { built[ExactString(member.key)] = position }
                    built[ExactString(name)] = members.count
                    index = built
                }
            }
            try expect(UInt8(ascii: ":"), "':'")
            members.append(JSONMember(key: name, value: try parseValue(depth: depth)))
            if try peek() == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            try expect(UInt8(ascii: "}"), "',' or '}'")
            return JSONObject(members: members, index: index)
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> [JSONValue] {
        guard depth < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth) levels") }
        offset += 1  // [
        var elements: [JSONValue] = []
        if try peek() == UInt8(ascii: "]") {
            offset += 1
            return elements
        }
        while true {
            elements.append(try parseValue(depth: depth))
            if try peek() == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            try expect(UInt8(ascii: "]"), "',' or ']'")
            return elements
        }
    }

    /// Parses a string starting at the opening quote.
    package mutating func parseString() throws(JSONSyntaxError) -> String {
        try readString(strict: true)
    }

    /// Reads a string starting at the opening quote, its escapes decoded.
    ///
    /// Strict, it refuses what RFC 8259 does: a control character, an unknown escape, a lone
    /// surrogate, invalid UTF-8. Not strict, it takes a control character as it is, an unknown
    /// escape as the escaped character, a lone surrogate and invalid UTF-8 as U+FFFD — for
    /// reading what a record that does not parse claims (``VersionClaim``). Either way a string
    /// that does not end, or a `\u` without four hex digits, is an error.
    mutating func readString(strict: Bool) throws(JSONSyntaxError) -> String {
        let start = offset + 1  // after the "
        // Fast path: no escapes.
        var high: UInt8 = 0  // every byte or-ed: below 0x80 means ASCII, valid UTF-8 as it is
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                offset = index + 1
                if high < 0x80 || !strict { return String(decoding: slice, as: UTF8.self) }
                guard let text = String(validating: slice, as: UTF8.self) else {
                    throw JSONSyntaxError(offset: start, reason: "invalid UTF-8 in string")
                }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20, strict {
                offset = index
                throw fail("control character in string")
            }
            high |= byte
            index += 1
        }
        offset = index
        // Slow path: unescape into a buffer.
        var buffer = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<offset]))
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                if !strict { return String(decoding: buffer, as: UTF8.self) }
                guard let text = String(validating: buffer, as: UTF8.self) else {
                    throw JSONSyntaxError(offset: start, reason: "invalid UTF-8 in string")
                }
                return text
            case UInt8(ascii: "\\"):
                offset += 1
                guard offset < bytes.count else { throw fail("unterminated escape") }
                let escaped = bytes[offset]
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""): buffer.append(0x22)
                case UInt8(ascii: "\\"): buffer.append(0x5C)
                case UInt8(ascii: "/"): buffer.append(0x2F)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try unicodeEscape(strict: strict)
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                    buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    guard !strict else { throw fail("invalid escape") }
                    buffer.append(escaped)
                }
            default:
                if byte < 0x20, strict { throw fail("control character in string") }
                // The run of bytes up to the next quote, escape (or, strict, control character)
                // is appended at once: a byte at a time, a string-wrapped record's unescaping
                // cost 4.5k instructions.
                var end = offset + 1
                while end < bytes.count {
                    let next = bytes[end]
                    if next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") || (next < 0x20 && strict) { break }
                    end += 1
                }
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                offset = end
            }
        }
        throw fail("unterminated string")
    }

    /// The scalar of a `\u` escape whose four hex digits start at `offset`, a surrogate pair
    /// (two escapes) joined. A lone surrogate is an error when `strict`, else U+FFFD, and the
    /// escape after a lone high surrogate is left to be read on its own.
    private mutating func unicodeEscape(strict: Bool) throws(JSONSyntaxError) -> UInt32 {
        let scalar = try hex4()
        if (0xDC00..<0xE000).contains(scalar) {
            guard !strict else { throw fail("unpaired surrogate") }
            return 0xFFFD
        }
        guard (0xD800..<0xDC00).contains(scalar) else { return scalar }
        let next = offset
        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u")
        else {
            guard !strict else { throw fail("unpaired surrogate") }
            return 0xFFFD
        }
        offset += 2
        let low: UInt32
        do throws(JSONSyntaxError) {
            low = try hex4()
        } catch {
            guard !strict else { throw error }
            offset = next  // read on its own, where it fails
            return 0xFFFD
        }
        guard (0xDC00..<0xE000).contains(low) else {
            guard !strict else { throw fail("unpaired surrogate") }
            offset = next
            return 0xFFFD
        }
        return 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw fail("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }

    /// Validates a number literal and returns its byte range.
    mutating func scanNumber() throws(JSONSyntaxError) -> Range<Int> {
        let start = offset
        func digit(_ index: Int) -> Bool {
            index < bytes.count && bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9")
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard digit(offset) else { throw fail("unexpected character") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
            if digit(offset) { throw fail("leading zero in number") }
        } else {
            while digit(offset) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digit(offset) else { throw fail("expected a digit after '.'") }
            while digit(offset) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard digit(offset) else { throw fail("expected a digit in exponent") }
            while digit(offset) { offset += 1 }
        }
        return start..<offset
    }
}

// MARK: - Spans

extension JSONParser {
    /// Reads one value and returns where it and its parts lie (``JSONSpans``).
    mutating func parseSpans(depth: Int) throws(JSONSyntaxError) -> JSONSpans {
        let first = try peek()
        let start = offset
        switch first {
        case UInt8(ascii: "{"):
            guard depth < JSONParser.spanDepth else { return .leaf(try skipValue(depth: depth)) }
            offset += 1
            var members: [ExactString: (name: Range<Int>, value: JSONSpans)] = [:]
            if try peek() == UInt8(ascii: "}") {
                offset += 1
                return .object(start..<offset, members)
            }
            while true {
                guard try peek() == UInt8(ascii: "\"") else {
                    throw JSONSyntaxError(offset: offset, reason: "expected a member name")
                }
                let nameStart = offset
                let name = try parseString()
                let nameRange = nameStart..<offset
                try expect(UInt8(ascii: ":"), "':'")
                let value = try parseSpans(depth: depth + 1)
                guard members.updateValue((nameRange, value), forKey: ExactString(name)) == nil else {
                    throw JSONSyntaxError(offset: nameStart, reason: "duplicate member name")
                }
                if try peek() == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                try expect(UInt8(ascii: "}"), "',' or '}'")
                return .object(start..<offset, members)
            }
        case UInt8(ascii: "["):
            guard depth < JSONParser.spanDepth else { return .leaf(try skipValue(depth: depth)) }
            offset += 1
            var elements: [JSONSpans] = []
            if try peek() == UInt8(ascii: "]") {
                offset += 1
                return .array(start..<offset, elements)
            }
            while true {
                elements.append(try parseSpans(depth: depth + 1))
                if try peek() == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                try expect(UInt8(ascii: "]"), "',' or ']'")
                return .array(start..<offset, elements)
            }
        default:
            return .leaf(try skipValue(depth: depth))
        }
    }

    /// How deep spans are told apart; deeper values are one leaf each (and still validated by
    /// `skipValue`, which bounds its own nesting).
    static let spanDepth = 64
}

// MARK: - Tape

extension JSONParser {
    /// Reads one value onto `entries` (``JSONTape``): refuses exactly what ``parseValue(depth:)``
    /// refuses, with the same errors, building no `String` for a plain string or name.
    mutating func parseTape(depth: Int, into entries: inout [JSONTape.Entry]) throws(JSONSyntaxError) {
        let first = try peek()
        let start = offset
        let slot = entries.count
        switch first {
        case UInt8(ascii: "{"):
            guard depth + 1 < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth) levels") }
            offset += 1
            entries.append(JSONTape.Entry(kind: .object, count: 0, start: start, end: 0, next: 0))
            var count = 0
            if try peek() != UInt8(ascii: "}") {
                // Duplicate names: plain names compared by their bytes with the names before them
                // on the tape while they are few; past that, or once a name is not plain, a set of
                // every name, so the check stays linear.
                var seen: Set<ExactString>?
                while true {
                    guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                    let nameStart = offset
                    let name = entries.count
                    try tapeString(into: &entries)
                    let entry = entries[name]
                    if seen == nil, entry.kind == .plain, count < JSONObject.indexThreshold {
                        let length = entry.end - entry.start
                        var other = slot + 1
                        for _ in 0..<count {
                            let earlier = entries[other]
                            if earlier.kind == .plain, earlier.end - earlier.start == length,
                                length == 0
                                    || memcmp(
                                        bytes.baseAddress! + earlier.start, bytes.baseAddress! + entry.start, length)
                                        == 0
                            {
                                throw JSONSyntaxError(offset: nameStart, reason: "duplicate member name")
                            }
                            other = entries[other + 1].next
                        }
                    } else {
                        if seen == nil {
                            // Every name so far is plain and distinct.
                            var names = Set<ExactString>(minimumCapacity: 2 * count)
                            var other = slot + 1
                            for _ in 0..<count {
                                let earlier = entries[other]
                                names.insert(
                                    ExactString(
                                        String(
                                            decoding: UnsafeRawBufferPointer(
                                                rebasing: bytes[earlier.start..<earlier.end]),
                                            as: UTF8.self)))
                                other = entries[other + 1].next
                            }
                            seen = names
                        }
                        let end = offset
                        offset = nameStart
                        let text = try parseString()
                        offset = end
                        guard seen!.insert(ExactString(text)).inserted else {
                            throw JSONSyntaxError(offset: nameStart, reason: "duplicate member name")
                        }
                    }
                    try expect(UInt8(ascii: ":"), "':'")
                    try parseTape(depth: depth + 1, into: &entries)
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
            entries[slot].count = count
            entries[slot].end = offset
            entries[slot].next = entries.count
        case UInt8(ascii: "["):
            guard depth + 1 < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth) levels") }
            offset += 1
            entries.append(JSONTape.Entry(kind: .array, count: 0, start: start, end: 0, next: 0))
            var count = 0
            if try peek() != UInt8(ascii: "]") {
                while true {
                    try parseTape(depth: depth + 1, into: &entries)
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
            entries[slot].count = count
            entries[slot].end = offset
            entries[slot].next = entries.count
        case UInt8(ascii: "\""):
            try tapeString(into: &entries)
        case UInt8(ascii: "t"):
            try literal("true")
            entries.append(JSONTape.Entry(kind: .true, count: 0, start: start, end: offset, next: slot + 1))
        case UInt8(ascii: "f"):
            try literal("false")
            entries.append(JSONTape.Entry(kind: .false, count: 0, start: start, end: offset, next: slot + 1))
        case UInt8(ascii: "n"):
            try literal("null")
            entries.append(JSONTape.Entry(kind: .null, count: 0, start: start, end: offset, next: slot + 1))
        default:
            let range = try scanNumber()
            entries.append(
                JSONTape.Entry(kind: .number, count: 0, start: range.lowerBound, end: range.upperBound, next: slot + 1))
        }
    }

    /// Reads the string at `offset` (its opening quote) onto `entries`: a plain one by its bytes
    /// alone, any other validated as ``parseString()`` validates it.
    private mutating func tapeString(into entries: inout [JSONTape.Entry]) throws(JSONSyntaxError) {
        let quote = offset
        let slot = entries.count
        if let raw = skipPlainString() {
            entries.append(
                JSONTape.Entry(kind: .plain, count: 0, start: raw.lowerBound, end: raw.upperBound, next: slot + 1))
            return
        }
        offset = quote
        _ = try parseString()
        let contents = (quote + 1)..<(offset - 1)
        let escaped = bytes[contents].contains(UInt8(ascii: "\\"))
        entries.append(
            JSONTape.Entry(
                kind: escaped ? .escaped : .unescaped, count: 0, start: contents.lowerBound, end: contents.upperBound,
                next: slot + 1))
    }
}
