import Foundation
import Testing

@testable import Keepsake

@Suite("JSON parser")
struct JSONParserTests {
    @Test(
        "valid documents parse",
        arguments: [
            #"{}"#, #"[]"#, #"  {"a" : [1, -2.5e+3, 0, true, false, null, "x"]}  "#, #""\u00e9\ud83d\ude00\n\"""#,
            "0", "-0.0", "1E9", #"{"a":{"b":{"c":[[]]}}}"#
        ])
    func valid(_ text: String) throws {
        _ = try JSONParser.parse(Data(text.utf8))
    }

    @Test(
        "invalid documents are rejected",
        arguments: [
            "", "{", #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "+1", "tru", "nul", #"{"a" 1}"#, #"{a:1}"#,
            "\"tab\there\"", #""\x""#, #""\ud800""#, #""\udc00x""#, #"{"a":1,"a":2}"#, "1 2", "[1]]", "NaN"
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
        struct N: Decodable {
            let i: Int
            let big: Int64
            let d: Double
            let e: Int
        }
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
        let json =
            #"{"name":"n","nickname":null,"scores":[1.5,2],"nested":{"a":[1,2]},"blob":"AQID","flag":false,"url":"https://example.com/x"}"#
        let ours = try JSONValueDecoder.decode(Sample.self, from: JSONParser.parse(Data(json.utf8)))
        let foundation = try JSONDecoder().decode(Sample.self, from: Data(json.utf8))
        #expect(ours == foundation)
    }
}

@Suite("ISO 8601 dates")
struct ISO8601Tests {
    /// A date from seconds since 2001-01-01 (a `Date`'s own representation, so tests are exact).
    func date(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

    /// The failure's reason, or `nil` when `body` does not throw.
    func reason(_ body: () throws(ISO8601.Failure) -> Date) -> String? {
        do throws(ISO8601.Failure) {
            _ = try body()
            return nil
        } catch {
            return error.reason
        }
    }

    @Test(
        "dates that are whole milliseconds are written in UTC with three fraction digits",
        arguments: [
            (0.0, "2001-01-01T00:00:00.000Z"),
            (-978_307_200.0, "1970-01-01T00:00:00.000Z"),
            (721_692_800.25, "2023-11-14T22:13:20.250Z"),
            (-26_524_800.0, "2000-02-29T00:00:00.000Z"),
            (-978_393_600.5, "1969-12-30T23:59:59.500Z"),
            (700_000_000.123, "2023-03-08T20:26:40.123Z"),
            (-63_113_904_000.0, "0001-01-01T00:00:00.000Z"),
            (252_423_993_599.0, "9999-12-31T23:59:59.000Z")
        ])
    func format(_ seconds: Double, _ text: String) throws {
        #expect(try ISO8601.string(from: date(seconds)) == text)
        #expect(try ISO8601.date(from: text).timeIntervalSinceReferenceDate == seconds)
    }

    @Test(
        "a date finer than a millisecond is written with the digits it needs, and reads back bit for bit",
        arguments: [
            (700_000_000.1234567, "2023-03-08T20:26:40.1234567Z"),
            (0.000_123_456, "2001-01-01T00:00:00.000123456Z"),
            (-0.75, "2000-12-31T23:59:59.250Z"),
            (-0.000_1, "2000-12-31T23:59:59.9999Z"),
            (252_423_993_599.999_97, "9999-12-31T23:59:59.99997Z")
        ])
    func fineDates(_ seconds: Double, _ text: String) throws {
        #expect(try ISO8601.string(from: date(seconds)) == text)
        #expect(try ISO8601.date(from: text).timeIntervalSinceReferenceDate == seconds)
    }

    @Test("every representable date in the years 0001–9999 round-trips exactly, the extremes included")
    func exactRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        var samples: [Double] = [
            0, -0.0, 0.001.nextUp, -0.001.nextDown, 1e-3, -1e-3, ISO8601.earliest,
            ISO8601.end.nextDown,
            ISO8601.earliest.nextUp, 1.0.nextUp, -1.0.nextDown, Date().timeIntervalSinceReferenceDate
        ]
        for _ in 0..<2000 { samples.append(Double.random(in: ISO8601.earliest..<ISO8601.end, using: &generator)) }
        for _ in 0..<500 { samples.append(Double.random(in: -1...1, using: &generator)) }
        for seconds in samples {
            let text = try ISO8601.string(from: date(seconds))
            #expect(try ISO8601.date(from: text).timeIntervalSinceReferenceDate == seconds, "\(seconds) → \(text)")
            #expect(text.utf8.count >= 24 && text.hasSuffix("Z"))
        }
    }

