import Foundation
import Keepsake
import KeepsakeSodium
import Migrations
import Synchronization
import Testing

/// An encrypted store another instance writes to just before each batch a run commits
/// (`otherWriter` gets the batch's number, 1, 2…), so that the run's compare-and-swap meets
/// that instance's change.
private final class OtherWriterStore: RecordStore {
    let base: SodiumFileStore
    let otherWriter: @Sendable (_ batch: Int) throws -> Void
    private let batches = Mutex(0)

    init(base: SodiumFileStore, otherWriter: @escaping @Sendable (_ batch: Int) throws -> Void) {
        self.base = base
        self.otherWriter = otherWriter
    }

    var committed: Int { batches.withLock { $0 } }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        try base.allRecords()
    }
    func forEachRecord(
        _ body: (_ count: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError) {
        try base.forEachRecord(body)
    }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        let batch = batches.withLock {
            $0 += 1
            return $0
        }
        do { try otherWriter(batch) } catch { Issue.record("the other instance's write failed: \(error)") }
        return try base.commit(writes)
    }
}

@Suite("Migrating an encrypted store while another instance writes it")
struct OtherWriterMigrationTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_800_000_000), deviceIdentity: "device-1")

    static func v0(_ name: String) -> Data {
        Data(#"{"data":{"age":"30","name":"\#(name)"},"schema":"Person","version":0}"#.utf8)
    }

    @Test("a record another instance brought to the latest version is current with a note, and keeps its bytes")
    func otherInstance() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            for key in ["a", "b", "c", "d"] { try store.setData(Self.v0(key.uppercased()), forKey: key) }
            let theirs = try Person.chain.encode(PersonV3(alias: "Theirs", email: "t@x"))
            let instance = try reopen(directory)  // another instance of the app, on the same directory
            let racing = OtherWriterStore(base: store) { batch in
                guard batch == 1 else { return }
                try instance.setData(theirs, forKey: "a")
                try instance.setData(Self.v0("Bea"), forKey: "b")
                try instance.removeData(forKey: "c")
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
            #expect(racing.committed == 2)

            let reopened = try reopen(directory)
            #expect(try reopened.data(forKey: "a") == theirs)
            #expect(try reopened.data(forKey: "b") == (try Person.chain.encode(PersonV3(alias: "Bea", email: "---"))))
            #expect(try reopened.data(forKey: "c") == nil)
            #expect(try reopened.data(forKey: "d") == (try Person.chain.encode(PersonV3(alias: "D", email: "---"))))
        }
    }
}
