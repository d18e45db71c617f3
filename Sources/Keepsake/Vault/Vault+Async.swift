import Dispatch
import Foundation

// `async` overloads of every Vault call. On a store whose calls are asynchronous at heart
// (an `AsyncRecordStore`: the PostgreSQL store) they call it directly, with no thread of their
// own. Other stores' calls block (a file lock another process holds, fsync, a D-Bus round trip);
// run on Swift's cooperative thread pool they would stall every task sharing it, so these run
// the blocking call on a Dispatch queue of their own and suspend the calling task until it is done.

extension Vault {
    /// The synchronous `load(_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    @inlinable
    public func load<Latest>(_ key: RecordKey<Latest>) async throws(KeepsakeError) -> LoadedRecord<Latest>? {
        try await load(key.chain, forKey: key.name)
    }

    /// The synchronous `value(_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func value<Latest>(_ key: RecordKey<Latest>) async throws(KeepsakeError) -> Latest {
        if let loaded = try await load(key) { return loaded.value }
        return try defaultValue(of: key)
    }

    /// The synchronous `save(_:for:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func save<Latest>(_ value: Latest, for key: RecordKey<Latest>) async throws(KeepsakeError) {
        try await save(value, in: key.chain, forKey: key.name)
    }

    /// The synchronous `update(_:attempts:_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, this update wrote nothing.
    @discardableResult
    public func update<Latest>(
        _ key: RecordKey<Latest>, attempts: Int = Vault.defaultUpdateAttempts,
        _ change: @escaping @Sendable (inout Latest) throws -> Void
    ) async throws(KeepsakeError) -> Latest {
        guard let holding = store as? any AsyncExclusiveUpdateStore else {
            return try await Blocking.run { () throws(KeepsakeError) in try self.update(key, attempts: attempts, change)
            }
        }
        let name = try resolve(key.name, key.chain)
        return try await heldUpdate(holding, key.chain, key: name) { current throws(KeepsakeError) in
            try startValue(current, of: key, name: name)
        } change: {
            try changedInPlace($0, by: change)
        }
    }

    /// The synchronous `update(_:forKey:attempts:_:)`, without blocking the cooperative thread
    /// pool.
    ///
    /// - Important: If this throws, this update wrote nothing.
    @discardableResult
    public func update<Latest>(
        _ chain: ModelChain<Latest>, forKey key: String? = nil, attempts: Int = Vault.defaultUpdateAttempts,
        _ change: @escaping @Sendable (Latest?) throws -> Latest
    ) async throws(KeepsakeError) -> Latest {
        guard let holding = store as? any AsyncExclusiveUpdateStore else {
            return try await Blocking.run { () throws(KeepsakeError) in
                try self.update(chain, forKey: key, attempts: attempts, change)
            }
        }
        let name = try resolve(key, chain)
        return try await heldUpdate(holding, chain, key: name) { current throws(KeepsakeError) in
            current
        } change: {
            try change($0)
        }
    }

    /// An update on a store that holds the record while `change` runs, without blocking a thread.
    private func heldUpdate<Latest, Start>(
        _ holding: any AsyncExclusiveUpdateStore, _ chain: ModelChain<Latest>, key: String,
        start: (Latest?) throws(KeepsakeError) -> Start, change: (Start) throws -> Latest
    ) async throws(KeepsakeError) -> Latest {
        var stored: Latest?
        do throws(KeepsakeError) {
            try await holding.exclusiveUpdate(forKey: key) { existing throws(KeepsakeError) in
                let (value, encoded, _) = try changed(existing, chain: chain, key: key, start: start, change: change)
                stored = value
                return encoded
            }
        } catch {
            throw error.located(store: store.uri, key: key)
        }
        guard let stored else {
            throw KeepsakeError(.io, store: store.uri, key: key, "the store wrote without asking for the change")
        }
        return stored
    }

    /// The synchronous `remove(_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the store is as it was.
    public func remove<Latest>(_ key: RecordKey<Latest>) async throws(KeepsakeError) {
        try await remove(forKey: key.name)
    }

    /// The synchronous `load(_:forKey:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    @inlinable
    public func load<Latest>(
        _ chain: ModelChain<Latest>, forKey key: String? = nil
    ) async throws(KeepsakeError) -> LoadedRecord<Latest>? {
        guard let direct = store as? any AsyncRecordStore else {
            return try await Blocking.run { () throws(KeepsakeError) in try self.load(chain, forKey: key) }
        }
        let key = try resolve(key, chain)
        let bytes = try await direct.data(forKey: key)
        switch try loadStep(chain, bytes: bytes, key: key) {
        case let .done(loaded):
            return loaded
        case let .writeBack(record, write):
            let outcome: LoadedRecord<Latest>.WriteBack
            do throws(KeepsakeError) {
                try await direct.commitOne(write)
                outcome = .written
            } catch {
                outcome = .failed(error.located(store: store.uri, key: key))
            }
            return LoadedRecord(record: record, writeBack: wroteBack(outcome, chain: chain, key: key))
        }
    }

    /// The synchronous `save(_:in:forKey:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func save<Latest>(
        _ value: Latest, in chain: ModelChain<Latest>, forKey key: String? = nil
    ) async throws(KeepsakeError) {
        guard let direct = store as? any AsyncRecordStore else {
            return try await Blocking.run { () throws(KeepsakeError) in try self.save(value, in: chain, forKey: key) }
        }
        let key = try resolve(key, chain)
        var plain: Data?
        var attempt = 0
        while true {
            attempt += 1
            do throws(KeepsakeError) {
                let existing = try await direct.data(forKey: key)
                try await direct.commitOne(try chain.saveWrite(of: value, key: key, over: existing, plain: &plain))
                return
            } catch  where error.code == .conflict && attempt < Self.saveAttempts {
                // Another writer's save landed in between: last writer wins, so read and write again.
                await Backoff.sleep(after: attempt)
            } catch {
                throw error.located(store: store.uri, key: key)
            }
        }
    }

    /// The synchronous `remove(forKey:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the store is as it was.
    public func remove(forKey key: String) async throws(KeepsakeError) {
        guard let direct = store as? any AsyncRecordStore else {
            return try await Blocking.run { () throws(KeepsakeError) in try self.remove(forKey: key) }
        }
        try store.validateKey(key)
        try await direct.commitOne(StoreWrite(key: key, value: nil))
    }

    /// The synchronous `keys()`, without blocking the cooperative thread pool.
    public func keys() async throws(KeepsakeError) -> [String] {
        try await Blocking.run { () throws(KeepsakeError) in try self.keys() }
    }
}

