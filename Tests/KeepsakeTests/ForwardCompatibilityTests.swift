import Foundation
import Keepsake
import KeepsakeMemory
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

// Two releases of one model in one process: the older release's chain ends at MemoV0, the newer
// one's at MemoV1, which only adds a key and declares V0 readers compatible.

private struct MemoV0: ModelVersion, Equatable {
    static let version = 0
    var text: String
}

private struct MemoV1: ModelVersion, Equatable {
    typealias Predecessor = MemoV0
    static let version = 1
    static let oldestReader = 0
    var text: String
    var color: String?
    init(text: String, color: String?) {
        self.text = text
        self.color = color
    }
    init(migrating previous: MemoV0, context: MigrationContext) {
        self.init(text: previous.text, color: nil)
    }
}

/// Declares V0 readers compatible but drops the key V0 requires.
private struct BrokenMemoV1: ModelVersion {
    typealias Predecessor = MemoV0
    static let version = 1
    static let oldestReader = 0
    var body: String
    init(migrating previous: MemoV0, context: MigrationContext) { body = previous.text }
}

private let olderRelease = ModelChain<MemoV0>(name: "Memo", defaultKeys: ["memo"])
private let newerRelease = ModelChain<MemoV1>(name: "Memo", defaultKeys: ["memo"])

