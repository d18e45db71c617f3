import Foundation

/// What a record is at one moment, as ``Vault/updates(for:)`` reports it.
public enum RecordUpdate<Latest: ModelVersion>: Sendable {
    /// The record, migrated in memory to the latest version (nothing is written back).
    case record(DecodedRecord<Latest>)
    /// Nothing is stored under the key: it was never written, or it was removed.
    case absent
    /// A record is stored but cannot be read as this chain: newer than this release knows,
    /// corrupt, unrecognised, or a step failed. Its bytes are as they were.
    case unreadable(KeepsakeError)
    /// The store is locked (a keyring collection): whether a record is stored cannot be told
    /// now. Never reported as ``absent``.
    case locked(KeepsakeError)
    /// The store could not be read (unavailable, a timeout, an I/O error).
    case failed(KeepsakeError)

    /// The record's value, when there is one.
    public var value: Latest? {
        if case let .record(record) = self { return record.value }
        return nil
    }

    /// What tells two successive updates apart: equal fingerprints are the same update.
    fileprivate var fingerprint: String {
        switch self {
        case let .record(record):
            do {
                // The stored version counts: a migration written back is a change an observer sees.
                return "r\(record.storedVersion):"
                    + String(decoding: try CanonicalJSON.encode(record.value), as: UTF8.self)
            } catch {
                // A value that cannot be encoded is never taken for the one before it.
                return "r?\(UUID())"
            }
        case .absent: return "a"
        case let .unreadable(error): return "u\(error.code):\(error.message)"
        case .locked: return Self.lockedFingerprint
        case let .failed(error): return "f\(error.code)"
        }
    }

    /// The fingerprint of ``locked(_:)``.
    fileprivate static var lockedFingerprint: String { "l" }
}

extension Vault {
    /// How often a store that cannot report its changes (it is not an ``ObservableStore``) is
    /// read again by `updates(for:)`: every second.
    public static let updatesPollInterval: Duration = .seconds(1)

    /// How long a record that was locked and reads as absent right after is read again before
    /// `updates(for:)` reports it absent: a provider may say it is unlocked a moment before it
    /// shows its items again (KeePassXC adds them back one by one as its database opens), and
    /// an unlock is not a deletion.
    static let unlockSettle: Duration = .seconds(2)

    /// How many times an observation reads a record again after a read that timed out, before it
    /// reports the timeout (after 0.1, 0.2 and 0.3 s).
    package static let timeoutRereads = 3

    /// The record under `key` now, then each change to it, by any writer — a task of this
    /// process, another process, another instance — for as long as the sequence is consumed.
    ///
    /// ```swift
    /// for await update in vault.updates(for: .settings) {
    ///     if let settings = update.value { apply(settings) }
    /// }
    /// ```
    ///
    /// - The first element is the record as it is now (``RecordUpdate/absent`` when nothing is
    ///   stored). Each later one follows a change: the store's signal (an inotify event, a
    ///   Secret Service signal, a PostgreSQL notification, a commit of an in-memory store) is
    ///   only a hint, and the record
    ///   is read again and compared first, so an element is never older than the one before it,
    ///   and the last one is what the store holds.
    /// - Successive identical values are reported once: a signal for another key, a rewrite
    ///   of the same value at the same stored version, yield nothing. A migration written back
    ///   (the same value, now at the latest version) is reported, with its new
    ///   ``DecodedRecord/storedVersion``.
    /// - A record is decoded and migrated in memory; nothing is ever written back.
    /// - A record that cannot be read, a locked store and a store that cannot be reached are
    ///   elements of their own (``RecordUpdate/unreadable(_:)``, ``RecordUpdate/locked(_:)``,
    ///   ``RecordUpdate/failed(_:)``); the sequence goes on. A read that timed out is made
    ///   again (three times, over 0.6 s) before the timeout is reported: it says how a call went,
    ///   not what the store holds.
    /// - Hints are coalesced: however many arrive while the record is read (a flood of spoofed
    ///   signals, a busy writer), they cost one more read, not one each.
    /// - When the consumer stops (it breaks out of the loop, or its task is cancelled), the
    ///   watch is released: file descriptors, D-Bus match rules, listening connections.
    ///
    /// A store that is not an ``ObservableStore`` is read again every
    /// ``updatesPollInterval``. Only the newest 64 elements are kept for a consumer that falls
    /// behind; the newest is always kept.
    public func updates<Latest>(for key: RecordKey<Latest>) -> AsyncStream<RecordUpdate<Latest>> {
        updates(of: key.chain, forKey: key.name)
    }

