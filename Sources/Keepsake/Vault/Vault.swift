import Foundation

/// The type an app holds: a store, a migration context and options, with load, save, remove
/// and keys for its models.
///
/// ```swift
/// let vault = Vault(store: store)   // any RecordStore: the stores are modules of their own
///
/// if let loaded = try vault.load(.settings) {          // any stored version, migrated
///     apply(loaded.value)
///     if case let .failed(error) = loaded.writeBack { log(error) }  // still the migrated value
/// }
/// try vault.save(SettingsV2(theme: .dark), for: .settings)
/// ```
///
/// A load reads whatever an older release stored (an envelope, an object with an inline
/// `version`, a bare object, a JSON string holding one of those), migrates it in memory through
/// the chain's steps, and writes the migrated record back — encoded, verified to read back
/// identically, and stored only if the stored bytes are still what was read. A record that is
/// newer than the app knows, unrecognised, ambiguous or corrupt is a thrown ``KeepsakeError``
/// naming the store and the key; its bytes are left exactly as they were.
///
/// Every call has an `async` overload that runs the store's blocking work (file locks, fsync,
/// D-Bus) on a thread of its own, never on Swift's cooperative thread pool.
public struct Vault: Sendable {
    /// How a vault writes back.
    public struct Options: Sendable {
        /// Whether a load stores the migrated record (default `true`). With `false` a load
        /// migrates in memory only and ``LoadedRecord/writeBack`` is ``LoadedRecord/WriteBack/skipped``.
        public var writeBack: Bool
        /// Where a load keeps a record's original bytes before replacing them (default none).
        public var backup: BackupDirectory?

        /// Options: write back migrated records unless `writeBack` is `false`, and keep their original
        /// bytes in `backup` first when it is set.
        public init(writeBack: Bool = true, backup: BackupDirectory? = nil) {
            self.writeBack = writeBack
            self.backup = backup
        }
    }

    /// Where the records are.
    public let store: any RecordStore
    /// The clock, identifiers and device identity migration steps get.
    public let context: MigrationContext
    /// Whether loads write migrated records back, and where they back up the originals.
    public let options: Options

    /// - Parameters:
    ///   - store: Where the records are.
    ///   - context: What migration steps get; by default the system clock, random UUIDs and no
    ///     device identity (see ``MigrationContext/live(appID:machineIDPath:)`` for steps that
    ///     record one).
    ///   - options: Write-back and backups.
    public init(store: any RecordStore, context: MigrationContext = .live(), options: Options = Options()) {
        self.store = store
        self.context = context
        self.options = options
    }

    // MARK: Typed keys

    /// The record under `key`, migrated to the latest version, or `nil` when nothing is stored.
    ///
    /// - Throws: ``KeepsakeError`` naming this store and the key: `.newerVersion`,
    ///   `.unrecognisedRecord`, `.ambiguousRecord`, `.corruptRecord`, `.schemaMismatch`,
    ///   `.migrationFailed` (the app's own step error in ``KeepsakeError/underlying``),
    ///   `.deviceIdentityUnavailable`, or the store's own (`.locked`, `.unavailable`, …).
    ///   A failed write-back does not throw: see ``LoadedRecord/writeBack``.
    /// - Important: If this throws, the stored bytes are exactly as they were.
    @inlinable
    public func load<Latest>(_ key: RecordKey<Latest>) throws(KeepsakeError) -> LoadedRecord<Latest>? {
        try load(key.chain, forKey: key.name)
    }

    /// The record under `key` at the latest version, or the key's default while nothing is stored.
    ///
    /// - Throws: What `load(_:)` throws, and ``KeepsakeError/Code/notFound`` when nothing is
    ///   stored and the key has no default.
    /// - Important: If this throws, the stored bytes are exactly as they were. The default is
    ///   never written.
    public func value<Latest>(_ key: RecordKey<Latest>) throws(KeepsakeError) -> Latest {
        if let loaded = try load(key) { return loaded.value }
        return try defaultValue(of: key)
    }

