import Foundation
import Keepsake
import KeepsakeMemory
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

/// A store that lets another writer change a key between the migrator's read and its write:
/// the fault a real concurrent writer would cause, injected deterministically.
private final class InterferingStore: RecordStore {
    let base: InMemoryStore
    let interference: (key: String, value: Data)
    init(base: InMemoryStore, interference: (key: String, value: Data)) {
        self.base = base
        self.interference = interference
    }
    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        try base.setData(interference.value, forKey: interference.key)
        return try base.commit(writes)
    }
}

@Suite("Migrator")
struct MigratorTests {
    let context = MigrationContext.fixed(
        now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")

    func seededStore() -> InMemoryStore {
        InMemoryStore(
            name: "batch",
            contents: [
                "person": bytes(#"{"name":"Ada","age":"36"}"#),
                "trialInfo": bytes(#"{"version":1,"startDate":700000000,"deviceId":"old","userId":"u0"}"#),
                "theme": bytes(#""dark""#),
                "broken": bytes(#"{"name":1}"#),
                "future": bytes(#"{"schema":"Person","version":8,"data":{}}"#),
                "other": bytes(#"{"schema":"Invoice","version":1,"data":{}}"#)
            ])
    }

    func migrator(_ store: any RecordStore) -> Migrator {
        Migrator(store: store, chains: SampleModels.all, context: context, keyModels: ["broken": "Person"])
    }

    @Test(
        "a record that does not parse but names its model and a newer version is reported as that model's, unreadable, with both"
    )
    func unparsableNamedRecord() throws {
        let duplicate = bytes(#"{"schema":"Person","version":9,"data":{"alias":"A","alias":"B"}}"#)
        let store = InMemoryStore(contents: ["elsewhere": duplicate, "stray": bytes(#"{"a":1,"a":2}"#)])
        let reports = try migrator(store).plan()
        let named = try #require(reports.first { $0.key == "elsewhere" })
        #expect(named.state == .unreadable)
        #expect(named.schema == "Person")
        #expect(named.storedVersion == 9)
        #expect(named.latestVersion == 3)
        let message = try #require(named.error.map { "\($0)" })
        #expect(message.contains("duplicate"), "\(message)")
        #expect(message.contains("it names Person version 9, newer than this release's latest (3)"), "\(message)")
        #expect(reports.first { $0.key == "stray" }?.state == .unmanaged)
        #expect(try store.data(forKey: "elsewhere") == duplicate)
    }

    @Test("plan reports every key's model, versions and state without writing")
    func plan() throws {
        let store = seededStore()
        let before = try store.allData().map(\.data)
        let reports = try migrator(store).plan()
        let byKey = Dictionary(uniqueKeysWithValues: reports.map { ($0.key, $0) })
        #expect(reports.map(\.key) == ["broken", "future", "other", "person", "theme", "trialInfo"])
        #expect(
            byKey["person"]
                == RecordReport(
                    key: "person", schema: "Person", storedVersion: 0, latestVersion: 3,
                    state: .outdated, form: .bare, steps: [1, 2, 3]))
        #expect(byKey["trialInfo"]?.state == .outdated)
        #expect(byKey["trialInfo"]?.form == .inlineVersion)
        #expect(byKey["trialInfo"]?.steps == [2])
        #expect(byKey["theme"]?.state == .unmanaged)
        #expect(byKey["other"]?.state == .unmanaged)
        #expect(byKey["other"]?.schema == "Invoice")
        #expect(byKey["future"]?.state == .newer)
        #expect(byKey["future"]?.storedVersion == 8)
        #expect(byKey["future"]?.error?.code == .newerVersion)
        #expect(byKey["broken"]?.state == .unreadable)
        #expect(byKey["broken"]?.error?.code == .unrecognisedRecord)
        #expect(try store.allData().map(\.data) == before)
    }

    @Test("run migrates what it can, leaves the rest byte for byte, and a second run writes nothing")
    func runThenRunAgain() throws {
        let store = seededStore()
        let untouched = ["broken", "future", "other", "theme"]
        let before = try untouched.map { try store.data(forKey: $0) }
        let reports = try migrator(store).run()
        let states = Dictionary(uniqueKeysWithValues: reports.map { ($0.key, $0.state) })
        #expect(
            states == [
                "broken": .unreadable, "future": .newer, "other": .unmanaged, "person": .migrated,
                "theme": .unmanaged, "trialInfo": .migrated
            ])
        #expect(try untouched.map { try store.data(forKey: $0) } == before)
        #expect(
            try store.data(forKey: "person")
                == bytes(
                    #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#))
        #expect(
            try store.data(forKey: "trialInfo")
                == bytes(
                    #"{"data":{"deviceId":"old","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
                ))

        let snapshot = try store.allData().map(\.data)
        let again = try migrator(store).run()
        #expect(again.filter { $0.state == .migrated }.isEmpty)
        #expect(again.first { $0.key == "person" }?.state == .current)
        #expect(try store.allData().map(\.data) == snapshot)
    }

    @Test("run with a backup saves each migrated record's original bytes, private, before writing")
    func backup() throws {
        let store = seededStore()
        let directory = try temporaryDirectory()
        let destination = BackupDirectory.timestamped(
            in: directory + "/backups", at: Date(timeIntervalSince1970: 1_763_700_000))
        #expect(destination.path.hasSuffix("/backups/20251121T044000Z"))
        let reports = try migrator(store).run(backup: destination)
        let person = try #require(reports.first { $0.key == "person" })
        #expect(person.backupPath == destination.path + "/records.jsonl")
        #expect(
            try BackupDirectory.original(forKey: "person", at: destination.path).bytes
                == bytes(#"{"name":"Ada","age":"36"}"#))
        #expect(try mode(of: destination.path + "/records.jsonl") == 0o600)
        #expect(try mode(of: destination.path) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: destination.path).sorted()
        #expect(files == ["records.jsonl"], "one document for the run")
        #expect(
            Set(try BackupDirectory.originals(at: destination.path).map(\.key)) == ["person", "trialInfo"],
            "only migrated records are backed up")
    }

    @Test("two runs in the same second get backup directories of their own, and both keep their backups")
    func backupDirectoriesNeverCollide() throws {
        let directory = try temporaryDirectory()
        let second = Date(timeIntervalSince1970: 1_763_700_000)
        var paths: [String] = []
        for run in 1...3 {
            let store = seededStore()
            try store.setData(bytes(#"{"name":"Run \#(run)","age":"36"}"#), forKey: "person")
            let destination = try BackupDirectory.create(in: directory + "/backups", at: second)
            paths.append(destination.path)
            _ = try migrator(store).run(backup: destination)
        }
        #expect(
            paths.map { ($0 as NSString).lastPathComponent } == [
                "20251121T044000Z", "20251121T044000Z-2", "20251121T044000Z-3"
            ])
        for (run, path) in paths.enumerated() {
            #expect(
                try BackupDirectory.original(forKey: "person", at: path).bytes
                    == bytes(#"{"name":"Run \#(run + 1)","age":"36"}"#))
            #expect(try mode(of: path) == 0o700)
        }
    }

    @Test("a second backup of a key in the same directory is kept beside the first, never over it")
    func backupFilesNeverOverwritten() throws {
        let destination = BackupDirectory(path: try temporaryDirectory() + "/b")
        #expect(
            try destination.save(bytes("1"), forKey: "person", store: "memory:x") == destination.path + "/person.json")
        #expect(
            try destination.save(bytes("2"), forKey: "person", store: "memory:x") == destination.path + "/person~2.json"
        )
        #expect(
            try destination.save(bytes("3"), forKey: "person", store: "memory:x") == destination.path + "/person~3.json"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination.path + "/person.json")) == bytes("1"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination.path + "/person~2.json")) == bytes("2"))
        #expect(BackupDirectory.fileName(forKey: "person~2") == "person%7E2.json", "no key's file name has a ~")
        destination.removeIfEmpty()
        #expect(
            FileManager.default.fileExists(atPath: destination.path), "a directory holding backups is never removed")
    }

    @Test("backup file names escape characters that are not safe in a file name")
    func backupNames() {
        #expect(BackupDirectory.fileName(forKey: "person") == "person.json")
        #expect(BackupDirectory.fileName(forKey: "a/b c") == "a%2Fb%20c.json")
        #expect(BackupDirectory.fileName(forKey: "..") == "%2E..json")
    }

    @Test("a record another writer changed during the run is reported as it now stands and keeps that writer's bytes")
    func conflict() throws {
        let base = seededStore()
        let theirs = bytes(#"{"alias":"Theirs","email":"t@x"}"#)
        let store = InterferingStore(base: base, interference: ("person", theirs))
        let reports = try migrator(store).run()
        let person = try #require(reports.first { $0.key == "person" })
        // The other writer stored the latest version (bare): current, not "outdated" (more in
        // MigratorOtherWriterTests).
        #expect(person.state == .current)
        #expect(person.storedVersion == 3)
        #expect(person.error == nil)
        #expect(person.note == "brought to the latest version by another writer while it was being migrated")
        #expect(try base.data(forKey: "person") == theirs)
        #expect(reports.first { $0.key == "trialInfo" }?.state == .migrated, "the other records still migrate")
    }

    @Test("preview shows the latest envelope of a record without writing it")
    func preview() throws {
        let store = seededStore()
        let (report, latest) = try #require(try migrator(store).preview(key: "person"))
        #expect(report.state == .outdated)
        #expect(latest == bytes(#"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#))
        #expect(try store.data(forKey: "person") == bytes(#"{"name":"Ada","age":"36"}"#))
        #expect(try migrator(store).preview(key: "missing") == nil)
    }

    @Test("progress is reported for every record and once for the write")
    func progress() throws {
        let seen = Mutex<[MigrationProgress]>([])
        _ = try migrator(seededStore()).run(progress: { progress in seen.withLock { $0.append(progress) } })
        let events = seen.withLock { $0 }
        #expect(events.count == 7)
        #expect(events.first == MigrationProgress(evaluated: 1, total: 6, written: false))
        #expect(events.last == MigrationProgress(evaluated: 6, total: 6, written: true))
    }

    @Test("status and plan do not verify the bytes to write; run does, and refuses what does not round-trip")
    func verificationOnlyBeforeAWrite() throws {
        let store = InMemoryStore(contents: ["drift": bytes(#"{"version":0,"n":1}"#)])
        let migrator = Migrator(store: store, chains: [Drift.chain.erased], context: context)
        let planned = try #require(try migrator.plan().first)
        #expect(planned.state == .outdated && planned.error == nil, "plan migrates in memory only")
        let ran = try #require(try migrator.run().first)
        #expect(ran.state == .unreadable)
        #expect(ran.error?.code == .verificationFailed)
        #expect(try store.data(forKey: "drift") == bytes(#"{"version":0,"n":1}"#))
    }
}

/// A latest version whose encoding changes on every call: it can never be verified.
private struct DriftV0: ModelVersion {
    static let version = 0
    let version: Int
    let n: Int
}

private struct DriftV1: ModelVersion {
    typealias Predecessor = DriftV0
    static let version = 1
    let n: Int
    enum CodingKeys: String, CodingKey { case n }
    init(migrating previous: DriftV0, context: MigrationContext) { n = previous.n }
    init(from decoder: any Decoder) throws {
        n = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .n)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(driftCounter.add(1, ordering: .relaxed).newValue, forKey: .n)
    }
}

private let driftCounter = Atomic<Int>(0)

private enum Drift {
    static let chain = ModelChain<DriftV1>(name: "Drift", defaultKeys: ["drift"])
}