    /// The record of `chain` under `key` (the chain's first default key when `nil`) now, then
    /// each change to it. See `updates(for:)`, for typed keys. A key the store cannot hold
    /// gives one ``RecordUpdate/failed(_:)`` element and ends the sequence.
    public func updates<Latest>(
        of chain: ModelChain<Latest>, forKey key: String? = nil
    ) -> AsyncStream<RecordUpdate<Latest>> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: RecordUpdate<Latest>.self, bufferingPolicy: .bufferingNewest(64))
        let name: String
        do throws(KeepsakeError) {
            name = try resolve(key, chain)
        } catch {
            continuation.yield(.failed(error))
            continuation.finish()
            return stream
        }
        let vault = self
        // At the caller's priority: a watcher below it would wait behind every busier task.
        let task = Task(priority: Task.currentPriority) {
            var last: String?
            func refresh() async {
                var update = await vault.currentUpdate(of: chain, key: name)
                // A read that timed out says how the call went, not what the store holds (a bus
                // flooded with hints, a busy server): read again before reporting it.
                var retries = 0
                while case let .failed(error) = update, error.code == .timeout, retries < Vault.timeoutRereads {
                    retries += 1
                    do {
                        try await Task.sleep(for: .milliseconds(100 * retries))
                    } catch {
                        return  // cancelled
                    }
                    update = await vault.currentUpdate(of: chain, key: name)
                }
                if case .absent = update, last == RecordUpdate<Latest>.lockedFingerprint {
                    // Just unlocked: absent only if it stays absent (see `unlockSettle`).
                    let deadline = ContinuousClock.now + Vault.unlockSettle
                    while case .absent = update, ContinuousClock.now < deadline {
                        do {
                            try await Task.sleep(for: .milliseconds(50))
                        } catch {
                            return  // cancelled
                        }
                        update = await vault.currentUpdate(of: chain, key: name)
                    }
                }
                guard update.fingerprint != last else { return }
                last = update.fingerprint
                continuation.yield(update)
            }
            // Watch first, then read: a change between the two is not missed.
            var changes: StoreChanges?
            if let observable = vault.store as? any ObservableStore {
                do throws(KeepsakeError) {
                    changes = try observable.changes()
                } catch {
                    continuation.yield(.failed(error))
                    last = "f\(error.code)"
                }
            }
            await refresh()
            if let changes {
                // Coalesced: a flood of hints costs a read in flight and one after it.
                for await _ in changes.wakeUps(forKey: name) {
                    if Task.isCancelled { break }
                    await refresh()
                }
            } else {
                while !Task.isCancelled {
                    do {
                        try await Task.sleep(for: Vault.updatesPollInterval)
                    } catch {
                        break  // cancelled
                    }
                    await refresh()
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The record as it is now, read off the cooperative pool and decoded without writing.
    private func currentUpdate<Latest>(of chain: ModelChain<Latest>, key: String) async -> RecordUpdate<Latest> {
        let store = self.store
        let context = self.context
        let bytes: Data?
        do throws(KeepsakeError) {
            bytes = try await Blocking.run { () throws(KeepsakeError) in try store.data(forKey: key) }
        } catch {
            return error.code == .locked ? .locked(error) : .failed(error)
        }
        switch chain.outcome(of: bytes, context: context).located(store: store.uri, key: key) {
        case .absent: return .absent
        case let .current(record), let .newerReadable(record), let .outdated(record, _): return .record(record)
        case let .newer(error, _), let .failed(error, _): return .unreadable(error)
        }
    }
}
