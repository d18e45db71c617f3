import Foundation
import Testing

@testable import Keepsake

@Suite("The claimed version of a record that does not parse")
struct VersionClaimTests {
    @Test(
        "the highest top-level version is read through what a strict parser refuses",
        arguments: [
            (#"{"version":5,"data":{"x":{"k":1,"k":2}}}"#, 5.0),
            // Duplicate version keys: the highest.
            (#"{"version":2,"version":7,"version":5}"#, 7),
            (#"{"version":-1}"#, -1),
            (#"{"version":5.5,"data":NaN}"#, 5.5),
            // Escapes: in a name, in a string that holds a quote, a lone surrogate, an unknown escape.
            (#"{"vers\u0069on":4}"#, 4),
            (#"{"a":"\"version\":9","version":1}"#, 1),
            (#"{"\ud800":"\udc00\ud800x","version":2}"#, 2),
            (#"{"a":"\x\q","version":3}"#, 3),
            // A control character inside a string.
            ("{\"a\":\"\u{01}\n\",\"version\":6}", 6),
            // A JSON string holding JSON: the members of the text it holds.
            (#""{\"schema\":\"Person\",\"version\":9,\"data\":{\"a\":1,\"a\":2}}""#, 9),
            (#"  "{ \"version\" : 3 }"  "#, 3),
            // Nested versions are not the record's.
            (#"{"data":{"version":99},"version":4}"#, 4),
            // Unterminated after the claim: the claim stands.
            (#"{"version":8,"data":"abc"#, 8),
            (#"{"version":8,"data":[[[{"#, 8)
        ])
    func highest(_ stored: String, _ expected: Double) {
        #expect(VersionClaim.highest(in: Data(stored.utf8)) == expected, "\(stored)")
    }

    @Test(
        "no claim where none can be read",
        arguments: [
            "", "not json", "[1,2]", #"{"version":"9"}"#, #"{"version":1e999}"#, #"{"version":+5}"#,
            #"{"data":{"version":9}}"#,
            // An unterminated string swallows what follows.
            #"{"a":"abc,"version":2}"#, #""{\"version\":2}"#,
            // Cut inside an escape.
            #"{"a":"\"#, #"{"\u12"#, #"{"\ud800\u12"#, #""\"#
        ])
    func none(_ stored: String) {
        #expect(VersionClaim.highest(in: Data(stored.utf8)) == nil, "\(stored)")
    }

    @Test("the schema is read when the record names exactly one")
    func schema() {
        #expect(VersionClaim.schema(in: Data(#"{"schema":"Person","version":9,"a":1,"a":2}"#.utf8)) == "Person")
        #expect(VersionClaim.schema(in: Data(#"{"schema":"Person","schema":"Person"}"#.utf8)) == "Person")
        #expect(VersionClaim.schema(in: Data(#"{"schema":"Pers\u006fn"}"#.utf8)) == "Person")
        #expect(VersionClaim.schema(in: Data(#""{\"schema\":\"Person\"}""#.utf8)) == "Person")
        #expect(VersionClaim.schema(in: Data(#"{"schema":"Person","schema":"Other"}"#.utf8)) == nil)
        #expect(VersionClaim.schema(in: Data(#"{"schema":7}"#.utf8)) == nil)
        #expect(VersionClaim.schema(in: Data(#"{"schema":"Pers"#.utf8)) == nil)
    }

    @Test("deep nesting is skipped without recursion, closed or not")
    func deepNesting() {
        let depth = 200_000
        let closed =
            #"{"data":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            + #","version":7}"#
        #expect(VersionClaim.highest(in: Data(closed.utf8)) == 7)
        let objects =
            #"{"data":"# + String(repeating: #"{"a":"#, count: depth) + "1"
            + String(repeating: "}", count: depth) + #","version":3}"#
        #expect(VersionClaim.highest(in: Data(objects.utf8)) == 3)
        let open = #"{"version":2,"data":"# + String(repeating: "[{", count: depth)
        #expect(VersionClaim.highest(in: Data(open.utf8)) == 2)
        // Never closed, the claim after it is inside the value.
        #expect(
            VersionClaim.highest(
                in: Data(
                    (#"{"data":"# + String(repeating: "[", count: depth)
                        + #","version":7}"#).utf8)) == nil)
    }

    @Test("large inputs take linear time: many members, long strings of escapes")
    func linear() {
        let members = 200_000
        var many = "{"
        for index in 0..<members { many += #""k\#(index)":[1,"x"],"# }
        many += #""version":3}"#
        #expect(VersionClaim.highest(in: Data(many.utf8)) == 3)
        let escapes = #"{"a":""# + String(repeating: #"\\\"\u00e9"#, count: members) + #"","version":4}"#
        #expect(VersionClaim.highest(in: Data(escapes.utf8)) == 4)
        let wrapped = #""{\"a\":\""# + String(repeating: #"\\\\"#, count: members) + #"\",\"version\":5}""#
        #expect(VersionClaim.highest(in: Data(wrapped.utf8)) == 5)
    }

    @Test("random bytes and cut records never trap")
    func hostileBytes() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let alphabet = Array(#"{}[]",:\u0123456789abcdefversionschema-+.eE "#.utf8) + [0x00, 0x0A, 0xFF, 0xED]
        for _ in 0..<2_000 {
            let count = Int(next() % 64)
            let bytes = (0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            _ = VersionClaim.highest(in: Data(bytes))
            _ = VersionClaim.schema(in: Data(bytes))
        }
        let record = Data(#""{\"schema\":\"Person\",\"version\":9,\"data\":{\"a\":\"\\u00e9\\\"\"}}""#.utf8)
        for end in 0...record.count {
            _ = VersionClaim.highest(in: record.prefix(end))
            _ = VersionClaim.schema(in: record.prefix(end))
        }
        #expect(VersionClaim.highest(in: record) == 9)
    }
}
