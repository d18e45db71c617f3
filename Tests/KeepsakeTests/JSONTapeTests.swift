import Foundation
import Migrations
import Testing

@testable import Keepsake

/// The tape a stored record is parsed into (`JSONTape`) against the tree parser it replaces on
/// the read path: the same documents accepted, the same values read, the same errors.
@Suite("JSON tape")
struct JSONTapeTests {
    /// What parsing `bytes` gives: the value written out compactly, or the error's offset and reason.
    private func outcome(tree bytes: Data) -> String {
        do throws(JSONSyntaxError) {
            var out = Data()
            try JSONParser.parse(bytes).write(to: &out)
            return String(decoding: out, as: UTF8.self)
        } catch {
            return "error at \(error.offset): \(error.reason)"
        }
    }

    /// The same for the tape: its value built (``JSONTape/value(at:)``), and seen through
    /// `TreeNode`'s accessors alone, which must agree.
    private func outcome(tape bytes: Data) -> String {
        do throws(JSONSyntaxError) {
            let tape = try JSONTape.parse(bytes)
            var built = Data()
            tape.value(at: 0).write(to: &built)
            var seen = Data()
            viewed(.tape(tape, 0)).write(to: &seen)
            guard built == seen else { return "built and viewed differ" }
            return String(decoding: built, as: UTF8.self)
        } catch {
            return "error at \(error.offset): \(error.reason)"
        }
    }

    @Test(
        "documents are accepted, read and refused exactly as the tree parser does",
        arguments: [
            #"{}"#, #"[]"#, #"  {"a" : [1, -2.5e+3, 0, true, false, null, "x"]}  "#, #""\u00e9\ud83d\ude00\n\"""#,
            "0", "-0.0", "1E9", #"{"a":{"b":{"c":[[]]}}}"#, #"{"":1,"b":""}"#, #"{"é":1,"e\u0301":2}"#,
            #"{"a\"b":1,"a\\b":[{"c":null}]}"#,
            "", "{", #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "+1", "tru", "nul", #"{"a" 1}"#, #"{a:1}"#,
            "\"tab\there\"", #""\x""#, #""\ud800""#, #""\udc00x""#, #"{"a":1,"a":2}"#, "1 2", "[1]]", "NaN",
            #"{"":1,"":2}"#, #"{"a":1,"\u0061":2}"#, #"{"\u0061":1,"a":2}"#, #"{"é":1,"\u00e9":2}"#,
            #"{"x":{"a":1},"a":{"a":2,"b":3,"a":4}}"#, #"{"a":1 "b":2}"#, #"["a" "b"]"#, #"{"a":}"#
        ])
    func sameAsTheTree(_ text: String) {
        let bytes = Data(text.utf8)
        #expect(outcome(tape: bytes) == outcome(tree: bytes))
    }