    /// The key's default, read while nothing is stored.
    func defaultValue<Latest>(of key: RecordKey<Latest>) throws(KeepsakeError) -> Latest {
        guard let defaultValue = key.defaultValue else {
            throw KeepsakeError(
                .notFound, store: store.uri, key: key.name,
                "no record is stored under this key and the key has no default")
        }
        return defaultValue
    }

    /// `value` after `change` changed it in place.
    func changedInPlace<Latest>(_ value: Latest, by change: (inout Latest) throws -> Void) rethrows -> Latest {
        var value = value
        try change(&value)
        return value
    }

    /// Where an update of `key` starts: what is stored, else the key's default.
    func startValue<Latest>(_ current: Latest?, of key: RecordKey<Latest>, name: String) throws(KeepsakeError) -> Latest
    {
        guard let start = current ?? key.defaultValue else {
            throw KeepsakeError(
                .notFound, store: store.uri, key: name,
                "no record is stored under this key and the key has no default; nothing was written")
        }
        return start
    }

    /// Stores `value` under `key`, in an envelope at the latest version: last writer wins.
    ///
    /// A save is for a value the app built: it replaces whatever another writer stored, and it
    /// does not fail because another writer (a task, another process) wrote the key between
    /// this save's read and its write — it reads again and writes again. To change a stored
    /// value without losing another writer's change to it, use `update(_:attempts:_:)`.
    ///
    /// Over a record of a newer release that declared this release's readers compatible
    /// (``RecordOutcome/newerReadable(_:)``), the save keeps that record's version and every key
    /// this release does not know — at every depth: in nested objects, in array elements
    /// matched by position, in dictionaries — and replaces only the values it knows: the newer
    /// release loses nothing. Where that cannot be done without loss (this release changed the
    /// length of an array whose elements hold keys it does not know), the save is refused.
    ///
    /// The value is stored losslessly: it reads back equal, dates included (a date finer than a
    /// millisecond is written with the fraction digits it needs).
    ///
    /// - Throws: ``KeepsakeError/Code/newerVersion`` when the stored record was written by a
    ///   newer release that did not declare this one compatible — or claims a newer version
    ///   and does not parse; ``KeepsakeError/Code/schemaMismatch`` when it is another model's
    ///   envelope; ``KeepsakeError/Code/mergeRefused`` when a newer record's unknown keys
    ///   cannot be kept (the message names the path); ``KeepsakeError/Code/encodingFailed``
    ///   when the value cannot be stored exactly (a date outside the years 0001–9999: the cause
    ///   names the field); ``KeepsakeError/Code/conflict`` only after
    ///   ``Vault/saveAttempts`` writes in a row each lost a race with another writer; and the
    ///   store's own errors. Any other unreadable record is replaced.
    /// - Important: If this throws, the stored bytes are exactly as another writer left them:
    ///   this save wrote nothing.
    public func save<Latest>(_ value: Latest, for key: RecordKey<Latest>) throws(KeepsakeError) {
        try save(value, in: key.chain, forKey: key.name)
    }

