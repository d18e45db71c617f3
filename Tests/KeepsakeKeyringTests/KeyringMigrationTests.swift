import Foundation
import Keepsake
import KeepsakeKeyring
import Migrations
import Synchronization
import Testing

extension KeyringTests {
    /// Old records kept in the keyring, migrated through the engine's Migrator.
    @Suite("Migrating records kept in the keyring")
    struct Migration {
        let context = MigrationContext.fixed(
            now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "device-1")

        @Test("Migrator migrates old Person and TrialInfo records in the keyring once, and leaves other items alone")
        func migrator() throws {
            let store = try PrivateKeyring.freshStore("migrator")
            // The Person record as its first release stored it, through another client.
            try PrivateKeyring.secretToolStore(
                label: "person", attributes: [("service", store.service), ("username", "person")],
                secret: #"{"name":"Ada","age":"36"}"#)
            try store.setData(Data(#"{"version":0,"startDate":700000000}"#.utf8), forKey: "trialInfo")
            try store.setData(Data("plain token".utf8), forKey: "apiToken")

            let migrator = Migrator(store: store, chains: SampleModels.all, context: context)
            let plan = try migrator.plan()
            #expect(plan.map(\.key) == ["apiToken", "person", "trialInfo"])
            #expect(plan.map(\.state) == [.unmanaged, .outdated, .outdated])
            #expect(try store.data(forKey: "person") == Data(#"{"name":"Ada","age":"36"}"#.utf8), "plan writes nothing")

            let reports = try migrator.run()
            #expect(reports.map(\.key) == ["apiToken", "person", "trialInfo"])
            #expect(reports.map(\.state) == [.unmanaged, .migrated, .migrated])
            #expect(reports.map(\.storedVersion) == [nil, 0, 0])
            #expect(reports.map(\.latestVersion) == [nil, 3, 2])
            #expect(reports.allSatisfy { $0.error == nil })

            #expect(
                try store.data(forKey: "person")
                    == Data(#"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#.utf8))
            #expect(
                try store.data(forKey: "trialInfo")
                    == Data(
                        #"{"data":{"deviceId":"device-1","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
                            .utf8))
            #expect(try store.data(forKey: "apiToken") == Data("plain token".utf8))
            // One item per key, the Person one still secret-tool's.
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            #expect(items.count == 3)
            #expect(items.first { $0.attributes["username"] == "person" }?.label == "person")

            #expect(
                try Vault(store: store, context: context).load(Person.chain).map { $0.value }
                    == PersonV3(alias: "Ada", email: "---"))
            #expect(
                try Vault(store: store, context: context).load(TrialInfo.chain).map { $0.value }
                    == (TrialInfoV2(startDate: Date(timeIntervalSinceReferenceDate: 700_000_000), deviceId: "device-1"))
            )

            let again = try migrator.run()
            #expect(again.map(\.state) == [.unmanaged, .current, .current])
        }

        @Test("a record from a newer release in the keyring is reported and left untouched")
        func newer() throws {
            let store = try PrivateKeyring.freshStore("newer")
            let newer = Data(#"{"data":{"alias":"A","email":"e","phone":"1"},"schema":"Person","version":9}"#.utf8)
            try store.setData(newer, forKey: "person")
            let reports = try Migrator(store: store, chains: SampleModels.all, context: context).run()
            #expect(reports.map(\.state) == [.newer])
            #expect(reports.first?.error?.code == .newerVersion)
            #expect(try store.data(forKey: "person") == newer)
        }

        @Test(
            "records another client changed while they were migrated are reported as they now stand, never overwritten")
        func otherWriter() throws {
            let store = try PrivateKeyring.freshStore("other-writer")
            let v0: @Sendable (String) -> Data = { name in
                Data(#"{"data":{"age":"30","name":"\#(name)"},"schema":"Person","version":0}"#.utf8)
            }
            for key in ["a", "b", "c", "d"] { try store.setData(v0(key.uppercased()), forKey: key) }
            let theirs = try Person.chain.encode(PersonV3(alias: "Theirs", email: "t@x"))
            let other = try KeyringStore(service: store.service)  // another client of the same items
            let racing = OtherClientStore(base: store) {
                try other.setData(theirs, forKey: "a")
                try other.setData(v0("Bea"), forKey: "b")
                try other.removeData(forKey: "c")
            }
            let reports = try Migrator(store: racing, chains: SampleModels.all, context: context).run()
            #expect(reports.map(\.key) == ["a", "b", "c", "d"])
            #expect(reports.map(\.state) == [.current, .migrated, .removed, .migrated])
            #expect(
                reports.map(\.note) == [
                    "brought to the latest version by another writer while it was being migrated",
                    "changed by another writer while it was being migrated; migrated again from what that writer stored",
                    "removed by another writer while it was being migrated", nil
                ])
            #expect(reports.allSatisfy { $0.error == nil })
            #expect(try store.data(forKey: "a") == theirs)
            #expect(try store.data(forKey: "b") == (try Person.chain.encode(PersonV3(alias: "Bea", email: "---"))))
            #expect(try store.data(forKey: "c") == nil)
            #expect(try store.data(forKey: "d") == (try Person.chain.encode(PersonV3(alias: "D", email: "---"))))
        }
    }
}

/// A keyring store another client writes to (`otherWriter`, once) just before the first batch
/// a run commits, so that the run's compare-and-swap meets that client's change.
private final class OtherClientStore: RecordStore {
    let base: KeyringStore
    private let otherWriter: Mutex<(@Sendable () throws -> Void)?>

    init(base: KeyringStore, otherWriter: @escaping @Sendable () throws -> Void) {
        self.base = base
        self.otherWriter = Mutex(otherWriter)
    }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        try base.allRecords()
    }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        let write = otherWriter.withLock { pending in
            defer { pending = nil }
            return pending
        }
        if let write {
            do { try write() } catch { Issue.record("the other client's write failed: \(error)") }
        }
        return try base.commit(writes)
    }
}