    @Test("invalid UTF-8, a control character and trailing bytes are refused at the same offset")
    func sameRefusals() {
        for bytes in [
            Data([0x22, 0xC3, 0x28, 0x22]), Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]),
            Data("\"a\u{1}\"".utf8), Data("{\"a\":1}x".utf8)
        ] {
            let tape = outcome(tape: bytes)
            #expect(tape.hasPrefix("error at"))
            #expect(tape == outcome(tree: bytes))
        }
    }

    @Test("duplicate names are found among many members, plain or escaped, at the same offset")
    func duplicatesInLargeObjects() {
        for count in [15, 16, 17, 40] {
            for duplicate in [#""m3""#, #""\u006d3""#, #""m\u0033""#] {
                let members = (0..<count).map { #""m\#($0)":\#($0)"# } + ["\(duplicate):0"]
                let bytes = Data(("{" + members.joined(separator: ",") + "}").utf8)
                let tape = outcome(tape: bytes)
                #expect(tape.contains("duplicate member name"), "\(count) members, then \(duplicate)")
                #expect(tape == outcome(tree: bytes))
            }
            // The same names without the duplicate parse to the same value.
            let bytes = Data(("{" + (0..<count).map { #""m\#($0)":\#($0)"# }.joined(separator: ",") + "}").utf8)
            #expect(outcome(tape: bytes) == outcome(tree: bytes))
        }
    }

    @Test("nesting: the deepest the tree parser reads is read, one level more refused alike")
    func nesting() {
        for depth in [254, 255, 256, 5000] {
            let bytes = Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
            #expect(outcome(tape: bytes) == outcome(tree: bytes), "depth \(depth)")
        }
        let deepest = Data((String(repeating: "[", count: 255) + String(repeating: "]", count: 255)).utf8)
        #expect(!outcome(tape: deepest).hasPrefix("error"))
    }

    @Test("random documents read the same from the tape as from the tree", arguments: 0..<8)
    func randomDocuments(seed: UInt64) throws {
        var random = SplitMix(seed: seed + 1_000)
        for _ in 0..<50 {
            let value = randomValue(&random, depth: 0)
            var bytes = Data()
            value.write(to: &bytes)
            let tape = outcome(tape: bytes)
            #expect(!tape.hasPrefix("error"))
            #expect(tape == outcome(tree: bytes))
            // Decoding through `Decodable` reads the same from either.
            let fromTape = try TreeDecoder.decode(JSONValue.self, from: .tape(JSONTape.parse(bytes), 0))
            let fromTree = try TreeDecoder.decode(JSONValue.self, from: JSONParser.parse(bytes))
            var a = Data()
            var b = Data()
            fromTape.write(to: &a)
            fromTree.write(to: &b)
            #expect(a == b)
        }
    }

    @Test("member names match a version's keys by their bytes exactly as StoredKeys.matches does")
    func namesMatchKeys() throws {
        let keys = StoredKeys(required: ["name", "é", "a\"b"], optional: ["age", "e\u{301}", ""])
        let table = KeyTable(keys)
        let names = [
            #""name""#, #""é""#, #""e\u0301""#, #""a\"b""#, #""age""#, #""""#, #""x""#, #""\u00e9""#, #""nam""#
        ]
        var random = SplitMix(seed: 7)
        var checked = 0
        for _ in 0..<400 {
            var chosen: [String] = []
            for name in names where random.below(3) > 0 { chosen.append(name) }
            // Keep the names distinct as text ("é" and "\u00e9" are one name).
            if chosen.contains(#""é""#) && chosen.contains(#""\u00e9""#) { chosen.removeAll { $0 == #""\u00e9""# } }
            let text = "{" + chosen.enumerated().map { "\($1):\($0)" }.joined(separator: ",") + "}"
            let tape = try JSONTape.parse(Data(text.utf8))
            let decoded = tape.memberNames(of: 0).map(tape.string(at:))
            let expected = keys.matches(decoded)
            if let byBytes = tape.names(of: 0, match: table) {
                #expect(byBytes == expected, "\(text)")
                checked += 1
            } else {
                // Only a name with escapes leaves it to the decoded names.
                #expect(tape.memberNames(of: 0).contains { tape.entries[$0].kind == .escaped })
            }
        }
        #expect(checked > 100)
        // All the required keys and some optional: a match, by bytes.
        let full = try JSONTape.parse(Data(#"{"a\"b":1,"name":2,"é":3,"":4}"#.utf8))
        #expect(full.names(of: 0, match: table) == nil)  // "a\"b" has an escape
        let plain = try JSONTape.parse(Data(#"{"name":2,"é":3,"age":4}"#.utf8))
        #expect(plain.names(of: 0, match: KeyTable(StoredKeys(required: ["name", "é"], optional: ["age"]))) == true)
        #expect(plain.names(of: 0, match: KeyTable(StoredKeys(required: ["name", "é", "x"]))) == false)
        #expect(plain.names(of: 0, match: KeyTable(StoredKeys(required: ["name"], optional: ["age"]))) == false)
    }

    @Test("an object of many members decodes through an index: 50,000 members into a dictionary")
    func largeObject() throws {
        let count = 50_000
        let text = "{" + (0..<count).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"
        let tape = try JSONTape.parse(Data(text.utf8))
        guard case .parsed = TreeNode.tape(tape, 0).asObject else {
            Issue.record("a large object is not read through its index")
            return
        }
        let decoded = try TreeDecoder.decode([String: Int].self, from: .tape(tape, 0))
        #expect(decoded.count == count)
        #expect(decoded["k49999"] == 49_999)
        #expect(decoded["k0"] == 0)
    }

    @Test("a string that holds a record parses through its unwrapped text")
    func stringWrapped() throws {
        let record = try ParsedRecord.parse(Data(#""{\"data\":{\"a\":1},\"schema\":\"S\",\"version\":0}""#.utf8))
        #expect(record.stringWrapped)
        #expect(record.envelopeSchema == "S")
        #expect(record.keys == ["data", "schema", "version"])
    }

    @Test("an envelope whose member names have escapes is the same envelope, read the same")
    func escapedEnvelopeNames() throws {
        let plain = #"{"data":{"age":"36","name":"Ada"},"schema":"Person","version":0}"#
        let escaped = #"{"d\u0061ta":{"\u0061ge":"36","name":"Ada"},"sch\u0065ma":"Person","versio\u006e":0}"#
        let record = try ParsedRecord.parse(Data(escaped.utf8))
        #expect(record.envelopeSchema == "Person")
        var values: [PersonV3] = []
        for text in [plain, escaped] {
            guard case let .outdated(read) = Person.chain.outcome(of: Data(text.utf8), context: .fixed(now: Date()))
            else {
                Issue.record("\(text) was not read as an outdated Person")
                continue
            }
            #expect(read.storedVersion == 0)
            #expect(read.form == .envelope)
            values.append(read.value)
        }
        #expect(values.count == 2)
        #expect(values.first == values.last)
        #expect(values.first?.alias == "Ada")
    }

    private func randomValue(_ random: inout SplitMix, depth: Int) -> JSONValue {
        switch depth > 4 ? random.below(4) : random.below(7) {
        case 0: return .null
        case 1: return .bool(random.flag())
        case 2: return .number(["0", "-1", "2.5", "1e300", "-0.0", "12345678901234567890", "3E-2"][random.below(7)])
        case 3: return .string(random.string())
        case 4: return .array((0..<random.below(4)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var members: [JSONMember] = []
            var names = Set<ExactString>()
            for _ in 0..<random.below(depth == 0 ? 24 : 6) {
                let name = random.string()
                guard names.insert(ExactString(name)).inserted else { continue }
                members.append(JSONMember(key: name, value: randomValue(&random, depth: depth + 1)))
            }
            return .object(JSONObject(members: members))
        }
    }
}
