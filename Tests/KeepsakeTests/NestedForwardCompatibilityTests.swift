import Foundation
import Keepsake
import KeepsakeTesting
import Migrations
import Testing

// Release A's chain ends at ContactV0; release B's at ContactV1, which adds keys inside an
// object A knows (`address.zip`), inside array elements A knows (`tags[].color`), inside the
// values of a dictionary A knows (`labels[*].hint`), and at the top level (`phone`), and
// declares A's readers compatible.

private struct AddressV0: Codable, Equatable, Sendable {
    var city: String
}

private struct TagV0: Codable, Equatable, Sendable {
    var name: String
}

private struct LabelV0: Codable, Equatable, Sendable {
    var text: String
}

private struct ContactV0: ModelVersion, Equatable {
    static let version = 0
    var name: String
    var address: AddressV0
    var tags: [TagV0]
    var labels: [String: LabelV0]
    var note: String?
}

private struct AddressV1: Codable, Equatable, Sendable {
    var city: String
    var zip: String?
}

private struct TagV1: Codable, Equatable, Sendable {
    var name: String
    var color: String?
}

private struct LabelV1: Codable, Equatable, Sendable {
    var text: String
    var hint: String?
}

private struct ContactV1: ModelVersion, Equatable {
    typealias Predecessor = ContactV0
    static let version = 1
    static let oldestReader = 0
    var name: String
    var address: AddressV1
    var tags: [TagV1]
    var labels: [String: LabelV1]
    var note: String?
    var phone: String?
    init(
        name: String, address: AddressV1, tags: [TagV1], labels: [String: LabelV1], note: String? = nil,
        phone: String? = nil
    ) {
        self.name = name
        self.address = address
        self.tags = tags
        self.labels = labels
        self.note = note
        self.phone = phone
    }
    init(migrating previous: ContactV0, context: MigrationContext) {
        self.init(
            name: previous.name, address: AddressV1(city: previous.address.city, zip: nil),
            tags: previous.tags.map { TagV1(name: $0.name, color: nil) },
            labels: previous.labels.mapValues { LabelV1(text: $0.text, hint: nil) }, note: previous.note)
    }
}

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

private let releaseA = ModelChain<ContactV0>(name: "Contact", defaultKeys: ["contact"])
private let releaseB = ModelChain<ContactV1>(name: "Contact", defaultKeys: ["contact"])

@Suite("Forward compatibility at every depth: an older release's save keeps what it does not know")
struct NestedForwardCompatibilityTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0))

    private var newerValue: ContactV1 {
        ContactV1(
            name: "Ada", address: AddressV1(city: "London", zip: "N1"),
            tags: [TagV1(name: "work", color: "red"), TagV1(name: "home", color: "blue")],
            labels: ["a": LabelV1(text: "first", hint: "h1"), "b": LabelV1(text: "second", hint: "h2")],
            note: "kept", phone: "555")
    }

    /// Every store the library ships in this module, each empty.
    private func stores() throws -> [any RecordStore] {
        [InMemoryStore(), DefaultsStore(path: try temporaryDirectory() + "/suite.json")]
    }

    @Test("release B's chain validates: its nested additions are readable by A")
    func validates() throws {
        try ChainValidation.validate(releaseB)
    }

    @Test("A renames and saves; B reads back its nested and top-level keys unchanged")
    func keepsNestedUnknownKeys() throws {
        for store in try stores() {
            try Vault(store: store, context: context).save(newerValue, in: releaseB)
            let vaultA = Vault(store: store, context: context)
            var seen = try #require(try vaultA.load(releaseA)).value
            #expect(seen.address == AddressV0(city: "London"))
            seen.name = "Ada L."
            seen.address.city = "Cambridge"
            seen.tags[1].name = "house"
            seen.labels["a"]?.text = "one"
            try vaultA.save(seen, in: releaseA)

            let back = try #require(try Vault(store: store, context: context).load(releaseB)).value
            var expected = newerValue
            expected.name = "Ada L."
            expected.address.city = "Cambridge"
            expected.tags[1].name = "house"
            expected.labels["a"]?.text = "one"
            #expect(back == expected, "\(store.uri)")
        }
    }

    @Test("what A clears or removes is gone; what it cannot place is refused, with nothing written")
    func clearsAndRefuses() throws {
        for store in try stores() {
            try Vault(store: store, context: context).save(newerValue, in: releaseB)
            let vaultA = Vault(store: store, context: context)
            var seen = try #require(try vaultA.load(releaseA)).value

            // Clearing an optional and removing a dictionary entry: B sees both changes.
            seen.note = nil
            seen.labels["b"] = nil
            try vaultA.save(seen, in: releaseA)
            var expected = newerValue
            expected.note = nil
            expected.labels["b"] = nil
            #expect(try Vault(store: store, context: context).load(releaseB)?.value == expected)

            // Removing an array element whose siblings hold keys A does not know: refused.
            let before = try store.data(forKey: "contact")
            seen.tags.removeFirst()
            do {
                try vaultA.save(seen, in: releaseA)
                Issue.record("expected the save to be refused on \(store.uri)")
            } catch {
                #expect(error.code == .mergeRefused)
                #expect(error.message.contains("data.tags[0]"), "\(error.message)")
                #expect(error.key == "contact" && error.store == store.uri)
            }
            #expect(try store.data(forKey: "contact") == before, "nothing written")
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

    @Test("an unreadable record that claims no newer version is still replaced by a save")
    func unreadableReplaced() throws {
        for stored in [#"{"version":1,"alias":NaN}"#, "not json", #"{"a":1,"a":2}"#] {
            let store = InMemoryStore(contents: ["person": Data(stored.utf8)])
            try Vault(store: store).save(PersonV3(alias: "new", email: "e"), in: Person.chain)
            #expect(try Vault(store: store).load(Person.chain)?.value == PersonV3(alias: "new", email: "e"))
        }
    }
}
