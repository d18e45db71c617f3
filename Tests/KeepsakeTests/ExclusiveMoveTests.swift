import Foundation
import KeepsakeDefaults
import KeepsakeMemory
import Synchronization
import Testing

@testable import Keepsake

/// A source store on which another writer removes `key` just before the first batch (a
/// move's removals).
private final class RemovedBeforeRemovalStore: RecordStore {
    let base: any RecordStore
    let key: String
    private let batches = Mutex(0)

    init(_ base: any RecordStore, removing key: String) {
        self.base = base
        self.key = key
    }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }

    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        if batches.withLock({ count in
            count += 1
            return count == 1
        }) {
            try base.removeData(forKey: key)
        }
        return try base.commit(writes)
    }
}

/// Runs `body` on `count` threads at once and waits for every one.
private func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let start = DispatchSemaphore(value: 0)
    let finished = DispatchGroup()
    for index in 0..<count {
        finished.enter()
        Thread {
            start.wait()
            body(index)
            finished.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    finished.wait()
}

@Suite("StoreTransfer: moves from one source are exclusive")
struct ExclusiveMoveTests {
    /// A suite at `path` holding `count` plain values `k0…`.
    func seed(_ path: String, count: Int) throws -> [String] {
        let keys = (0..<count).map { "k\($0)" }
        let results = try DefaultsStore(path: path).commit(
            keys.map { StoreWrite(key: $0, value: bytes(#"{"value":"\#($0)"}"#)) })
        #expect(results.allSatisfy { $0 == .applied })
        return keys
    }

    @Test("two moves at once from one source to two destinations: each record ends in exactly one")
    func twoMovesAtOnce() throws {
        let directory = try temporaryDirectory()
        for round in 0..<25 {
            let source = "\(directory)/source-\(round).json"
            let keys = try seed(source, count: 40)
            let destinations = ["\(directory)/a-\(round).json", "\(directory)/b-\(round).json"]
            let reports = Mutex<[Int: Result<TransferReport, KeepsakeError>]>([:])
            concurrently(2) { index in
                // Each move opens the source on its own, as two processes would.
                let transfer = StoreTransfer(
                    from: DefaultsStore(path: source), to: DefaultsStore(path: destinations[index]))
                let result = Result { () throws(KeepsakeError) in try transfer.run(.all, options: .init(move: true)) }
                reports.withLock { $0[index] = result }
            }
            var seen: [String: Int] = [:]
            for index in 0..<2 {
                let report = try #require(try reports.withLock { $0[index] }?.get())
                #expect(report.outcome == .completed, "round \(round), move \(index): \(report)")
                #expect(report.records.allSatisfy { $0.state == .moved && $0.error == nil && $0.note == nil })
                let held = try DefaultsStore(path: destinations[index]).keys()
                // The report lists exactly what this move put in its destination.
                #expect(Set(report.records.map(\.key)) == Set(held), "round \(round), move \(index)")
                for key in held { seen[key, default: 0] += 1 }
            }
            #expect(seen.count == keys.count && seen.values.allSatisfy { $0 == 1 }, "round \(round): \(seen)")
            #expect(try DefaultsStore(path: source).keys() == [])
        }
    }

    @Test("a move waits for another move from the same suite, reached by another path, up to its timeout")
    func secondMoveTimesOut() throws {
        let directory = try temporaryDirectory()
        let source = directory + "/real/suite.json"
        try FileManager.default.createDirectory(atPath: directory + "/real", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/link", withDestinationPath: directory + "/real")
        _ = try seed(source, count: 3)
        let paused = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0)
        let first = Mutex<Result<TransferReport, KeepsakeError>?>(nil)
        let finished = DispatchGroup()
        finished.enter()
        Thread {
            let transfer = StoreTransfer(
                from: DefaultsStore(path: source), to: DefaultsStore(path: directory + "/a.json"))
            let result = Result { () throws(KeepsakeError) in
                try transfer.run(.all, options: .init(move: true)) { step in
                    guard step == .written else { return }
                    paused.signal()
                    resume.wait()
                }
            }
            first.withLock { $0 = result }
            finished.leave()
        }.start()
        paused.wait()
        // The first move holds the lock (paused between its write and its read-back).
        let second = StoreTransfer(
            from: DefaultsStore(path: directory + "/link/suite.json"), to: DefaultsStore(path: directory + "/b.json"))
        #expect {
            try second.run(.all, options: .init(move: true, lockTimeout: .milliseconds(200)))
        } throws: { error in
            (error as? KeepsakeError)?.code == .lockTimeout
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/b.json"))  // nothing copied
        // A copy takes no lock.
        let copy = try StoreTransfer(
            from: DefaultsStore(path: directory + "/link/suite.json"), to: DefaultsStore(path: directory + "/c.json")
        ).run(.all)
        #expect(copy.outcome == .completed && copy.records.count == 3)
        resume.signal()
        finished.wait()
        let report = try #require(try first.withLock { $0 }?.get())
        #expect(report.outcome == .completed && report.records.count == 3)
        // Once the first is done, the second moves what the source holds then: nothing.
        let after = try second.run(.all, options: .init(move: true, lockTimeout: .milliseconds(200)))
        #expect(after.outcome == .completed && after.records.isEmpty)
    }

    @Test("a move of named keys another move took says where they went")
    func namedKeysMovedBefore() throws {
        let directory = try temporaryDirectory()
        let source = directory + "/source.json"
        _ = try seed(source, count: 3)
        let first = try StoreTransfer(from: DefaultsStore(path: source), to: DefaultsStore(path: directory + "/a.json"))
            .run(.keys(["k0", "k1"]), options: .init(move: true))
        #expect(first.outcome == .completed)
        let second = try StoreTransfer(
            from: DefaultsStore(path: source), to: DefaultsStore(path: directory + "/b.json")
        )
        .run(.keys(["k1", "k2"]), options: .init(move: true))
        #expect(second.outcome == .refused)
        let error = try #require(second.records.first { $0.key == "k1" }?.error)
        #expect(error.code == .notFound)
        #expect(error.message.contains("moved it to defaults:\(directory)/a.json"), "\(error.message)")
        #expect(second.records.first { $0.key == "k2" }?.state == .notCopied)
        #expect(try DefaultsStore(path: source).keys() == ["k2"])
    }

    @Test("a record another writer removed from the source before the move did is moved, with a note")
    func removedMeanwhile() throws {
        let directory = try temporaryDirectory()
        let suite = DefaultsStore(path: directory + "/source.json")
        _ = try seed(suite.path, count: 2)
        let destination = DefaultsStore(path: directory + "/d.json")
        let report = try StoreTransfer(from: RemovedBeforeRemovalStore(suite, removing: "k0"), to: destination)
            .run(.all, options: .init(move: true))
        #expect(report.outcome == .completed)
        #expect(report.records.map(\.state) == [.moved, .moved])
        #expect(report.records[0].error == nil)
        let note = try #require(report.records[0].note)
        #expect(note.contains("another writer removed") && note.contains(destination.uri))
        #expect(report.records[1].note == nil)
        #expect(try suite.keys() == [])
        #expect(try destination.keys() == ["k0", "k1"])
    }

    @Test("a record another writer changed in the source before the removal is in both, naming both stores")
    func changedMeanwhile() throws {
        let directory = try temporaryDirectory()
        let suite = DefaultsStore(path: directory + "/source.json")
        _ = try seed(suite.path, count: 1)
        let destination = DefaultsStore(path: directory + "/d.json")
        let report = try StoreTransfer(
            from: FaultyStore(suite, fault: .changedBeforeFirstBatch("k0")), to: destination
        ).run(.all, options: .init(move: true))
        #expect(report.outcome == .incomplete)
        #expect(report.records.map(\.state) == [.inBoth])
        let error = try #require(report.records[0].error)
        #expect(error.code == .conflict)
        #expect(error.message.contains(suite.uri) && error.message.contains(destination.uri))
    }

    @Test("store identity: one suite through a symbolic link and across a write")
    func identity() throws {
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/real", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/link", withDestinationPath: directory + "/real")
        let suite = DefaultsStore(path: directory + "/real/s.json")
        try suite.setData(bytes("1"), forKey: "a")
        let before = suite.identity
        try suite.setData(bytes("2"), forKey: "a")  // a new file (and inode) under the same name
        #expect(suite.identity == before)
        #expect(DefaultsStore(path: "\(directory)/link/s.json").identity == before)
        #expect(DefaultsStore(path: "\(directory)/real/other.json").identity != before)
        #expect(InMemoryStore(name: "app").identity == "memory:app")
        let hash = StoreTransfer.identityHash(before)
        #expect(hash.utf8.count == 32 && hash != StoreTransfer.identityHash("keyring:app"))
    }
}