    /// Reads the record under `key` (migrated in memory, or the key's default while nothing is
    /// stored), lets `change` modify it, and stores the result — only if nothing was written to
    /// the key in between.
    ///
    /// On a store that can hold a record (an ``ExclusiveUpdateStore``: PostgreSQL's row lock, the
    /// writer lock of the defaults, file and keyring stores) the record is held from the read to
    /// the write: other writers of it wait their turn, and `change` runs once. On any other
    /// store, when another writer got there first, it reads again and runs `change` again on
    /// what that writer stored, up to `attempts` times.
    ///
    /// ```swift
    /// // Two processes counting launches at once: neither count is lost.
    /// try vault.update(.launches) { $0.count += 1 }
    /// ```
    ///
    /// `change` may run more than once: keep it free of side effects other than on its value.
    /// While it runs the record may be held: keep it short, and do not read or write the store
    /// from inside it (the held record would wait for itself until the store's deadline).
    ///
    /// - Parameters:
    ///   - key: The record to change.
    ///   - attempts: How many times to read, change and try to write (at least 1) on a store
    ///     that cannot hold a record.
    ///   - change: Modifies the value in place. An error it throws ends the update.
    /// - Returns: The value stored.
    /// - Throws: ``KeepsakeError/Code/notFound`` when nothing is stored and the key has no
    ///   default; ``KeepsakeError/Code/conflict`` when every attempt lost a race with another
    ///   writer; ``KeepsakeError/Code/updateFailed`` when `change` threw (its error is
    ///   ``KeepsakeError/underlying``); what `load(_:)` throws for a record it cannot read;
    ///   what `save(_:for:)` throws; the store's own errors.
    /// - Important: If this throws, this update wrote nothing: the stored bytes are as another
    ///   writer left them.
    @discardableResult
    public func update<Latest>(
        _ key: RecordKey<Latest>, attempts: Int = Vault.defaultUpdateAttempts, _ change: (inout Latest) throws -> Void
    ) throws(KeepsakeError) -> Latest {
        let name = try resolve(key.name, key.chain)
        return try update(key.chain, key: name, attempts: attempts) { current throws(KeepsakeError) in
            try startValue(current, of: key, name: name)
        } change: {
            try changedInPlace($0, by: change)
        }
    }

    /// Reads the record of `chain` under `key` (the chain's first default key when `nil`),
    /// migrated in memory, or `nil` when nothing is stored; stores what `change` returns — only
    /// if nothing was written to the key in between, else it reads again and runs `change`
    /// again, up to `attempts` times. See `update(_:attempts:_:)`, for typed keys.
    ///
    /// - Throws: What `update(_:attempts:_:)` throws.
    /// - Important: If this throws, this update wrote nothing.
    @discardableResult
    public func update<Latest>(
        _ chain: ModelChain<Latest>, forKey key: String? = nil, attempts: Int = Vault.defaultUpdateAttempts,
        _ change: (Latest?) throws -> Latest
    ) throws(KeepsakeError) -> Latest {
        let name = try resolve(key, chain)
        return try update(chain, key: name, attempts: attempts) { current throws(KeepsakeError) in
            current
        } change: {
            try change($0)
        }
    }

    /// How many times `update(_:attempts:_:)` tries by default: 16.
    public static let defaultUpdateAttempts = 16

    /// How many writes in a row a `save(_:for:)` may lose to other writers before it throws
    /// ``KeepsakeError/Code/conflict``: 100. Each lost race is another writer's successful
    /// write, and the save waits a little longer (at random) after each.
    public static let saveAttempts = 100

