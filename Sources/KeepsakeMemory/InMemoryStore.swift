import Foundation
import Keepsake
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A store that keeps records in memory, for tests and previews.
///
/// Batches apply as one unit under a lock, so it honours the whole `RecordStore` contract.
/// Writers take turns: a batch waits while an ``exclusiveUpdate(forKey:_:)`` holds the store.
public final class InMemoryStore: RecordStore {
    public let uri: String
    public var capabilities: StoreCapabilities { [] }
    /// Keys are exact strings: compared by their UTF-8 bytes.
    private let storage: Mutex<[ExactString: Data]>
    /// The streams of ``changes()`` being consumed, told of every applied write.
    private let watchers = Mutex<[UUID: StoreChanges.Continuation]>([:])
    /// The store's writers (batches and updates), one at a time.
    private let writers = WriterTurn()

    /// - Parameters:
    ///   - name: Shown in errors as `memory:<name>`.
    ///   - contents: Initial key → bytes.
    public init(name: String = "default", contents: [String: Data] = [:]) {
        uri = "memory:\(name)"
        storage = Mutex(Dictionary(uniqueKeysWithValues: contents.map { (ExactString($0.key), $0.value) }))
    }

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        return storage.withLock { $0[ExactString(key)] }
    }

    public func keys() throws(KeepsakeError) -> [String] {
        storage.withLock { $0.keys.sorted().map(\.value) }
    }

    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        storage.withLock { $0.sorted { $0.key < $1.key }.map { ($0.key.value, $0.value) } }
    }

    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try validateKey(write.key) }
        try enterWriters(key: writes.first?.key)
        defer { writers.leave() }
        return apply(writes)
    }

    /// Applies `writes` as one unit and tells the watchers. Call as the writer whose turn it is.
    private func apply(_ writes: [StoreWrite]) -> [StoreWriteResult] {
        var results: [StoreWriteResult] = []
        results.reserveCapacity(writes.count)
        storage.withLock { contents in
            for write in writes {
                // One look-up of the key, for its expectation and its change.
                let key = ExactString(write.key)
                let index = contents.index(forKey: key)
                guard write.expects(index.map { contents.values[$0] }) else {
                    results.append(.conflict)
                    continue
                }
                switch (index, write.value) {
                case let (index?, value?): contents.values[index] = value
                case let (index?, nil): contents.remove(at: index)
                case let (nil, value?): contents[key] = value
                case (nil, nil): break
                }
                results.append(.applied)
            }
        }
        let watching = watchers.withLock { $0.isEmpty ? [] : Array($0.values) }
        for watcher in watching {
            for (write, result) in zip(writes, results) where result == .applied { watcher.yield(.key(write.key)) }
        }
        return results
    }

    /// Waits for this store's writers' turn; throws at once when this thread has it already (a
    /// write from inside an update's change would otherwise wait for itself forever).
    private func enterWriters(key: String?) throws(KeepsakeError) {
        guard writers.enter() else {
            throw KeepsakeError(
                .invalidArgument, store: uri, key: key,
                """
                a write to this store from inside the change of one of its updates, which holds the store \
                until the change returns; nothing was written (write after the update instead)
                """)
        }
    }
}

extension InMemoryStore: ExclusiveUpdateStore {
    /// Reads the bytes under `key`, passes them to `change` and stores what it returns, with the
    /// store held against every other writer of it meanwhile: `Vault.update` on this store never
    /// meets `conflict`, and its change runs once.
    ///
    /// The hold covers the whole store, every key, not only `key`: other writers (batches and
    /// updates, of any key) wait until `change` returns. So `change` must not write to this store
    /// — a write from inside it, on the same thread, throws `invalidArgument` and writes nothing;
    /// one it waits for on another thread would wait forever, as this store has no deadline.
    /// Reads take no turn: one from inside `change` sees what was stored before this update.
    ///
    /// - Throws: What `change` throws (then nothing was written and the store is released), and
    ///   `invalidArgument` for a bad key or when called from inside another update's change.
    public func exclusiveUpdate(
        forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data
    ) throws(KeepsakeError) {
        try validateKey(key)
        try enterWriters(key: key)
        defer { writers.leave() }
        let current = storage.withLock { $0[ExactString(key)] }
        let value = try change(current)
        // The store is held: what `change` was given is still stored, and this write applies.
        _ = apply([StoreWrite(key: key, value: value, expectation: .unchanged(current))])
    }
}

extension InMemoryStore: ObservableStore {
    /// A hint for every key a ``commit(_:)`` of this store (or of any code holding it) changes.
    public func changes() throws(KeepsakeError) -> StoreChanges {
        let (stream, continuation) = StoreChanges.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        watchers.withLock { $0[id] = continuation }
        let uri = self.uri
        WatchCount.opened(store: uri)
        continuation.onTermination = { [weak self] _ in
            self?.watchers.withLock { $0[id] = nil }
            WatchCount.closed(store: uri)
        }
        return stream
    }
}

/// Whose turn it is to write: at most one thread at a time, the others waiting in ``enter()``.
private final class WriterTurn: @unchecked Sendable {
    // @unchecked: `holder` is only touched with `condition` locked.
    private let condition = NSCondition()
    private var holder: pthread_t?

    /// Waits until no other thread has the turn, then takes it; `false` at once, without
    /// waiting, when this thread has it already.
    func enter() -> Bool {
        let me = pthread_self()
        condition.lock()
        defer { condition.unlock() }
        if let holder, pthread_equal(holder, me) != 0 { return false }
        while holder != nil { condition.wait() }
        holder = me
        return true
    }

    /// Gives the turn up, to the next thread waiting.
    func leave() {
        condition.lock()
        holder = nil
        condition.broadcast()
        condition.unlock()
    }
}
