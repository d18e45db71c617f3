import Foundation
@testable import Keepsake
import Testing

@Suite("JSON parser")
struct JSONParserTests {
    @Test("valid documents parse", arguments: [
        #"{}"#, #"[]"#, #"  {"a" : [1, -2.5e+3, 0, true, false, null, "x"]}  "#, #""\u00e9\ud83d\ude00\n\"""#,
        "0", "-0.0", "1E9", #"{"a":{"b":{"c":[[]]}}}"#,
    ])
    func valid(_ text: String) throws {
        _ = try JSONParser.parse(Data(text.utf8))
    }

    @Test("invalid documents are rejected", arguments: [
        "", "{", #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "+1", "tru", "nul", #"{"a" 1}"#, #"{a:1}"#,
        "\"tab\there\"", #""\x""#, #""\ud800""#, #""\udc00x""#, #"{"a":1,"a":2}"#, "1 2", "[1]]", "NaN",
    ])
    func invalid(_ text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Data(text.utf8)) }
    }

    @Test("invalid UTF-8 inside a string is rejected")
    func invalidUTF8() {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Data([0x22, 0xC3, 0x28, 0x22])) }
    }

    @Test("nesting deeper than the limit is rejected rather than overflowing the stack")
    func deepNesting() {
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Data(deep.utf8)) }
    }

    @Test("escapes decode to the right characters")
    func escapes() throws {
        guard case let .string(text) = try JSONParser.parse(Data(#""a\/b\\c\u00e9\ud83d\ude00""#.utf8)) else {
            Issue.record("not a string")
            return
        }
        #expect(text == "a/b\\cé😀")
    }

    @Test("numbers keep their literal text and decode exactly")
    func numbers() throws {
        struct N: Decodable { let i: Int; let big: Int64; let d: Double; let e: Int }
        let value = try JSONParser.parse(Data(#"{"i":-42,"big":9007199254740993,"d":0.1,"e":1e3}"#.utf8))
        let decoded = try JSONValueDecoder.decode(N.self, from: value)
        #expect(decoded.i == -42)
        #expect(decoded.big == 9_007_199_254_740_993)
        #expect(decoded.d == 0.1)
        #expect(decoded.e == 1000)
    }

    @Test("the decoder reports the coding path of a mismatch")
    func decoderPath() throws {
        struct Inner: Decodable { let n: Int }
        struct Outer: Decodable { let items: [Inner] }
        let value = try JSONParser.parse(Data(#"{"items":[{"n":1},{"n":"two"}]}"#.utf8))
        #expect { try JSONValueDecoder.decode(Outer.self, from: value) } throws: { error in
            guard case let .typeMismatch(_, context) = error as? DecodingError else { return false }
            return context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["items", "1", "n"]
        }
    }

    @Test("optionals, nested containers and base64 data decode like JSONDecoder")
    func decoderMatchesFoundation() throws {
        struct Sample: Codable, Equatable {
            let name: String
            let nickname: String?
            let missing: Int?
            let scores: [Double]
            let nested: [String: [Int]]
            let blob: Data
            let flag: Bool
            let url: URL
        }
        let json = #"{"name":"n","nickname":null,"scores":[1.5,2],"nested":{"a":[1,2]},"blob":"AQID","flag":false,"url":"https://example.com/x"}"#
        let ours = try JSONValueDecoder.decode(Sample.self, from: JSONParser.parse(Data(json.utf8)))
        let foundation = try JSONDecoder().decode(Sample.self, from: Data(json.utf8))
        #expect(ours == foundation)
    }
}

@Suite("ISO 8601 dates")
struct ISO8601Tests {
    @Test("dates are written in UTC with milliseconds", arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1_700_000_000.25, "2023-11-14T22:13:20.250Z"),
        (951_782_400.0, "2000-02-29T00:00:00.000Z"),
        (-86_400.5, "1969-12-30T23:59:59.500Z"),
        (4_102_444_799.999, "2099-12-31T23:59:59.999Z"),
    ])
    func format(_ seconds: Double, _ text: String) {
        #expect(ISO8601.string(from: Date(timeIntervalSince1970: seconds)) == text)
        #expect(ISO8601.date(from: text).map { abs($0.timeIntervalSince1970 - seconds) < 0.000_5 } == true)
    }

    @Test("offsets, missing fractions and long fractions are read", arguments: [
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-15T00:13:20+02:00", 1_700_000_000.0),
        ("2023-11-14T20:13:20-0200", 1_700_000_000.0),
        ("2023-11-14T22:13:20.123456Z", 1_700_000_000.123456),
    ])
    func parse(_ text: String, _ seconds: Double) throws {
        let date = try #require(ISO8601.date(from: text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_001)
    }

    @Test("malformed dates are rejected", arguments: [
        "2023-11-14", "2023-11-14T22:13:20", "2023-13-14T22:13:20Z", "2023-11-14T25:13:20Z", "2023-11-14T22:13:20.Z",
        "2023-11-14T22:13:20Zjunk", "yesterday",
    ])
    func malformed(_ text: String) {
        #expect(ISO8601.date(from: text) == nil)
    }

    @Test("a written date reads back and writes the same text")
    func stable() {
        for seconds in stride(from: -1_000_000.0, to: 2_000_000_000, by: 123_456_789.0137) {
            let text = ISO8601.string(from: Date(timeIntervalSince1970: seconds))
            #expect(ISO8601.date(from: text).map(ISO8601.string(from:)) == text)
        }
    }
}

@Suite("Device identity")
struct DeviceIdentityTests {
    @Test("HMAC-SHA-256 matches RFC 4231 test case 2")
    func hmacVector() {
        let mac = SHA256.hmac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(mac.map { String(format: "%02x", $0) }.joined()
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("SHA-256 of a multi-block message matches the FIPS 180 example")
    func shaVector() {
        let digest = SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
        #expect(digest.map { String(format: "%02x", $0) }.joined()
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("the identity is app-specific, stable, and does not contain the machine id")
    func derived() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/machine-id"
        try bytes("0123456789abcdef0123456789abcdef\n").write(to: URL(fileURLWithPath: path))
        let first = try DeviceIdentity.derived(appID: "com.example.a", machineIDPath: path)
        #expect(first == DeviceIdentity.derived(appID: "com.example.a", machineID: "0123456789abcdef0123456789abcdef"))
        #expect(first.count == 32)
        #expect(first != (try DeviceIdentity.derived(appID: "com.example.b", machineIDPath: path)))
        #expect(!first.contains("0123456789abcdef"))
        #expect { try DeviceIdentity.derived(appID: "a", machineIDPath: directory + "/absent") } throws: { error in
            (error as? KeepsakeError)?.code == .unavailable
        }
    }
}
