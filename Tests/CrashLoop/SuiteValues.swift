import Foundation

/// Each value of a defaults suite's JSON document, as the exact bytes the suite stores: the
/// suite is read directly, not through `migrate get`, so that a torn write shows as it is.
enum SuiteValues {
    /// What a document that is not a JSON object of values says.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// The bytes of each value whose key is `wanted`, sliced out of the document at `path`;
    /// none if there is no document.
    /// - Throws: `Malformed` if the document is not a JSON object (or not UTF-8).
    static func read(_ path: String, wanted: Set<String>) throws -> [String: [UInt8]] {
        guard let bytes = Files.bytes(path) else { return [:] }
        guard String(validating: bytes, as: UTF8.self) != nil else { throw Malformed(description: "not UTF-8") }
        var scanner = Scanner(bytes: bytes)
        return try scanner.values(wanted: wanted)
    }

    /// A JSON scanner that finds where each value ends, without decoding it.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func values(wanted: Set<String>) throws -> [String: [UInt8]] {
            var values: [String: [UInt8]] = [:]
            skipSpace()
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if peek == UInt8(ascii: "}") { return values }
            while true {
                let keyStart = index
                try skipString()
                let key = try JSONDecoder().decode(String.self, from: Data(bytes[keyStart..<index]))
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let valueStart = index
                try skipValue()
                if wanted.contains(key) { values[key] = Array(bytes[valueStart..<index]) }
                skipSpace()
                if peek == UInt8(ascii: "}") { return values }
                try expect(UInt8(ascii: ","))
                skipSpace()
            }
        }

        private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        private mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        private mutating func expect(_ byte: UInt8) throws {
            guard peek == byte else { throw malformed("expected '\(Character(Unicode.Scalar(byte)))'") }
            index += 1
        }

        private func malformed(_ what: String) -> Malformed {
            Malformed(description: "\(what) at byte \(index) of \(bytes.count)")
        }

        private mutating func skipValue() throws {
            switch peek {
            case UInt8(ascii: "\""):
                try skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = peek == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                let isObject = close == UInt8(ascii: "}")
                index += 1
                skipSpace()
                if peek == close {
                    index += 1
                    return
                }
                while true {
                    if isObject {
                        try skipString()
                        skipSpace()
                        try expect(UInt8(ascii: ":"))
                        skipSpace()
                    }
                    try skipValue()
                    skipSpace()
                    if peek == close {
                        index += 1
                        return
                    }
                    try expect(UInt8(ascii: ","))
                    skipSpace()
                }
            case UInt8(ascii: "t"):
                try skipLiteral("true")
            case UInt8(ascii: "f"):
                try skipLiteral("false")
            case UInt8(ascii: "n"):
                try skipLiteral("null")
            case UInt8(ascii: "N"):
                try skipLiteral("NaN")
            case UInt8(ascii: "I"):
                try skipLiteral("Infinity")
            case .some(let byte) where byte == UInt8(ascii: "-") || isDigit(byte):
                try skipNumber()
            default:
                throw malformed("expected a value")
            }
        }

        private mutating func skipString() throws {
            try expect(UInt8(ascii: "\""))
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return
                case UInt8(ascii: "\\"):
                    guard peek != nil else { break }
                    index += 1
                case 0..<0x20:
                    throw malformed("a control character in a string")
                default:
                    break
                }
            }
            throw malformed("an unterminated string")
        }

        private mutating func skipLiteral(_ literal: String) throws {
            let literal = Array(literal.utf8)
            guard bytes[index...].starts(with: literal) else { throw malformed("expected \(literal)") }
            index += literal.count
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`, or `-Infinity`.
        private mutating func skipNumber() throws {
            if peek == UInt8(ascii: "-") {
                index += 1
                if peek == UInt8(ascii: "I") { return try skipLiteral("Infinity") }
            }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else {
                try skipDigits()
            }
            if peek == UInt8(ascii: "."), index + 1 < bytes.count, isDigit(bytes[index + 1]) {
                index += 1
                try skipDigits()
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                let mark = index
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                if let byte = peek, isDigit(byte) { try skipDigits() } else { index = mark }
            }
        }

        private mutating func skipDigits() throws {
            guard let byte = peek, isDigit(byte) else { throw malformed("expected a digit") }
            while let byte = peek, isDigit(byte) { index += 1 }
        }

        private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    }
}
