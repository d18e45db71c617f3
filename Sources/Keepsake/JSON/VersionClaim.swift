import Foundation

/// The version a record's bytes claim at their top level, read without parsing them strictly:
/// for a record that does not parse (a duplicate key, a lone surrogate, `NaN` somewhere inside)
/// but says it is newer, so that a save never replaces it. The one reader of a stored record's
/// claimed version; it lexes with ``JSONParser`` (whitespace, strings read leniently, numbers)
/// and skips what it does not read by counting brackets. Linear in the bytes, no recursion, and
/// for any bytes an answer, never a trap.
enum VersionClaim {
    /// The highest top-level `"version"` number in `bytes` (or in the JSON text of a JSON
    /// string, once unwrapped), or `nil` when there is none.
    static func highest(in bytes: Data) -> Double? {
        var highest: Double?
        forEachTopLevelMember(of: bytes) { name, parser in
            guard name.isExactly(StoredEnvelope.versionKey) else { return }
            let start = parser.offset
            do throws(JSONSyntaxError) {
                let range = try parser.scanNumber()
                let text = String(decoding: UnsafeRawBufferPointer(rebasing: parser.bytes[range]), as: UTF8.self)
                if let number = Double(text), number.isFinite { highest = max(highest ?? number, number) }
            } catch {
                parser.offset = start  // not a number: skipped as any other value
            }
        }
        return highest
    }

    /// The top-level `"schema"` string of `bytes` (or of the JSON text of a JSON string, once
    /// unwrapped), when the record names exactly one; `nil` otherwise. For a report on a record
    /// that does not parse but says which model it belongs to.
    static func schema(in bytes: Data) -> String? {
        var names: Set<ExactString> = []
        forEachTopLevelMember(of: bytes) { name, parser in
            guard name.isExactly(StoredEnvelope.Member.schema.rawValue),
                parser.offset < parser.bytes.count, parser.bytes[parser.offset] == UInt8(ascii: "\"")
            else { return }
            let start = parser.offset
            do throws(JSONSyntaxError) {
                names.insert(ExactString(try parser.readString(strict: false)))
            } catch {
                parser.offset = start
            }
        }
        // None, or two different names: the record does not say which model it is.
        guard names.count == 1, let name = names.first else { return nil }
        return name.value
    }

    /// `5` for 5, `5.5` for 5.5.
    static func describe(_ version: Double) -> String {
        if version.rounded() == version, abs(version) < 1e15 { return String(Int64(version)) }
        return String(version)
    }

    /// Calls `visit` with each top-level member's name and a parser at its value, in the
    /// object `data` holds (or the JSON text of a JSON string, once unwrapped); a value `visit`
    /// does not read past is skipped. Stops where the bytes stop making sense.
    private static func forEachTopLevelMember(
        of data: Data, _ visit: (_ name: String, _ parser: inout JSONParser) -> Void
    ) {
        // A string-wrapped record: the members of the JSON text the string holds.
        let wrapped: Data? = JSONParser.withLenientParser(data) { parser in
            parser.skipWhitespace()
            guard parser.offset < parser.bytes.count, parser.bytes[parser.offset] == UInt8(ascii: "\"") else {
                return nil
            }
            do throws(JSONSyntaxError) {
                return Data(try parser.readString(strict: false).utf8)
            } catch {
                return Data()  // a string that does not end: nothing to read
            }
        }
        JSONParser.withLenientParser(wrapped ?? data) { parser in parser.forEachTopLevelMember(visit) }
    }
}

extension JSONParser {
    /// Runs `body` with a parser over `data`'s bytes, for a reader that reports no errors.
    fileprivate static func withLenientParser<T>(_ data: Data, _ body: (inout JSONParser) -> T) -> T {
        data.withUnsafeBytes { raw in
            var parser = JSONParser(raw)
            return body(&parser)
        }
    }

    /// ``VersionClaim``'s walk over the members of the object at `offset`, leniently.
    fileprivate mutating func forEachTopLevelMember(_ visit: (_ name: String, _ parser: inout JSONParser) -> Void) {
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "{") else { return }
        offset += 1
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { return }
            let name: String
            do throws(JSONSyntaxError) {
                name = try readString(strict: false)
            } catch {
                return
            }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { return }
            offset += 1
            skipWhitespace()
            let start = offset
            visit(name, &self)
            if offset == start { skipLeniently() }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ",") else { return }
            offset += 1
        }
    }

    /// Moves past one value of any kind, counting brackets instead of recursing, and strings
    /// by their quotes and escapes alone: to the `,` or closing bracket after it, or the end.
    fileprivate mutating func skipLeniently() {
        var depth = 0
        while offset < bytes.count {
            switch bytes[offset] {
            case UInt8(ascii: "\""):
                offset += 1
                while offset < bytes.count, bytes[offset] != UInt8(ascii: "\"") {
                    offset += bytes[offset] == UInt8(ascii: "\\") ? 2 : 1
                }
                offset = Swift.min(offset + 1, bytes.count)
                if depth == 0 { return }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                offset += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 { return }
                depth -= 1
                offset += 1
                if depth == 0 { return }
            case UInt8(ascii: ","):
                if depth == 0 { return }
                offset += 1
            default:
                offset += 1
            }
        }
    }
}