    /// The read-modify-write loop both `update`s share.
    private func update<Latest, Start>(
        _ chain: ModelChain<Latest>, key: String, attempts: Int,
        start: (Latest?) throws(KeepsakeError) -> Start, change: (Start) throws -> Latest
    ) throws(KeepsakeError) -> Latest {
        guard attempts >= 1 else {
            throw KeepsakeError(
                .invalidArgument, store: store.uri, key: key, "update needs at least 1 attempt, not \(attempts)")
        }
        func changed(_ existing: Data?) throws(KeepsakeError) -> (value: Latest, encoded: Data, verified: Bool) {
            try self.changed(existing, chain: chain, key: key, start: start, change: change)
        }
        if let holding = store as? any ExclusiveUpdateStore {
            // The store holds the record while the change runs: writers take turns, none conflicts.
            var stored: Latest?
            do throws(KeepsakeError) {
                try holding.exclusiveUpdate(forKey: key) { existing throws(KeepsakeError) in
                    let (value, encoded, _) = try changed(existing)
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
        var attempt = 0
        while true {
            attempt += 1
            let existing = try store.data(forKey: key)
            let (value, encoded, verified) = try changed(existing)
            do throws(KeepsakeError) {
                let write = StoreWrite(key: key, value: encoded, expectation: .unchanged(existing))
                try store.commitOne(verified ? write.verified : write)
                return value
            } catch  where error.code == .conflict && attempt < attempts {
                Backoff.pause(after: attempt)
            } catch  where error.code == .conflict {
                throw KeepsakeError(
                    .conflict, store: store.uri, key: key,
                    """
                    another writer changed the record during each of \(attempts) attempts to update it; nothing was \
                    written by this update
                    """)
            } catch {
                throw error.located(store: store.uri, key: key)
            }
        }
    }

    /// The change of one update attempt: what is stored, read through the chain, changed, encoded.
    func changed<Latest, Start>(
        _ existing: Data?, chain: ModelChain<Latest>, key: String,
        start: (Latest?) throws(KeepsakeError) -> Start, change: (Start) throws -> Latest
    ) throws(KeepsakeError) -> (value: Latest, encoded: Data, verified: Bool) {
        // Read once: the same detection decides what the save over these bytes writes.
        let evaluation = chain.evaluate(existing, context: context)
        let initial = try start(try evaluation.outcome.located(store: store.uri, key: key).get()?.value)
        let changed: Latest
        do {
            changed = try change(initial)
        } catch let error as KeepsakeError {
            throw error.located(store: store.uri, key: key)
        } catch {
            throw KeepsakeError(
                .updateFailed, store: store.uri, key: key,
                "the change given to update threw (\(error)); nothing was written",
                cause: .other(String(describing: error)), underlying: error)
        }
        var plain: Data?
        do throws(KeepsakeError) {
            let bytes =
                if let existing, let detected = evaluation.detected {
                    try chain.encodeForSave(changed, over: detected, stored: existing, plain: &plain)
                } else {
                    try chain.encodeForSave(changed, over: nil, plain: &plain)
                }
            // The latest envelope is verified; a merge into a newer record is not.
            return (changed, bytes, bytes == plain)
        } catch {
            throw error.located(store: store.uri, key: key)
        }
    }

    /// Removes the record under `key`, if any.
    ///
    /// - Important: If this throws, the store is as it was.
    public func remove<Latest>(_ key: RecordKey<Latest>) throws(KeepsakeError) {
        try remove(forKey: key.name)
    }

    // MARK: Chains and key strings

    /// The record of `chain` under `key` (the chain's first default key when `nil`), migrated
    /// to the latest version, or `nil` when nothing is stored. See `load(_:)`, for typed keys.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    @inlinable
    public func load<Latest>(
        _ chain: ModelChain<Latest>, forKey key: String? = nil
    ) throws(KeepsakeError) -> LoadedRecord<Latest>? {
        let key = try resolve(key, chain)
        let bytes = try store.data(forKey: key)
        switch try loadStep(chain, bytes: bytes, key: key) {
        case let .done(loaded):
            return loaded
        case let .writeBack(record, write):
            let outcome: LoadedRecord<Latest>.WriteBack
            do throws(KeepsakeError) {
                try store.commitOne(write)
                outcome = .written
            } catch {
                outcome = .failed(error.located(store: store.uri, key: key))
            }
            return LoadedRecord(record: record, writeBack: wroteBack(outcome, chain: chain, key: key))
        }
    }

    /// What a load does once the stored bytes are read: answer, or write the migrated record
    /// back first (the write, encoded, verified and backed up, ready to commit).
    @usableFromInline
    enum LoadStep<Latest: Sendable> {
        case done(LoadedRecord<Latest>?)
        case writeBack(DecodedRecord<Latest>, StoreWrite)
    }

    /// The step after reading `bytes`; a write-back that cannot be prepared is a loaded record
    /// whose ``LoadedRecord/writeBack`` failed, never a throw.
    @inlinable
    func loadStep<Latest>(
        _ chain: ModelChain<Latest>, bytes: Data?, key: String
    ) throws(KeepsakeError) -> LoadStep<Latest> {
        switch chain.outcome(of: bytes, context: context).located(store: store.uri, key: key) {
        case .absent:
            return .done(nil)
        case let .current(record), let .newerReadable(record):
            return .done(LoadedRecord(record: record, writeBack: .notNeeded))
        case let .outdated(record):
            VaultMetrics.migrated(store: store.uri)
            guard options.writeBack, let bytes else { return .done(LoadedRecord(record: record, writeBack: .skipped)) }
            do throws(KeepsakeError) {
                let encoded = try chain.encode(record.value)
                if let backup = options.backup { try backup.save(bytes, forKey: key, store: store.uri) }
                return .writeBack(record, StoreWrite(key: key, value: encoded, expectation: .unchanged(bytes)).verified)
            } catch {
                let failed = LoadedRecord<Latest>.WriteBack.failed(error.located(store: store.uri, key: key))
                return .done(LoadedRecord(record: record, writeBack: wroteBack(failed, chain: chain, key: key)))
            }
        case let .newer(error, _), let .failed(error, _):
            throw error
        }
    }

    /// Logs how a write-back ended, and returns it.
    @usableFromInline
    func wroteBack<Latest>(
        _ outcome: LoadedRecord<Latest>.WriteBack, chain: ModelChain<Latest>, key: String
    ) -> LoadedRecord<Latest>.WriteBack {
        if case let .failed(error) = outcome {
            Log.engine.wroteBack(error, store: store.uri, key: key, schema: chain.name)
            VaultMetrics.wroteBack(error, store: store.uri)
        } else {
            Log.engine.wroteBack(nil, store: store.uri, key: key, schema: chain.name)
            VaultMetrics.wroteBack(nil, store: store.uri)
        }
        return outcome
    }

    /// Stores `value` under `key` (the chain's first default key when `nil`): last writer wins.
    /// See `save(_:for:)`, for typed keys.
    ///
    /// - Throws: What `save(_:for:)` throws.
    /// - Important: If this throws, this save wrote nothing.
    public func save<Latest>(
        _ value: Latest, in chain: ModelChain<Latest>, forKey key: String? = nil
    ) throws(KeepsakeError) {
        let key = try resolve(key, chain)
        var plain: Data?
        var attempt = 0
        while true {
            attempt += 1
            do throws(KeepsakeError) {
                let existing = try store.data(forKey: key)
                try store.commitOne(try chain.saveWrite(of: value, key: key, over: existing, plain: &plain))
                return
            } catch  where error.code == .conflict && attempt < Self.saveAttempts {
                // Another writer's save landed between this one's read and write: last writer
                // wins, so read what it stored (a newer record is still never overwritten) and
                // write again.
                Backoff.pause(after: attempt)
            } catch {
                throw error.located(store: store.uri, key: key)
            }
        }
    }

    /// Removes the value under `key`, if any.
    ///
    /// - Important: If this throws, the store is as it was.
    public func remove(forKey key: String) throws(KeepsakeError) {
        try store.removeData(forKey: key)
    }

    /// Every key of the store that holds a value, sorted: records of every model and plain values.
    public func keys() throws(KeepsakeError) -> [String] {
        try store.keys()
    }

    /// What is stored under `key` for `chain`, read through the pipeline; nothing is written.
    public func outcome<Latest>(
        of chain: ModelChain<Latest>, forKey key: String? = nil
    ) throws(KeepsakeError) -> RecordOutcome<Latest> {
        let key = try resolve(key, chain)
        return chain.outcome(of: try store.data(forKey: key), context: context).located(store: store.uri, key: key)
    }

    @usableFromInline
    func resolve<Latest>(_ key: String?, _ chain: ModelChain<Latest>) throws(KeepsakeError) -> String {
        guard let key = key ?? chain.defaultKeys.first else {
            throw KeepsakeError(
                .invalidArgument, store: store.uri,
                "the \(chain.name) chain has no default key; pass the key to use")
        }
        try store.validateKey(key)
        return key
    }
}