    @Test(
        "a date needing more than 20 digits after the seconds' point (within a millisecond of 2001) cannot be written",
        arguments: [Double.leastNonzeroMagnitude, -Double.leastNonzeroMagnitude, 1e-300, -1e-300, 1e-21])
    func tooFine(_ seconds: Double) {
        let found = reason { () throws(ISO8601.Failure) in
            _ = try ISO8601.string(from: date(seconds))
            return date(seconds)
        }
        #expect(found?.contains("more than 20 digits") == true)
    }

    @Test("the last instant of 9999 is written in 9999, never wrapped to year 0000")
    func lastInstant() throws {
        let read = try ISO8601.date(from: "9999-12-31T23:59:59.9996Z")
        #expect(try ISO8601.string(from: read) == "9999-12-31T23:59:59.9996Z")
        #expect(try ISO8601.string(from: date(ISO8601.end.nextDown)).hasPrefix("9999-12-31T23:59:59.99997"))
    }

    @Test(
        "a date outside the years 0001–9999 or not finite cannot be written",
        arguments: [
            Double.infinity, -Double.infinity, Double.nan, 1e300, -1e12, 1e12, ISO8601.end, ISO8601.earliest.nextDown
        ])
    func unwritable(_ seconds: Double) {
        #expect(throws: ISO8601.Failure.self) { try ISO8601.string(from: date(seconds)) }
        #expect(throws: ISO8601.Failure.self) { try ISO8601.millisecondString(from: date(seconds)) }
    }

    @Test("milliseconds for older readers are rounded down, never into the next year")
    func milliseconds() throws {
        #expect(try ISO8601.millisecondString(from: date(ISO8601.end.nextDown)) == "9999-12-31T23:59:59.999Z")
        #expect(try ISO8601.millisecondString(from: date(-0.0001)) == "2000-12-31T23:59:59.999Z")
        #expect(try ISO8601.millisecondString(from: date(700_000_000.1234567)) == "2023-03-08T20:26:40.123Z")
    }

    @Test(
        "offsets, missing fractions and long fractions are read exactly",
        arguments: [
            ("2023-11-14T22:13:20Z", 721_692_800.0),
            ("2023-11-15T00:13:20+02:00", 721_692_800.0),
            ("2023-11-14T20:13:20-0200", 721_692_800.0),
            ("2023-11-14t22:13:20z", 721_692_800.0),
            ("2023-11-14T22:13:20.123456Z", 721_692_800.123456),
            ("2023-11-14T22:13:20.1234567890123456789012345Z", 721_692_800.1234567890123456789012345),
            ("1969-12-31T23:59:59.25Z", -978_307_200.75),
            ("2024-02-29T00:00:00Z", 730_857_600.0),
            ("2000-02-29T00:00:00Z", -26_524_800.0)
        ])
    func parse(_ text: String, _ seconds: Double) throws {
        #expect(try ISO8601.date(from: text).timeIntervalSinceReferenceDate == seconds)
    }

