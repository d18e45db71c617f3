import Foundation
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Testing

@testable import Keepsake

/// Keys are exact strings: compared by their UTF-8 bytes, never by Swift's canonical
/// equivalence, so `"caf\u{E9}"` (é composed) and `"cafe\u{301}"` (e + combining accent) are two
/// keys. The store contract checks this on every backend; these are the places around it.
@Suite("Exact keys")
struct ExactKeyTests {
    let composed = "caf\u{E9}"
    let decomposed = "cafe\u{301}"

    @Test("the two forms of café are equal to Swift's == and different bytes — the premise")
    func premise() {
        #expect(composed == decomposed)
        #expect(!composed.isExactly(decomposed))
        #expect(Set([ExactString(composed), ExactString(decomposed)]).count == 2)
        #expect(ExactString(decomposed) < ExactString(composed))
    }

    @Test("a valid suite holding both forms reads as two keys, and a put of one leaves the other's bytes")
    func defaultsSuite() throws {
        let path = try temporaryDirectory() + "/suite.json"
        let document = "{\n  \"\(decomposed)\": [1,  2],\n  \"\(composed)\": {\"x\":true}\n}\n"
        try Data(document.utf8).write(to: URL(fileURLWithPath: path))
        let store = DefaultsStore(path: path)
        #expect(try store.keys().map { Array($0.utf8) } == [Array(decomposed.utf8), Array(composed.utf8)])
        #expect(try store.data(forKey: composed) == bytes(#"{"x":true}"#))
        #expect(try store.data(forKey: decomposed) == bytes("[1,  2]"))
        try store.setData(bytes("7"), forKey: composed)
        #expect(try store.data(forKey: decomposed) == bytes("[1,  2]"))
        #expect(
            try String(contentsOfFile: path, encoding: .utf8)
                == "{\n  \"\(decomposed)\": [1,  2],\n  \"\(composed)\": 7\n}\n")
    }

    @Test("a suite holding the very same key twice is still corrupt")
    func trueDuplicate() throws {
        let path = try temporaryDirectory() + "/suite.json"
        try Data("{\"\(composed)\": 1, \"caf\\u00e9\": 2}".utf8).write(to: URL(fileURLWithPath: path))
        #expect { try DefaultsStore(path: path).keys() } throws: { error in
            (error as? KeepsakeError)?.code == .corruptStore
        }
    }

    @Test("an unsorted suite is read by key, and a key it holds twice apart is still corrupt")
    func unsortedSuite() throws {
        let directory = try temporaryDirectory()
        let unsorted = directory + "/unsorted.json"
        try Data(#"{"c": 3, "a": [1], "\#(decomposed)": 4, "b": "two", "\#(composed)": 5}"#.utf8)
            .write(to: URL(fileURLWithPath: unsorted))
        let store = DefaultsStore(path: unsorted)
        #expect(
            try store.keys()
                == ["a", "b", "c", composed, decomposed].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(try store.data(forKey: "a") == Data("[1]".utf8))
        #expect(try store.data(forKey: "b") == Data(#""two""#.utf8))
        #expect(try store.data(forKey: "c") == Data("3".utf8))
        #expect(try store.data(forKey: composed) == Data("5".utf8))
        #expect(try store.data(forKey: decomposed) == Data("4".utf8))
        #expect(try store.data(forKey: "d") == nil)

        let duplicated = directory + "/duplicated.json"
        try Data(#"{"b": 1, "a": 2, "c": 3, "a": 4}"#.utf8).write(to: URL(fileURLWithPath: duplicated))
        #expect { try DefaultsStore(path: duplicated).keys() } throws: { error in
            guard let error = error as? KeepsakeError, error.code == .corruptStore else { return false }
            return error.cause.map { "\($0)" }?.contains("duplicate key 'a'") == true
        }
    }

    @Test("JSON member names are exact: both forms are two members, the same bytes twice a duplicate")
    func memberNames() throws {
        let value = try JSONParser.parse(Data("{\"\(composed)\": 1, \"\(decomposed)\": 2}".utf8))
        guard case let .object(object) = value else {
            Issue.record("not an object")
            return
        }
        guard case .number("1")? = object[composed], case .number("2")? = object[decomposed] else {
            Issue.record("the members were merged or swapped")
            return
        }
        #expect(throws: JSONSyntaxError.self) {
            try JSONParser.parse(Data("{\"\(composed)\": 1, \"\(composed)\": 2}".utf8))
        }
        #expect(throws: JSONSyntaxError.self) {
            try JSONParser.withParser(Data("{\"\(composed)\": 1, \"\(composed)\": 2}".utf8)) {
                parser throws(JSONSyntaxError) in
                _ = try parser.skipValue()
            }
        }
    }

    @Test("a version's stored keys match field names byte for byte")
    func storedKeys() {
        let keys = StoredKeys(required: [composed], optional: ["note"])
        #expect(keys.matches([composed]))
        #expect(keys.matches([composed, "note"]))
        #expect(!keys.matches([decomposed]))
        #expect(!keys.matches([composed, decomposed]), "an unknown field is never dropped for looking alike")
        #expect(!StoredKeys(required: ["a"], optional: [composed]).matches(["a", decomposed]))
    }

    @Test("the migrator matches keys to models byte for byte: a look-alike key is unmanaged")
    func migratorKeys() throws {
        let person = bytes(#"{"name":"Ada","age":"36"}"#)
        let store = InMemoryStore()
        try store.setData(person, forKey: composed)
        try store.setData(person, forKey: decomposed)
        let migrator = Migrator(
            store: store, chains: SampleModels.all, context: .fixed(now: Date()),
            keyModels: [composed: "Person"])
        let reports = try migrator.plan()
        #expect(reports.map { Array($0.key.utf8) } == [Array(decomposed.utf8), Array(composed.utf8)])
        #expect(reports.map(\.state) == [.unmanaged, .outdated])
    }

    @Test("errors compare their keys byte for byte")
    func errorEquality() {
        #expect(KeepsakeError(.notFound, key: composed, "x") != KeepsakeError(.notFound, key: decomposed, "x"))
        #expect(KeepsakeError(.notFound, key: composed, "x") == KeepsakeError(.notFound, key: composed, "x"))
    }
}
