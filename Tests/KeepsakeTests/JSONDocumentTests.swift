import Foundation
import Testing

@testable import Keepsake

/// The tape parser (`JSONDocument`) against the tree parser (`JSONParser.parse`): the same
/// inputs accepted and refused, with the same error, and the same values read.
@Suite("JSON document (the tape)")
struct JSONDocumentTests {
    /// Documents that exercise every kind of token, escapes, non-ASCII text, and objects on both
    /// sides of the duplicate check's threshold.
    static let valid: [String] = [
        #"{}"#, #"[]"#, #"  {"a" : [1, -2.5e+3, 0, true, false, null, "x"]}  "#, #""\u00e9\ud83d\ude00\n\"""#,
        "0", "-0.0", "1E9", #"{"a":{"b":{"c":[[]]}}}"#, #"{"":1,"a":""}"#, #"{"caf\u00e9":1,"cafe\u0301":2}"#,
        #"{"a\nb":"x\ty","é":"ü","\u0000":null}"#,
        #"{"data":{"age":41,"name":"Ann"},"schema":"Person","version":0}"#,
        "{" + (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}",
        "{" + (0..<20).map { "\"k\\u00\(String(format: "%02x", 0x41 + $0))\":[\($0)]" }.joined(separator: ",") + "}",
        #"[{"a":[{"b":[1,{"c":"d"}]}]},"e",[[],{}]]"#, #""\\\/\b\f\n\r\t""#, "  \n\t123\r\n",
        #"{"big":123456789012345678901234567890,"neg":-9223372036854775808,"frac":0.5e-3}"#
    ]

