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

}

extension RecordUpdate: ObservedLook {
    /// What tells two successive updates apart: equal fingerprints are the same update.
    package var fingerprint: [UInt8] {
        var fingerprint = Fingerprint()
        switch self {
        case let .record(record):
            fingerprint.add("record")
            // The stored version counts: a migration written back is a change an observer sees.
            fingerprint.add(String(record.storedVersion))
            do {
                fingerprint.add(try CanonicalJSON.encode(record.value))
            } catch {
                // A value that cannot be encoded is never taken for the one before it.
                fingerprint.add(UUID().uuidString)
            }
        case .absent: fingerprint.add("absent")
        case let .unreadable(error):
            fingerprint.add("unreadable")
            fingerprint.add(error.code.rawValue)
            fingerprint.add(error.message)
        case .locked: fingerprint.add("locked")
        case let .failed(error):
            fingerprint.add("failed")
            fingerprint.add(error.code.rawValue)
        }
        return fingerprint.bytes
    }

    package var observedKind: ObservedKind {
        switch self {
        case .absent: .absent
        case .locked: .locked
        case let .failed(error) where error.code == .timeout: .timedOut
        case .record, .unreadable, .failed: .other
        }
    }
}

/// One record's update in a watch over every key a ``KeyPattern`` matches
/// (``Vault/updates(of:matching:)``).
public struct KeyedRecordUpdate<Latest: ModelVersion>: Sendable {
    /// The record's key; the pattern's text (`tenant-*`) for a listing of the store that failed.
    public let key: String
    /// What the record is now.
    public let update: RecordUpdate<Latest>
}

extension Vault {
    /// How often a store that cannot report its changes (it is not an ``ObservableStore``) is
    /// read again by `updates(for:)`: every second.
    public static let updatesPollInterval: Duration = .seconds(1)

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
        let name: String
        do throws(KeepsakeError) {
            name = try resolve(key, chain)
        } catch {
            let (stream, continuation) = AsyncStream.makeStream(of: RecordUpdate<Latest>.self)
            continuation.yield(.failed(error))
            continuation.finish()
            return stream
        }
        return observation(of: chain).key(name)
    }

    /// Every record of `chain` whose key `pattern` matches, now, then each one any writer
    /// adds, changes or removes, for as long as the sequence is consumed.
    ///
    /// ```swift
    /// for await change in vault.updates(of: Tenant.chain, matching: "tenant-*") {
    ///     if let settings = change.update.value { apply(settings, tenant: change.key) }
    /// }
    /// ```
    ///
    /// Each key behaves as in `updates(for:)`: read again on each hint, migrated in memory,
    /// yielded only when it differs from what was yielded for that key before. The first
    /// elements are the records stored now (in key order; a key with nothing stored yields
    /// nothing); a record removed later is yielded once as ``RecordUpdate/absent``. A listing of
    /// the store that fails — locked, unreachable — is yielded once under the pattern's text as
    /// its key, and once the store can be listed again every record is yielded again.
    public func updates<Latest>(
        of chain: ModelChain<Latest>, matching pattern: KeyPattern
    ) -> AsyncStream<KeyedRecordUpdate<Latest>> {
        observation(of: chain).pattern(pattern) { KeyedRecordUpdate(key: $0, update: $1) }
    }

    /// The observation loop, looking at keys with `chain`.
    private func observation<Latest>(of chain: ModelChain<Latest>) -> Observation<RecordUpdate<Latest>> {
        let vault = self
        return Observation(
            store: store, look: { await vault.currentUpdate(of: chain, key: $0) },
            failure: { $0.code == .locked ? .locked($0) : .failed($0) })
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
        do throws(KeepsakeError) {
            guard let record = try chain.outcome(of: bytes, context: context).located(store: store.uri, key: key).get()
            else { return .absent }
            return .record(record)
        } catch {
            return .unreadable(error)
        }
    }
}