    @Test(
        "impossible calendar dates, year 0, years past 9999 and bad offsets are refused with the reason",
        arguments: [
            ("2023-02-30T00:00:00Z", "day 30 does not exist"),
            ("2023-02-29T00:00:00Z", "day 29 does not exist"),
            ("1900-02-29T00:00:00Z", "day 29 does not exist"),
            ("2023-04-31T00:00:00Z", "day 31 does not exist"),
            ("2023-13-14T22:13:20Z", "month 13 does not exist"),
            ("2023-00-14T22:13:20Z", "month 0 does not exist"),
            ("2023-11-00T22:13:20Z", "day 0 does not exist"),
            ("2023-11-14T24:00:00Z", "hour 24 does not exist"),
            ("2023-11-14T22:60:00Z", "minute 60 does not exist"),
            ("2023-11-14T23:59:60Z", "second 60 cannot be kept"),
            ("0000-01-01T00:00:00Z", "year 0 does not exist"),
            ("10000-01-01T00:00:00Z", "more than four digits"),
            ("99999-01-01T00:00:00Z", "more than four digits"),
            ("2023-11-14T22:13:20+24:00", "offset is out of range"),
            ("2023-11-14T22:13:20-00:60", "offset is out of range"),
            ("9999-12-31T23:00:00-05:00", "outside the years 0001–9999"),
            ("0001-01-01T00:00:00+01:00", "outside the years 0001–9999"),
            ("9999-12-31T23:59:59.99999999999999999Z", "outside the years 0001–9999"),
            ("2023-11-14T22:13:20." + String(repeating: "1", count: 1001) + "Z", "more than 1000 digits"),
            ("2023-11-14", "not an ISO 8601 date-time"),
            ("2023-11-14T22:13:20", "not an ISO 8601 date-time"),
            ("2023-11-14T22:13:20.Z", "not an ISO 8601 date-time"),
            ("2023-11-14T22:13:20Zjunk", "not an ISO 8601 date-time"),
            ("-2023-11-14T22:13:20Z", "not an ISO 8601 date-time"),
            ("yesterday", "not an ISO 8601 date-time")
        ])
    func refused(_ text: String, _ expected: String) {
        let found = reason { () throws(ISO8601.Failure) in try ISO8601.date(from: text) }
        #expect(found?.contains(expected) == true, "\(found ?? "accepted")")
    }

    @Test(
        "numbers of seconds since 2001 are read exactly, and overflow or out-of-range numbers are refused",
        arguments: [
            ("700000000.123", 700_000_000.123 as Double?),
            ("-63113904000", ISO8601.earliest),
            ("0", 0),
            ("1e400", nil), ("-1e400", nil), ("1e300", nil), ("-1e12", nil), ("252423993600", nil),
            ("-63113904000.001", nil)
        ])
    func numeric(_ text: String, _ seconds: Double?) {
        let result = Result { () throws(ISO8601.Failure) in try ISO8601.date(secondsSinceReference: text) }
        #expect((try? result.get().timeIntervalSinceReferenceDate) == seconds)
    }
}

@Suite("Device identity")
struct DeviceIdentityTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    // RFC 4231 cases 2 (a short key), 4 (a 25-byte key), 6 and 7 (131-byte keys, hashed first).
    @Test(
        "HMAC-SHA-256 (libsodium) matches RFC 4231",
        arguments: [
            (
                [UInt8]("Jefe".utf8), [UInt8]("what do ya want for nothing?".utf8),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            ),
            (
                [UInt8](1...25), [UInt8](repeating: 0xcd, count: 50),
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
            ),
            (
                [UInt8](repeating: 0xaa, count: 131),
                [UInt8]("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
            (
                [UInt8](repeating: 0xaa, count: 131),
                [UInt8](
                    ("This is a test using a larger than block-size key and a larger t"
                        + "han block-size data. The key needs to be hashed before being use"
                        + "d by the HMAC algorithm.").utf8),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
            )
        ])
    func hmacVectors(key: [UInt8], message: [UInt8], expected: String) {
        #expect(Self.hex(HMACSHA256.authenticationCode(key: key, message: message)) == expected)
    }

    // Identities computed by the hand-written SHA-256 that Keepsake used before libsodium (and
    // checked against Python's hmac module): devices keep the identities already stored in records.
    @Test(
        "identities derived before the move to libsodium are unchanged",
        arguments: [
            ("com.example.notes", "0123456789abcdef0123456789abcdef", "68eba81035db4ec32f5954424ef4316a"),
            ("com.keepsake.sample", "5f2a8c0e1d3b4a6f9e7d8c2b1a0f3e4d", "06c2e7ad5ef1b1aed6faa4685b761181"),
            (
                String(repeating: "k", count: 100), "b1946ac92492d2347c6235b4d2611184",
                "5c15b08748878c73ca285e6a561b2a59"
            ),
            ("", "x", "96aba9c9ca6f2ba5e10720d79851e994")
        ])
    func storedIdentitiesStayValid(appID: String, machineID: String, identity: String) {
        #expect(DeviceIdentity.derived(appID: appID, machineID: machineID) == identity)
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
