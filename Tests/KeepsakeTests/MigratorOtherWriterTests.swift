import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Synchronization
import Testing

/// A store with another writer: just before each batch a run commits, `otherWriter` is called
/// with the batch's number (1, 2…) and writes to the store as an app instance would, so that
/// the run's compare-and-swap meets that writer's change.
final class OtherWriterStore: RecordStore {
    let base: any RecordStore
    typealias Writer = @Sendable (_ batch: Int) throws -> Void
    let otherWriter: Writer
    private let batches = Mutex(0)

    init(base: any RecordStore, otherWriter: @escaping Writer) {
        self.base = base
        self.otherWriter = otherWriter
    }

    /// How many batches the run committed.
    var committed: Int { batches.withLock { $0 } }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func allData() throws(KeepsakeError) -> [(key: String, data: Data)] { try base.allData() }
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
        do { try otherWriter(batch) } catch { Issue.record("the other writer's write failed: \(error)") }
        return try base.commit(writes)
    }
}

/// `migrate run` while app instances write: a record another writer changes between the run's
/// read and its write is never written over, and is reported as it stands after the run.
@Suite("Migrator with another writer")
struct MigratorOtherWriterTests {
    let context = MigrationContext.fixed(
        now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")

    static let person = bytes(#"{"name":"Ada","age":"36"}"#)
    static let trialInfo = bytes(#"{"version":1,"startDate":700000000,"deviceId":"old","userId":"u0"}"#)
    /// `person` as an app instance saves it: the latest version.
    static let theirs = bytes(#"{"data":{"alias":"Theirs","email":"t@x"},"schema":"Person","version":3}"#)
    /// The notes a run gives a record another writer changed meanwhile, word for word.
    static let broughtCurrent = "brought to the latest version by another writer while it was being migrated"
    static let broughtNewerReadable =
        "brought to a newer version this release reads by another writer while it was being migrated"
    static let migratedAgain =
        "changed by another writer while it was being migrated; migrated again from what that writer stored"
    static let leftAsStored = "changed by another writer while it was being migrated; left as that writer stored it"

    /// A store of `kind` (`memory` or `defaults`) holding `person` (V0) and `trialInfo` (V1);
    /// the store another writer writes through (for a suite, an instance of its own, as an app
    /// has); and the directory to remove afterwards.
    func seededStore(_ kind: String) throws -> (store: any RecordStore, other: any RecordStore, directory: String?) {
        let contents = ["person": Self.person, "trialInfo": Self.trialInfo]
        if kind == "memory" {
            let store = InMemoryStore(name: "other-writer", contents: contents)
            return (store, store, nil)
        }
        let directory = try temporaryDirectory()
        let suite = DefaultsStore(path: directory + "/suite.json")
        _ = try suite.commit(contents.map { StoreWrite(key: $0.key, value: $0.value) })
        return (suite, DefaultsStore(path: directory + "/suite.json"), directory)
    }

    func run(_ store: OtherWriterStore, backup: BackupDirectory? = nil) throws -> [RecordReport] {
        try Migrator(store: store, chains: SampleModels.all, context: context).run(backup: backup)
    }

    @Test(
        "a record another writer brought to the latest version meanwhile is current, with a note, and keeps its bytes",
        arguments: ["memory", "defaults"])
    func broughtCurrent(kind: String) throws {
        let (base, instance, directory) = try seededStore(kind)
        defer { if let directory { try? FileManager.default.removeItem(atPath: directory) } }
        let store = OtherWriterStore(base: base) { batch in
            if batch == 1 { try instance.setData(Self.theirs, forKey: "person") }
        }
        let reports = try run(store)
        #expect(reports.map(\.key) == ["person", "trialInfo"])
        #expect(
            reports[0]
                == RecordReport(
                    key: "person", schema: "Person", storedVersion: 3, latestVersion: 3, state: .current,
                    form: .envelope, note: Self.broughtCurrent))
        #expect(reports[1].state == .migrated && reports[1].note == nil && reports[1].error == nil)
        #expect(reports.filter { $0.state == .current }.count == 1)
        #expect(reports.allSatisfy { $0.state != .outdated && $0.error == nil })
        #expect(store.committed == 1, "nothing was left to write again")
        #expect(try base.data(forKey: "person") == Self.theirs)
    }

    @Test("the compact reports `migrate run` prints count it as current, and hold its note")
    func compactReports() throws {
        let (base, instance, _) = try seededStore("memory")
        let store = OtherWriterStore(base: base) { batch in
            if batch == 1 { try instance.setData(Self.theirs, forKey: "person") }
        }
        let reports = try Migrator(store: store, chains: SampleModels.all, context: context).runReports()
        #expect(reports.count(of: .current) == 1)
        #expect(reports.count(of: .migrated) == 1)
        #expect(reports.count(of: .outdated) == 0)
        #expect(reports.firstError == nil)
        #expect(reports[0].note == Self.broughtCurrent)
        var whole: [String] = []
        reports.forEachWhole { whole.append($0.key) }
        #expect(whole == ["person"])
    }

    @Test("a record another writer stored at a newer version this release reads is newerReadable, with a note")
    func broughtNewerReadable() throws {
        let newer = bytes(
            #"{"data":{"alias":"N","email":"n@x","phone":"1"},"oldestReader":3,"schema":"Person","version":4}"#)
        let (base, instance, _) = try seededStore("memory")
        let store = OtherWriterStore(base: base) { batch in
            if batch == 1 { try instance.setData(newer, forKey: "person") }
        }
        let person = try #require(try run(store).first { $0.key == "person" })
        #expect(person.state == .newerReadable)
        #expect(person.storedVersion == 4)
        #expect(person.error == nil)
        #expect(person.note == Self.broughtNewerReadable)
        #expect(try base.data(forKey: "person") == newer)
    }

    @Test(
        "a record another writer left outdated is migrated again from that writer's bytes, backed up too",
        arguments: ["memory", "defaults"])
    func migratedAgain(kind: String) throws {
        let (base, instance, directory) = try seededStore(kind)
        defer { if let directory { try? FileManager.default.removeItem(atPath: directory) } }
        let older = bytes(#"{"name":"Bea","age":"40"}"#)
        let store = OtherWriterStore(base: base) { batch in
            if batch == 1 { try instance.setData(older, forKey: "person") }
        }
        let backups = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: backups) }
        let reports = try run(store, backup: BackupDirectory(path: backups))
        let person = try #require(reports.first { $0.key == "person" })
        #expect(person.state == .migrated)
        #expect(person.error == nil)
        #expect(person.storedVersion == 0 && person.steps == [1, 2, 3])
        #expect(person.note == Self.migratedAgain)
        #expect(store.committed == 2)
        #expect(
            try base.data(forKey: "person")
                == bytes(#"{"data":{"alias":"Bea","email":"---"},"schema":"Person","version":3}"#))
        // The first batch's backup holds the bytes this run read, the second the other writer's.
        #expect(person.backupPath == backups + "/records~2.jsonl")
        #expect(
            try BackupDirectory.originals(at: backups + "/records.jsonl").map(\.bytes) == [Self.person, Self.trialInfo])
        #expect(try BackupDirectory.originals(at: backups + "/records~2.jsonl").map(\.bytes) == [older])
        #expect(reports.first { $0.key == "trialInfo" }?.backupPath == backups + "/records.jsonl")
    }

    @Test("a record another writer keeps outdated is written at most three times, then reported outdated")
    func stillOutdated() throws {
        let (base, instance, _) = try seededStore("memory")
        let store = OtherWriterStore(base: base) { batch in
            try instance.setData(bytes(#"{"name":"Bea\#(batch)","age":"40"}"#), forKey: "person")
        }
        let reports = try run(store)
        let person = try #require(reports.first { $0.key == "person" })
        #expect(person.state == .outdated)
        #expect(person.storedVersion == 0)
        #expect(person.note == nil)
        let error = try #require(person.error)
        #expect(error.code == .conflict)
        #expect(error.key == "person")
        #expect(
            error.message == """
                the record changed while it was being migrated, 3 times; it was left as the other writer stored \
                it, still outdated
                """)
        #expect(store.committed == 3)
        #expect(try base.data(forKey: "person") == bytes(#"{"name":"Bea3","age":"40"}"#), "the last writer's bytes")
        #expect(reports.first { $0.key == "trialInfo" }?.state == .migrated)
    }

    @Test("a record another writer removed meanwhile is reported removed, with a note, and stays removed")
    func removed() throws {
        let (base, instance, _) = try seededStore("memory")
        let store = OtherWriterStore(base: base) { batch in
            if batch == 1 { try instance.removeData(forKey: "person") }
        }
        let reports = try run(store)
        #expect(
            reports[0]
                == RecordReport(
                    key: "person", schema: "Person", latestVersion: 3, state: .removed,
                    note: "removed by another writer while it was being migrated"))
        #expect(try base.data(forKey: "person") == nil)
        #expect(store.committed == 1)
    }

    @Test("a record another writer replaced with one this release cannot read is unreadable, with a note")
    func replacedUnreadable() throws {
        let broken = bytes(#"{"name":1}"#)
        let (base, instance, _) = try seededStore("memory")
        let store = OtherWriterStore(base: base) { batch in
            if batch == 1 { try instance.setData(broken, forKey: "person") }
        }
        let person = try #require(try run(store).first { $0.key == "person" })
        #expect(person.state == .unreadable)
        #expect(person.error?.code == .unrecognisedRecord)
        #expect(person.note == Self.leftAsStored)
        #expect(try base.data(forKey: "person") == broken)
    }
}