    static let invalid: [String] = [
        "", "{", #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "+1", "tru", "nul", #"{"a" 1}"#, #"{a:1}"#,
        "\"tab\there\"", #""\x""#, #""\ud800""#, #""\udc00x""#, #"{"a":1,"a":2}"#, "1 2", "[1]]", "NaN",
        #"{"a\u0062":1,"ab":2}"#, #"{"ab":1,"a\u0062":2}"#,
        "{" + (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + ",\"k7\":0}",
        #"{"é":1,"é":2}"#, #"{"caf\u00e9":1,"café":2}"#, #""unterminated"#, #"{"a":"b"#,
        "[" + String(repeating: "[", count: 300)
    ]

    @Test("accepts what the tree parser accepts, and reads the same values", arguments: valid)
    func validDocuments(_ text: String) throws {
        try expectAgreement(Data(text.utf8), accepted: true)
    }

    @Test("refuses what the tree parser refuses, with the same error", arguments: invalid)
    func invalidDocuments(_ text: String) throws {
        try expectAgreement(Data(text.utf8), accepted: false)
    }

    @Test("invalid UTF-8 and nesting beyond the limit are refused as the tree parser refuses them")
    func hostileBytes() throws {
        try expectAgreement(Data([0x22, 0xC3, 0x28, 0x22]), accepted: false)
        try expectAgreement(Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]), accepted: false)
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        try expectAgreement(Data(deep.utf8), accepted: false)
        let limit = String(repeating: "[", count: 255) + String(repeating: "]", count: 255)
        try expectAgreement(Data(limit.utf8), accepted: true)
        let over = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        try expectAgreement(Data(over.utf8), accepted: false)
    }

    @Test("random mutations of records: the two parsers agree on every one", arguments: 0..<4)
    func mutations(seed: UInt64) throws {
        var random = SplitMix(seed: seed &+ 77)
        let alphabet = Array(#"{}[]":,\ "abe0159.-+eEtrufalsn\u"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF, 0x0A]
        var accepted = 0
        for _ in 0..<2_000 {
            var bytes = Array(Self.valid[Int(random.next() % UInt64(Self.valid.count))].utf8)
            for _ in 0..<(1 + random.next() % 3) {
                let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count + 1))
                let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
                switch random.next() % 3 {
                case 0: bytes.insert(byte, at: position)
                case 1 where position < bytes.count: bytes[position] = byte
                default: if position < bytes.count { bytes.remove(at: position) }
                }
            }
            if try expectAgreement(Data(bytes), accepted: nil) { accepted += 1 }
        }
        // Both outcomes are exercised, so the agreement means something either way.
        #expect(accepted > 20)
        #expect(accepted < 1_990)
    }

    @Test("a slice of a larger buffer parses on its own bytes (a defaults suite's member)")
    func slice() throws {
        let suite = Data(#"xx{"a":[1,"b"]}yy"#.utf8)
        let member = suite[suite.startIndex + 2..<suite.endIndex - 2]
        let document = try JSONDocument.parse(member)
        #expect(document.root["a"]?.count == 2)
        var written = Data()
        try document.root.value().write(to: &written)
        #expect(String(decoding: written, as: UTF8.self) == #"{"a":[1,"b"]}"#)
    }

    @Test("member names are found by their exact bytes, escaped or not; numbers read exactly")
    func lookups() throws {
        let document = try JSONDocument.parse(Data(#"{"caf\u00e9":1,"cafe\u0301":2,"n":-12,"x":1e2,"s":"a\"b"}"#.utf8))
        let root = document.root
        #expect(root["café"]?.numberText == "1")
        #expect(root["cafe\u{301}"]?.numberText == "2")
        #expect(root["cafe"] == nil)
        #expect(root["n"]?.plainInteger(Int.self) == -12)
        #expect(root["n"]?.plainInteger(UInt.self) == nil, "a negative number is not read as unsigned")
        #expect(root["x"]?.plainInteger(Int.self) == nil, "an exponent is left to the text")
        #expect(root["s"]?.string == "a\"b")
        #expect(root.keys == ["café", "cafe\u{301}", "n", "x", "s"])
        #expect(Array(root.lazyKeys) == root.keys)
    }

    @Test("integers decode exactly at the edges of their types, and out of range is an error")
    func integerEdges() throws {
        struct Edges: Decodable {
            let min: Int64
            let max: Int64
            let byte: UInt8
            let big: UInt64
            let exponent: Int
            let integral: Int
        }
        let text =
            #"{"min":-9223372036854775808,"max":9223372036854775807,"byte":255,"big":18446744073709551615,"exponent":1e3,"integral":2.0}"#
        let decoded = try JSONDocumentDecoder.decode(Edges.self, from: JSONDocument.parse(Data(text.utf8)).root)
        #expect(decoded.min == .min)
        #expect(decoded.max == .max)
        #expect(decoded.byte == 255)
        #expect(decoded.big == .max)
        #expect(decoded.exponent == 1000)
        #expect(decoded.integral == 2)
        struct Small: Decodable { let byte: UInt8 }
        for number in ["256", "-1", "1.5", "99999999999999999999"] {
            #expect(throws: DecodingError.self) {
                try JSONDocumentDecoder.decode(
                    Small.self, from: JSONDocument.parse(Data(#"{"byte":\#(number)}"#.utf8)).root)
            }
        }
    }

    /// Parses `bytes` with both parsers and checks they agree: both accept (and read the same
    /// value) or both refuse (with the same offset and reason). `accepted`, when given, is what
    /// both must do. Returns whether they accepted.
    @discardableResult
    private func expectAgreement(_ bytes: Data, accepted: Bool?) throws -> Bool {
        let tree: Result<JSONValue, JSONSyntaxError> = Result { () throws(JSONSyntaxError) in
            try JSONParser.parse(bytes)
        }
        let tape: Result<JSONDocument, JSONSyntaxError> = Result { () throws(JSONSyntaxError) in
            try JSONDocument.parse(bytes)
        }
        let shown = String(decoding: bytes.prefix(80), as: UTF8.self)
        switch (tree, tape) {
        case let (.success(value), .success(document)):
            if let accepted { #expect(accepted, "accepted: \(shown)") }
            var fromTree = Data()
            value.write(to: &fromTree)
            var fromTape = Data()
            try document.root.value().write(to: &fromTape)
            #expect(fromTree == fromTape, "\(shown)")
            #expect(document.tokens.last.map { Int($0.next) } == document.tokens.count)
            #expect(document.tokens.first.map { Int($0.next) } == document.tokens.count)
            return true
        case let (.failure(one), .failure(two)):
            if let accepted { #expect(!accepted, "refused: \(shown)") }
            #expect(one.offset == two.offset, "\(shown)")
            #expect(one.reason == two.reason, "\(shown)")
            return false
        default:
            Issue.record("the parsers disagree on \(shown): tree \(tree), tape \(tape)")
            return false
        }
    }
}
