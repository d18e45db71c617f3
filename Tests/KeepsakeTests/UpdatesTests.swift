import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

private struct CountV0: ModelVersion, Equatable {
    static let version = 0
    var count: Int
}

private let countChain = ModelChain<CountV0>(name: "Count", defaultKeys: ["count"])

extension RecordKeys {
    fileprivate static let count = RecordKey(chain: countChain)
}

/// Collects the elements of `updates` until `done` says so or `limit` passes, then stops
/// consuming (which ends the watch).
private func collect<Latest>(
    _ updates: AsyncStream<RecordUpdate<Latest>>, limit: Duration = .seconds(10),
    until done: @escaping @Sendable ([RecordUpdate<Latest>]) -> Bool
) async -> [RecordUpdate<Latest>] {
    let seen = Mutex<[RecordUpdate<Latest>]>([])
    let consumer = Task {
        for await update in updates {
            let enough = seen.withLock { seen in
                seen.append(update)
                return done(seen)
            }
            if enough { return }
        }
    }
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline, !consumer.isCancelled {
        if seen.withLock({ done($0) }) { break }
        try? await Task.sleep(for: .milliseconds(10))
    }
    consumer.cancel()
    _ = await consumer.value
    return seen.withLock { $0 }
}

/// What a consumer task has seen, shared with the test.
private final class Seen: Sendable {
    let items = Mutex<[String]>([])