/// Runs blocking work (a store's calls: file locks, fsync, D-Bus) off Swift's cooperative thread
/// pool: the one helper for that in the package (the CLI's watch, the configuration provider and
/// the test kit use it too).
///
/// Each call gets a thread of its own at once, so a call never waits behind others that block.
/// A shared concurrent queue does not give that: Dispatch on Linux adds a thread to it about
/// once a second while its threads block: measured with calls blocked on a semaphore, the next
/// call waited 6 s behind 8 of them and more than 30 s behind 64. Calls waiting for a lock
/// another process holds block the same way, and the next call may be an observer's read or a
/// load of another store. `BlockingTests` holds 64 calls and times the next one.
@usableFromInline
package enum Blocking {
    /// Runs `work` on a thread of its own and suspends the calling task until it is done.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            start { continuation.resume(returning: work()) }
        }
    }

    /// Starts `work` on a thread of its own and returns at once.
    ///
    /// A serial queue made for the call: Dispatch runs such queues on its overcommitting pool,
    /// which takes an idle thread or makes one for each (up to its own limit of 255 threads,
    /// past which work waits for one to be free).
    package static func start(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "org.keepsake.blocking").async(execute: work)
    }

    /// Runs throwing `work` on a thread of its own; what it returns or throws.
    @usableFromInline
    package static func run<T: Sendable>(
        _ work: @escaping @Sendable () throws(KeepsakeError) -> T
    ) async throws(KeepsakeError) -> T {
        let result = await run { () -> Result<T, KeepsakeError> in
            do throws(KeepsakeError) { return .success(try work()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

extension AsyncRecordStore {
    /// Commits one write, without blocking a thread; a conflict or a failure is a throw.
    @usableFromInline
    func commitOne(_ write: StoreWrite) async throws(KeepsakeError) {
        try Self.settled(try await commit([write]), of: write, store: uri)
    }
}
