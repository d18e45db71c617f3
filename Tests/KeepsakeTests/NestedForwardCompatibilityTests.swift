import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeTesting
import Migrations
import Testing
import TwoReleasesSupport

/// Declares A's readers compatible, but stores `address.city` as a number: A cannot read it.
private struct RetypedContactV1: ModelVersion {
    typealias Predecessor = ContactV0
    static let version = 1
    static let oldestReader = 0
    struct Address: Codable, Sendable { var city: Int }
    var name: String
    var address: Address
    var tags: [TagV0]
    var labels: [String: LabelV0]
    init(migrating previous: ContactV0, context: MigrationContext) {
        name = previous.name
        address = Address(city: 0)
        tags = previous.tags
        labels = previous.labels
    }
}

@Suite("Forward compatibility at every depth: an older release's save keeps what it does not know")
struct NestedForwardCompatibilityTests {
    @Test("release B's chain validates: its nested additions are readable by A")
    func validates() throws {
        try ChainValidation.validate(NestedCompatibility.releaseB)
    }

    @Test("A's saves keep B's nested keys, clear what A clears, and refuse what cannot be placed (memory, defaults)")
    func scenario() throws {
        for store: any RecordStore in [InMemoryStore(), DefaultsStore(path: try temporaryDirectory() + "/suite.json")] {
            #expect(NestedCompatibility.mismatches(on: store) == [], "\(store.uri)")
        }
    }

    @Test("validation finds a version that declares older readers compatible but retypes a nested field")
    func validationLooksBelowTheTopLevel() {
        let chain = ModelChain<RetypedContactV1>(name: "Contact", defaultKeys: ["contact"])
        let problems = chain.problems
        #expect(problems.count == 1)
        #expect(problems.first?.field == "address.city", "\(problems)")
        #expect(problems.first?.reason.contains("stored as integer") == true, "\(problems)")
    }
}

@Suite("A record that claims a newer version is never overwritten by a save")
struct NewerClaimTests {
    @Test(
        "a newer record that does not parse strictly is refused as newer, bytes kept",
        arguments: [
            #"{"schema":"Person","version":5,"data":{"alias":"a","x":{"k":1,"k":2}}}"#,
            #"{"schema":"Person","version":5,"data":{"alias":"\ud800"}}"#,
            #"{"schema":"Person","version":5,"data":{"alias":NaN}}"#,
            #"{"version":7,"alias":"a","alias":"b"}"#,
            #"{"schema":"Person","version":5.0,"data":{}}"#,
            #""{\"schema\":\"Person\",\"version\":9,\"data\":{\"a\":1,\"a\":2}}""#
        ])
    func refused(_ stored: String) throws {
        let store = InMemoryStore(contents: ["person": Data(stored.utf8)])
        let vault = Vault(store: store)
        do {
            try vault.save(PersonV3(alias: "new", email: "e"), in: Person.chain)
            Issue.record("expected newerVersion for \(stored)")
        } catch {
            #expect(error.code == .newerVersion, "\(error)")
            #expect(error.store == store.uri && error.key == "person")
        }
        #expect(try store.data(forKey: "person") == Data(stored.utf8))
    }

    @Test("an unreadable record that claims a version this release knows is still replaced by a save")
    func unreadableReplaced() throws {
        for stored in [#"{"version":1,"alias":NaN}"#, #"{"version":2,"a":1,"a":2}"#] {
            let store = InMemoryStore(contents: ["person": Data(stored.utf8)])
            try Vault(store: store).save(PersonV3(alias: "new", email: "e"), in: Person.chain)
            #expect(try Vault(store: store).load(Person.chain)?.value == PersonV3(alias: "new", email: "e"))
        }
    }

    @Test(
        "an unreadable record whose version cannot be established is refused as corrupt, bytes kept, until removed",
        arguments: [
            "not json",
            #"{"a":1,"a":2}"#,
            // Broken before `version` — which Keepsake's envelopes write last — hides a newer claim.
            #"{"data":{"alias":"a","email":{"e"},"schema":"Person","version":9}"#,
            "\u{FEFF}" + #"{"data":{"alias":"a","email":"e"},"schema":"Person","version":9}"#,
            #"{/* a comment */ "data":{},"schema":"Person","version":9}"#,
            #"{"data":{"alias":"a","email":"e"},"schema":"Person","version":"9"}"#,
            #"{"data":{"alias":"a","email":"e"},"schema":"Person","version":1e999}"#
        ])
    func unestablishedKept(_ stored: String) throws {
        let store = InMemoryStore(contents: ["person": Data(stored.utf8)])
        let vault = Vault(store: store)
        let error = #expect(throws: KeepsakeError.self) {
            try vault.save(PersonV3(alias: "new", email: "e"), in: Person.chain)
        }
        #expect(error?.code == .corruptRecord, "\(String(describing: error))")
        #expect(error?.message.contains("its version cannot be established") == true)
        #expect(error?.message.contains("remove it first") == true)
        #expect(error?.store == store.uri && error?.key == "person")
        #expect(try store.data(forKey: "person") == Data(stored.utf8))
        // Said explicitly: removed, then saved.
        try vault.remove(forKey: "person")
        try vault.save(PersonV3(alias: "new", email: "e"), in: Person.chain)
        #expect(try vault.load(Person.chain)?.value == PersonV3(alias: "new", email: "e"))
    }
}