    /// Waits (up to `limit`) until the last element seen is `last`; whether it came.
    func wait(for last: String, within limit: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if items.withLock({ $0.last }) == last { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

/// Starts watching `.count` on `store`: what its consumer has seen, and the consumer (cancel it
/// to stop watching).
private func watchCount(on store: any RecordStore) -> (seen: Seen, consumer: Task<Void, Never>) {
    let seen = Seen()
    let updates = Vault(store: store).updates(for: .count)
    let consumer = Task { for await update in updates { seen.items.withLock { $0.append(describe(update)) } } }
    return (seen, consumer)
}

/// A short description of an update, for comparisons: `3`, `absent`, `unreadable:corruptRecord`.
private func describe(_ update: RecordUpdate<CountV0>) -> String {
    switch update {
    case let .record(record): return String(record.value.count)
    case .absent: return "absent"
    case let .unreadable(error): return "unreadable:\(error.code)"
    case let .locked(error): return "locked:\(error.code)"
    case let .failed(error): return "failed:\(error.code)"
    }
}

/// An in-memory store whose reads take as long as a D-Bus round trip on a busy bus, are counted,
/// and time out on demand: the faults a keyring flooded with spoofed signals shows an observer,
/// which a real keyring cannot be made to show on demand. Writes and hints are the in-memory
/// store's own.
private final class SlowReadStore: RecordStore, ObservableStore {
    let base = InMemoryStore()
    let reads = Atomic<Int>(0)
    /// How many of the next reads time out.
    let timeouts = Atomic<Int>(0)

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }

    func data(forKey key: String) throws(KeepsakeError) -> Data? {
        reads.add(1, ordering: .relaxed)
        usleep(20_000)
        if timeouts.load(ordering: .relaxed) > 0 {
            timeouts.subtract(1, ordering: .relaxed)
            throw KeepsakeError(.timeout, store: uri, key: key, "injected: the bus did not answer in time")
        }
        return try base.data(forKey: key)
    }

    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { try base.commit(writes) }
    func changes() throws(KeepsakeError) -> StoreChanges { try base.changes() }
}

@Suite("Vault.updates(for:): the current value, then every change, by any writer", .serialized)
struct UpdatesTests {
    private func stores() throws -> [any RecordStore] {
        [InMemoryStore(), DefaultsStore(path: try temporaryDirectory() + "/sub/suite.json")]
    }

    @Test(
        "absent first; each change once; the same value coalesced; removal is absent; a bad record is its own element")
    func sequence() async throws {
        for store in try stores() {
            let vault = Vault(store: store)
            let seen = Seen()
            let updates = Vault(store: store).updates(for: .count)
            let consumer = Task {
                for await update in updates { seen.items.withLock { $0.append(describe(update)) } }
            }
            defer { consumer.cancel() }
            /// Waits (up to 10 s, however loaded the machine) until `expected` is what was seen.
            func expect(_ expected: [String]) async {
                let deadline = ContinuousClock.now + .seconds(10)
                while ContinuousClock.now < deadline, seen.items.withLock({ $0 }) != expected {
                    try? await Task.sleep(for: .milliseconds(10))
                }
                #expect(seen.items.withLock { $0 } == expected, "\(store.uri)")
            }
            await expect(["absent"])
            try await vault.save(CountV0(count: 1), for: .count)
            await expect(["absent", "1"])
            try await vault.save(CountV0(count: 1), for: .count)  // the same value: nothing new
            try await vault.save(CountV0(count: 2), for: .count)
            await expect(["absent", "1", "2"])
            try await vault.remove(.count)
            await expect(["absent", "1", "2", "absent"])
            try store.setData(Data(#"{"count":"x"}"#.utf8), forKey: "count")
            await expect(["absent", "1", "2", "absent", "unreadable:corruptRecord"])
            try store.setData(Data(#"{"count":3}"#.utf8), forKey: "count")  // bare V0, read and migrated
            await expect(["absent", "1", "2", "absent", "unreadable:corruptRecord", "3"])
            // An observation never writes back: the bare record is as it was written.
            #expect(try store.data(forKey: "count") == Data(#"{"count":3}"#.utf8))
        }
    }

    @Test("a burst of 1,000 writes: the final value comes last, and never an older value after a newer one")
    func burst() async throws {
        for store in try stores() {
            let vault = Vault(store: store)
            let observed = Task {
                await collect(vault.updates(for: .count), limit: .seconds(60)) { $0.last?.value?.count == 1_000 }
            }
            try await Task.sleep(for: .milliseconds(200))
            for count in 1...1_000 { try store.setData(Data(#"{"count":\#(count)}"#.utf8), forKey: "count") }
            let counts = await observed.value.compactMap(\.value?.count)
            #expect(counts.last == 1_000, "\(store.uri): \(counts.suffix(5))")
            #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 < $1 }, "\(store.uri): out of order")
        }
    }

    @Test("a suite's directory removed and restored from a backup: the watch says so, then sees later changes")
    func directoryRemovedAndRestored() async throws {
        let root = try temporaryDirectory()
        let directory = root + "/sub"
        let store = DefaultsStore(path: directory + "/suite.json")
        let vault = Vault(store: store)
        try await vault.save(CountV0(count: 1), for: .count)
        try FileManager.default.copyItem(atPath: directory, toPath: root + "/backup")
        let seen = Seen()
        let updates = vault.updates(for: .count)
        let consumer = Task {
            for await update in updates { seen.items.withLock { $0.append(describe(update)) } }
        }
        defer { consumer.cancel() }
        #expect(await seen.wait(for: "1"))
        try await vault.save(CountV0(count: 2), for: .count)
        #expect(await seen.wait(for: "2"))
        // `rm -r`, then the backup copied back (`cp -a`): the watch reports the record gone, then back.
        try FileManager.default.removeItem(atPath: directory)
        #expect(await seen.wait(for: "absent"), "\(seen.items.withLock { $0 })")
        try FileManager.default.copyItem(atPath: root + "/backup", toPath: directory)
        #expect(await seen.wait(for: "1"), "\(seen.items.withLock { $0 })")
        // And it still sees what is written after.
        try await vault.save(CountV0(count: 3), for: .count)
        #expect(await seen.wait(for: "3"), "\(seen.items.withLock { $0 })")
    }

    @Test("a flood of hints costs a read or two, not one each, and a change after it is still seen at once")
    func floodCoalesced() async throws {
        let store = SlowReadStore()
        try store.base.setData(Data(#"{"count":1}"#.utf8), forKey: "count")
        let (seen, consumer) = watchCount(on: store)
        defer { consumer.cancel() }
        #expect(await seen.wait(for: "1"))
        let before = store.reads.load(ordering: .relaxed)
        // 5,000 hints for the watched key (the same bytes rewritten): each is only a hint. While
        // they come, the record is read back to back (one read at a time); once they stop, one
        // more read at most — not one for each hint still buffered.
        let start = ContinuousClock.now
        for _ in 0..<5_000 { try store.base.setData(Data(#"{"count":1}"#.utf8), forKey: "count") }
        let flooding = ContinuousClock.now - start
        try await Task.sleep(for: .milliseconds(400))
        let settled = store.reads.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(600))
        #expect(store.reads.load(ordering: .relaxed) == settled, "reads went on after the flood")
        let reads = settled - before
        #expect(reads <= Int(flooding / .milliseconds(20)) + 3, "\(reads) reads for 5,000 hints in \(flooding)")
        try store.base.setData(Data(#"{"count":2}"#.utf8), forKey: "count")
        #expect(await seen.wait(for: "2", within: .seconds(2)), "\(seen.items.withLock { $0 })")
        #expect(seen.items.withLock { $0 } == ["1", "2"])
    }

    @Test("a read that times out is read again before it is reported; a timeout that lasts is reported")
    func transientTimeoutNotReported() async throws {
        let store = SlowReadStore()
        try store.base.setData(Data(#"{"count":1}"#.utf8), forKey: "count")
        let (seen, consumer) = watchCount(on: store)
        defer { consumer.cancel() }
        #expect(await seen.wait(for: "1"))
        store.timeouts.store(2, ordering: .relaxed)
        try store.base.setData(Data(#"{"count":2}"#.utf8), forKey: "count")
        #expect(await seen.wait(for: "2"), "\(seen.items.withLock { $0 })")
        #expect(seen.items.withLock { $0 } == ["1", "2"], "a state the store never had was reported")
        // A store that keeps timing out is reported as such, and its recovery too.
        store.timeouts.store(100, ordering: .relaxed)
        try store.base.setData(Data(#"{"count":3}"#.utf8), forKey: "count")
        #expect(await seen.wait(for: "failed:timeout"), "\(seen.items.withLock { $0 })")
        store.timeouts.store(0, ordering: .relaxed)
        try store.base.setData(Data(#"{"count":4}"#.utf8), forKey: "count")
        #expect(await seen.wait(for: "4"), "\(seen.items.withLock { $0 })")
    }

    @Test(
        "a record absent just after an unlock is read again for the store's settleAfterUnlock before it is reported absent",
        arguments: [0, 2])
    func unlockSettle(seconds: Int) async throws {
        let store = LockingStore(settleAfterUnlock: .seconds(seconds))
        try store.base.setData(Data(#"{"count":1}"#.utf8), forKey: "count")
        let (seen, consumer) = watchCount(on: store)
        defer { consumer.cancel() }
        #expect(await seen.wait(for: "1"))
        store.state.store(LockingStore.locked, ordering: .relaxed)
        store.hint(.locked)
        #expect(await seen.wait(for: "locked:locked"), "\(seen.items.withLock { $0 })")
        // Unlocked, but the items come back 300 ms later.
        store.state.store(LockingStore.hiding, ordering: .relaxed)
        store.hint(.unlocked)
        if seconds == 0 { #expect(await seen.wait(for: "absent"), "\(seen.items.withLock { $0 })") }
        try await Task.sleep(for: .milliseconds(300))
        store.state.store(LockingStore.open, ordering: .relaxed)
        store.hint(.any)
        #expect(await seen.wait(for: "1"), "\(seen.items.withLock { $0 })")
        let expected = seconds == 0 ? ["1", "locked:locked", "absent", "1"] : ["1", "locked:locked", "1"]
        #expect(seen.items.withLock { $0 } == expected)
    }

    @Test("a change to another key yields nothing; cancelling releases every watch")
    func otherKeysAndCancellation() async throws {
        // Stores no other test watches: tests running meanwhile open and close watches of their own.
        let stores: [any RecordStore] = [
            InMemoryStore(name: "cancel-\(UUID().uuidString)"),
            DefaultsStore(path: try temporaryDirectory() + "/sub/suite.json")
        ]
        for store in stores {
            let vault = Vault(store: store)
            let observed = Task {
                await collect(vault.updates(for: .count), limit: .seconds(2)) { _ in false }.map(describe)
            }
            try await Task.sleep(for: .milliseconds(200))
            try store.setData(Data("1".utf8), forKey: "other")
            try await Task.sleep(for: .milliseconds(200))
            #expect(WatchCount.open(store: store.uri) == 1, "\(store.uri): a watch is open while observed")
            #expect(await observed.value == ["absent"], "\(store.uri)")
        }
        // The consumers have stopped: their watches close, their threads end.
        func allClosed() -> Bool { stores.allSatisfy { WatchCount.open(store: $0.uri) == 0 } }
        for _ in 0..<50 where !allClosed() { try await Task.sleep(for: .milliseconds(20)) }
        for store in stores { #expect(WatchCount.open(store: store.uri) == 0, "\(store.uri)") }
    }
}

extension UpdatesTests {
    /// KeepsakeTesting's contract for observable stores, on the stores of this target (among the
    /// watching tests: they wait on Swift's pool).
    @Suite("The observable store contract")
    struct ObservableContract {
        @Test("InMemoryStore keeps it", arguments: ObservableStoreContract.checks)
        func memory(_ check: ObservableStoreContract.Check) async throws {
            try await check.run(on: InMemoryStore(name: "observable"))
        }

        @Test(
            "DefaultsStore keeps it, written by another instance on the suite",
            arguments: ObservableStoreContract.checks)
        func defaults(_ check: ObservableStoreContract.Check) async throws {
            let path = try temporaryDirectory() + "/suite.json"
            try await check.run(on: DefaultsStore(path: path), writer: DefaultsStore(path: path))
        }

        // The KeepsakeTesting catalog's example, verbatim (MyStore: a defaults suite, below).
        @Test(arguments: ObservableStoreContract.checks)
        func observable(_ check: ObservableStoreContract.Check) async throws {
            let store = try MyStore(temporary: true)
            try await check.run(on: store, writer: MyStore(sameStorageAs: store))
        }

        @Test("the contract fails a store whose watch never says anything")
        func catchesSilentStore() async throws {
            var failed: [String] = []
            for check in ObservableStoreContract.checks {
                do {
                    try await check.run(on: SilentStore(), within: .milliseconds(300))
                } catch is ContractViolation {
                    failed.append(check.name)
                }
            }
            // Every check that waits for a change fails; the restart check waits for one too.
            #expect(
                failed == ObservableStoreContract.checks.map(\.name),
                "passed: \(ObservableStoreContract.checks.map(\.name).filter { !failed.contains($0) })")
        }
    }
}

/// The store of the KeepsakeTesting catalog's example: a defaults suite in a new folder, and a
/// second instance on the same suite.
private typealias MyStore = DefaultsStore

extension DefaultsStore {
    fileprivate convenience init(temporary: Bool) throws {
        self.init(path: try temporaryDirectory() + "/suite.json")
    }

    fileprivate convenience init(sameStorageAs other: DefaultsStore) {
        self.init(path: other.path)
    }
}

/// An in-memory store that can be locked, and that shows nothing for a moment after it is
/// unlocked, as KeePassXC does while it opens its database: its hints are the test's.
private final class LockingStore: RecordStore, ObservableStore {
    static let open = 0
    static let locked = 1
    /// Unlocked, but not showing its items yet: every read finds nothing.
    static let hiding = 2

    let base = InMemoryStore()
    let state = Atomic<Int>(LockingStore.open)
    let settleAfterUnlock: Duration
    private let watchers = Mutex<[StoreChanges.Continuation]>([])

    init(settleAfterUnlock: Duration) { self.settleAfterUnlock = settleAfterUnlock }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }

    func data(forKey key: String) throws(KeepsakeError) -> Data? {
        switch state.load(ordering: .relaxed) {
        case Self.locked: throw KeepsakeError(.locked, store: uri, key: key, "injected: the collection is locked")
        case Self.hiding: return nil
        default: return try base.data(forKey: key)
        }
    }

    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { try base.commit(writes) }

    func changes() throws(KeepsakeError) -> StoreChanges {
        let (stream, continuation) = StoreChanges.makeStream()
        watchers.withLock { $0.append(continuation) }
        return stream
    }

    func hint(_ change: StoreChange) {
        watchers.withLock { watchers in
            for watcher in watchers { watcher.yield(change) }
        }
    }
}

/// An in-memory store whose watch starts and never hints: what the observable contract must
/// catch.
private final class SilentStore: RecordStore, ObservableStore {
    let base = InMemoryStore()
    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { try base.commit(writes) }
    func changes() throws(KeepsakeError) -> StoreChanges {
        let (stream, continuation) = StoreChanges.makeStream()
        continuation.onTermination = { _ in }
        return stream
    }
}
