import Foundation
import Migrations
import Synchronization
import Testing

@testable import Keepsake
@testable import KeepsakeDefaults

/// A run over a defaults suite writes the new suite while it evaluates (`DefaultsRunStream`):
/// what it stores and reports must be exactly what a run holding its writes until the commit
/// stores and reports, and another writer's change must never be lost to it.
@Suite("A run streaming its writes into the new suite")
struct StreamedRunTests {
    let context = MigrationContext.fixed(
        now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")

    /// A suite of `MigratorLargeStoreTests.count` records of every state, in a new directory.
    static func makeSuite(streams: Bool) throws -> (store: DefaultsStore, directory: String) {
        let directory = try temporaryDirectory()
        let store = DefaultsStore(path: directory + "/suite.json", lockTimeout: .seconds(10), streamsRuns: streams)
        let records = (0..<MigratorLargeStoreTests.count).map(MigratorLargeStoreTests.record)
        _ = try store.commit(records.map { StoreWrite(key: $0.key, value: $0.bytes) })
        return (store, directory)
    }

    static func fileBytes(_ store: DefaultsStore) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: store.path))
    }

    /// The names in `directory`: the suite and its lock file, and nothing a run left behind.
    static func names(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    @Test("the suite it writes and the reports it gives are those of a run holding its writes, byte for byte")
    func sameAsHeld() throws {
        let (streamed, streamedDirectory) = try Self.makeSuite(streams: true)
        let (held, heldDirectory) = try Self.makeSuite(streams: false)
        defer {
            try? FileManager.default.removeItem(atPath: streamedDirectory)
            try? FileManager.default.removeItem(atPath: heldDirectory)
        }
        #expect(try Self.fileBytes(streamed) == Self.fileBytes(held))
        // The suite's file system takes unnamed files (else this test would compare two held runs).
        _ = try streamed.keys()
        let probe = try #require(streamed.beginRunStream(), "no O_TMPFILE where the tests run")
        probe.discard()
        #expect(held.beginRunStream() == nil)

        let ranStreamed = try Migrator(store: streamed, chains: [Person.chain.erased], context: context).run()
        let ranHeld = try Migrator(store: held, chains: [Person.chain.erased], context: context).run()
        #expect(ranStreamed.count == MigratorLargeStoreTests.count)
        #expect(ranStreamed.filter { $0.state == .migrated }.count > 4_000)
        #expect(ranStreamed.map(\.key) == ranHeld.map(\.key))
        #expect(ranStreamed.map(\.state) == ranHeld.map(\.state))
        #expect(ranStreamed.map(\.steps) == ranHeld.map(\.steps))
        #expect(ranStreamed.map { $0.error?.message } == ranHeld.map { $0.error?.message })
        #expect(try Self.fileBytes(streamed) == Self.fileBytes(held))
        #expect(try Self.names(in: streamedDirectory) == ["suite.json", "suite.json.lock"])
        #expect(try mode(of: streamed.path) == 0o600)

        // Read back as a new instance would: every migrated record is its latest envelope.
        let reread = DefaultsStore(path: streamed.path)
        for report in ranStreamed where report.state == .migrated {
            let index = try #require(Int(report.key.dropFirst(2)))
            #expect(
                try reread.data(forKey: report.key)
                    == Person.chain.encode(PersonV3(alias: "P\(index)", email: "---")))
        }
        // Nothing left to migrate: a second run writes nothing and leaves the file as it is.
        let before = try Self.fileBytes(streamed)
        let again = try Migrator(store: streamed, chains: [Person.chain.erased], context: context).run()
        #expect(again.allSatisfy { $0.state != .migrated && $0.state != .outdated })
        #expect(try Self.fileBytes(streamed) == before)
    }

    /// Another instance writing the suite while the run is under way, once `evaluated` records
    /// have been handed on: it replaces an outdated record the run has not reached yet (or, at
    /// the end, has reached), and adds a key.
    @Test(
        "another writer's change during the run: the stream is not written, every other record is migrated around it",
        arguments: [1_000, MigratorLargeStoreTests.count])
    func otherWriterMeanwhile(evaluated: Int) throws {
        let (store, directory) = try Self.makeSuite(streams: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let theirs = bytes(#"{"data":{"alias":"Theirs","email":"t@x"},"schema":"Person","version":3}"#)
        let changed = "p-05001"  // outdated (not a multiple of 7, 89, 97 or 101)
        #expect(MigratorLargeStoreTests.record(5_001).plan == .outdated)
        let other = DefaultsStore(path: store.path)
        let wrote = Mutex(false)
        let ran = try Migrator(store: store, chains: [Person.chain.erased], context: context).run(progress: {
            progress in
            guard progress.evaluated == evaluated, !progress.written else { return }
            wrote.withLock { $0 = true }
            do {
                _ = try other.commit([
                    StoreWrite(key: changed, value: theirs), StoreWrite(key: "zz-added", value: bytes(#""theirs""#))
                ])
            } catch {
                Issue.record("the other writer's write failed: \(error)")
            }
        })
        #expect(wrote.withLock { $0 })

        let reread = DefaultsStore(path: store.path)
        #expect(try reread.data(forKey: changed) == theirs)
        #expect(try reread.data(forKey: "zz-added") == bytes(#""theirs""#))
        let report = try #require(ran.first { $0.key == changed })
        #expect(report.state == .current)
        #expect(report.note == Migrator.Note.current)
        for (index, record) in (0..<MigratorLargeStoreTests.count).map(MigratorLargeStoreTests.record).enumerated()
        where record.key != changed {
            let stored = try reread.data(forKey: record.key)
            if record.plan == .outdated {
                #expect(
                    stored == (try Person.chain.encode(PersonV3(alias: "P\(index)", email: "---"))), "\(record.key)")
            } else {
                #expect(stored == record.bytes, "\(record.key) must keep its bytes")
            }
        }
        #expect(
            ran.filter { $0.state == .migrated }.count
                == (0..<MigratorLargeStoreTests.count).filter { MigratorLargeStoreTests.record($0).plan == .outdated }
                .count - 1)
        #expect(try Self.names(in: directory) == ["suite.json", "suite.json.lock"])
    }
    /// A suite an app or a person wrote: members out of order, escaped and non-ASCII keys, odd
    /// spacing, plain values between records.
    @Test("a hand-written suite, out of order and oddly spaced, comes out as a held run writes it")
    func handWritten() throws {
        var members: [String] = []
        for index in (0..<(2 * 2_048 + 300)).reversed() {
            let key = index % 3 == 0 ? "caf\\u00e9-\(index)" : index % 3 == 1 ? "naïve \\\"\(index)\\\"" : "p\(index)"
            let value =
                index % 11 == 0
                ? "[1, 2,\n 3]"
                : #"{ "version" : 0, "schema":"Person", "data": {"name":"P\#(index)","age":"\#(index % 80)"} }"#
            members.append("\"\(key)\"  :\t\(value)")
        }
        let text = "{\r\n" + members.joined(separator: " ,\n") + "}"
        var stores: [DefaultsStore] = []
        var directories: [String] = []
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        for streams in [true, false] {
            let directory = try temporaryDirectory()
            directories.append(directory)
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/suite.json"))
            stores.append(
                DefaultsStore(path: directory + "/suite.json", lockTimeout: .seconds(10), streamsRuns: streams))
        }
        let streamed = try Migrator(store: stores[0], chains: [Person.chain.erased], context: context).run()
        let held = try Migrator(store: stores[1], chains: [Person.chain.erased], context: context).run()
        #expect(streamed.filter { $0.state == .migrated }.count > 3_000)
        #expect(streamed.map(\.key) == held.map(\.key))
        #expect(streamed.map(\.state) == held.map(\.state))
        let written = try Self.fileBytes(stores[0])
        #expect(written == (try Self.fileBytes(stores[1])))
        #expect(written != Data(text.utf8))
        // Every plain value kept its bytes, every record is the latest envelope.
        let reread = DefaultsStore(path: stores[0].path)
        #expect(try reread.keys().count == 2 * 2_048 + 300)
        #expect(try reread.data(forKey: "p2024") == bytes("[1, 2,\n 3]"))
        #expect(try reread.data(forKey: "p2") == Person.chain.encode(PersonV3(alias: "P2", email: "---")))
    }
}