@Suite("Forward compatibility: an older release reading a newer record")
struct ForwardCompatibilityTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0))

    @Test("a version that declares older readers compatible records the oldest reader in its envelope")
    func envelopeNamesOldestReader() throws {
        try ChainValidation.validate(newerRelease)
        #expect(
            try newerRelease.encode(MemoV1(text: "hi", color: "red"))
                == bytes(
                    #"{"data":{"color":"red","text":"hi"},"oldestReader":0,"schema":"Memo","version":1}"#))
        // A version without the declaration writes the envelope exactly as before.
        #expect(
            try Person.chain.encode(PersonV3(alias: "a", email: "b"))
                == bytes(
                    #"{"data":{"alias":"a","email":"b"},"schema":"Person","version":3}"#))
    }

    @Test("the older release reads it as its own latest type, says it is newer, and writes nothing")
    func olderReads() throws {
        let stored = try newerRelease.encode(MemoV1(text: "hi", color: "red"))
        guard case let .newerReadable(record) = olderRelease.outcome(of: stored, context: context) else {
            Issue.record("expected newerReadable")
            return
        }
        #expect(record.value == MemoV0(text: "hi"))
        #expect(record.isNewer && record.storedVersion == 1 && record.latestVersion == 0 && !record.wasMigrated)

        let store = InMemoryStore(contents: ["memo": stored])
        let loaded = try #require(try Vault(store: store, context: context).load(olderRelease))
        #expect(loaded.value == MemoV0(text: "hi"))
        #expect(loaded.writeBack == .notNeeded)
        let report = try #require(
            try Migrator(store: store, chains: [olderRelease.erased], context: context).run().first)
        #expect(report.state == .newerReadable && report.error == nil && report.storedVersion == 1)
        #expect(try store.data(forKey: "memo") == stored, "never migrated or rewritten on its own")
    }

    @Test("a save by the older release keeps the newer keys and version; the newer release reads both changes")
    func olderSavesNewerKeepsItsKeys() throws {
        let store = InMemoryStore(contents: ["memo": try newerRelease.encode(MemoV1(text: "hi", color: "red"))])
        try Vault(store: store, context: context).save(MemoV0(text: "changed by the older release"), in: olderRelease)
        #expect(
            try store.data(forKey: "memo")
                == bytes(
                    #"{"data":{"color":"red","text":"changed by the older release"},"oldestReader":0,"schema":"Memo","version":1}"#
                ))
        let newer = try #require(try Vault(store: store, context: context).load(newerRelease))
        #expect(newer.value == MemoV1(text: "changed by the older release", color: "red"))
        #expect(newer.writeBack == .notNeeded && !newer.wasMigrated)
    }

    @Test("a newer record without the declaration stays newerVersion: not read, not overwritten")
    func undeclaredStaysNewer() throws {
        let stored = bytes(#"{"data":{"alias":"a","email":"b","phone":"1"},"schema":"Person","version":4}"#)
        let store = InMemoryStore(contents: ["person": stored])
        let vault = Vault(store: store, context: context)
        #expect { try vault.load(Person.chain) } throws: { ($0 as? KeepsakeError)?.code == .newerVersion }
        #expect { try vault.save(PersonV3(alias: "x", email: "y"), in: Person.chain) } throws: {
            ($0 as? KeepsakeError)?.code == .newerVersion
        }
        #expect(try store.data(forKey: "person") == stored)
    }

    @Test("a newer record that names an oldest reader above this release is newer, untouched")
    func readerTooNew() throws {
        let stored = bytes(#"{"data":{"text":"x"},"oldestReader":1,"schema":"Memo","version":2}"#)
        #expect(olderRelease.outcome(of: stored, context: context).error?.code == .newerVersion)
    }

    @Test(
        "an oldest reader that is not an integer between 0 and the version is a corrupt record",
        arguments: [#""0""#, "-1", "3", "1.5"])
    func corruptOldestReader(_ reader: String) {
        let stored = bytes(#"{"data":{"text":"x"},"oldestReader":\#(reader),"schema":"Memo","version":2}"#)
        #expect(olderRelease.outcome(of: stored, context: context).error?.code == .corruptRecord)
    }

    @Test("declaring older readers compatible while dropping a key they require fails validation")
    func brokenDeclaration() {
        let chain = ModelChain<BrokenMemoV1>(name: "Memo", defaultKeys: ["memo"])
        #expect {
            try ChainValidation.validate(chain)
        } throws: { error in
            let error = error as! ChainError
            return error.version == 1 && error.field == "text" && error.reason.contains("readers from version 0")
        }
    }
}

/// An in-memory store that records each write it is given, as the store receives it.
private final class RecordingStore: RecordStore {
    let base = InMemoryStore()
    let writes = Mutex<[StoreWrite]>([])
    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        self.writes.withLock { $0.append(contentsOf: writes) }
        return try base.commit(writes)
    }
}

@Suite("Each pipeline decision once")
struct PipelineDecisionTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0))

    @Test("a Vault write of the latest envelope is marked verified (stores skip their check); a merge is not")
    func verifiedWrites() throws {
        let store = RecordingStore()
        let vault = Vault(store: store, context: context)
        try vault.save(MemoV1(text: "a", color: nil), in: newerRelease)
        try vault.update(newerRelease) { _ in MemoV1(text: "b", color: "red") }
        try store.base.setData(bytes(#"{"text":"old"}"#), forKey: "memo")  // a bare V0 record
        #expect(try vault.load(newerRelease)?.writeBack == .written)
        // The older release saves and updates over the newer record: merges, not its own envelope.
        let older = Vault(store: store, context: context)
        try older.save(MemoV0(text: "c"), in: olderRelease)
        try older.update(olderRelease) { _ in MemoV0(text: "d") }
        let marks = store.writes.withLock { $0.map(\.valueIsVerified) }
        #expect(marks == [true, true, true, false, false], "save, update, write-back; merged save, merged update")
        #expect(
            try store.data(forKey: "memo")
                == bytes(#"{"data":{"text":"d"},"oldestReader":0,"schema":"Memo","version":1}"#))
    }

    @Test("an update over a newer record it may not change names the store and key, and writes nothing")
    func updateOverNewerIsLocated() throws {
        let stored = bytes(#"{"data":{"text":"x"},"schema":"Memo","version":2}"#)
        let store = InMemoryStore(name: "memos", contents: ["memo": stored])
        let error = try #require(throws: KeepsakeError.self) {
            try Vault(store: store, context: context).update(newerRelease) { _ in MemoV1(text: "y", color: nil) }
        }
        #expect(error.code == .newerVersion && error.store == "memory:memos" && error.key == "memo")
        #expect(try store.data(forKey: "memo") == stored)
    }

    @Test("RecordOutcome.get: the record, nil when absent, the error when it cannot be used")
    func outcomeGet() throws {
        #expect(try newerRelease.outcome(of: nil, context: context).get() == nil)
        let current = try newerRelease.encode(MemoV1(text: "t", color: nil))
        #expect(try newerRelease.outcome(of: current, context: context).get()?.value == MemoV1(text: "t", color: nil))
        #expect(try newerRelease.outcome(of: bytes(#"{"text":"old"}"#), context: context).get()?.storedVersion == 0)
        #expect { try newerRelease.outcome(of: bytes("{"), context: context).get() } throws: {
            ($0 as? KeepsakeError)?.code == .corruptRecord
        }
        #expect {
            try olderRelease.outcome(of: bytes(#"{"data":{},"schema":"Memo","version":5}"#), context: context).get()
        } throws: { ($0 as? KeepsakeError)?.code == .newerVersion }
    }
}
