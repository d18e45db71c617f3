import Foundation

/// The type an app holds: a store, a migration context and options, with load, save, remove
/// and keys for its models.
///
/// ```swift
/// let vault = Vault(store: try DefaultsStore(suite: "settings", app: "com.example.notes"))
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
        guard let defaultValue = key.defaultValue else {
            throw KeepsakeError(
                .notFound, store: store.uri, key: key.name,
                "no record is stored under this key and the key has no default")
        }
        return defaultValue
    }

    /// Stores `value` under `key`, in an envelope at the latest version.
    ///
    /// Over a record of a newer release that declared this release's readers compatible
    /// (``RecordOutcome/newerReadable(_:)``), the save keeps that record's version and every key
    /// this release does not know, and replaces only the keys it does: the newer release loses
    /// nothing.
    ///
    /// The value is stored losslessly: it reads back equal, dates included (a date finer than a
    /// millisecond is written with the fraction digits it needs).
    ///
    /// - Throws: ``KeepsakeError/Code/newerVersion`` when the stored record was written by a
    ///   newer release that did not declare this one compatible,
    ///   ``KeepsakeError/Code/schemaMismatch`` when it is another model's envelope,
    ///   ``KeepsakeError/Code/encodingFailed`` when the value cannot be stored exactly (a date
    ///   outside the years 0001–9999: the cause names the field), and the store's own errors. An
    ///   unreadable record is replaced.
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func save<Latest>(_ value: Latest, for key: RecordKey<Latest>) throws(KeepsakeError) {
        try save(value, in: key.chain, forKey: key.name)
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
    public func load<Latest>(
        _ chain: ModelChain<Latest>, forKey key: String? = nil
    ) throws(KeepsakeError) -> LoadedRecord<Latest>? {
        let key = try resolve(key, chain)
        let bytes = try store.data(forKey: key)
        switch chain.outcome(of: bytes, context: context).located(store: store.uri, key: key) {
        case .absent:
            return nil
        case let .current(record), let .newerReadable(record):
            return LoadedRecord(record: record, writeBack: .notNeeded)
        case let .outdated(record, _):
            guard options.writeBack, let bytes else { return LoadedRecord(record: record, writeBack: .skipped) }
            return LoadedRecord(record: record, writeBack: writeBack(record.value, of: chain, over: bytes, key: key))
        case let .newer(error, _), let .failed(error, _):
            throw error
        }
    }

    /// Encodes, verifies, backs up and writes a migrated record; what happened, never a throw.
    private func writeBack<Latest>(
        _ value: Latest, of chain: ModelChain<Latest>, over bytes: Data, key: String
    ) -> LoadedRecord<Latest>.WriteBack {
        do throws(KeepsakeError) {
            let encoded = try chain.encode(value)
            if let backup = options.backup { try backup.save(bytes, forKey: key, store: store.uri) }
            try store.commitOne(StoreWrite(key: key, value: encoded, expectation: .unchanged(bytes)))
            Log.engine.wroteBack(nil, store: store.uri, key: key, schema: chain.name)
            return .written
        } catch {
            Log.engine.wroteBack(error, store: store.uri, key: key, schema: chain.name)
            return .failed(error.located(store: store.uri, key: key))
        }
    }

    /// Stores `value` under `key` (the chain's first default key when `nil`). See `save(_:for:)`,
    /// for typed keys.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func save<Latest>(
        _ value: Latest, in chain: ModelChain<Latest>, forKey key: String? = nil
    ) throws(KeepsakeError) {
        let key = try resolve(key, chain)
        do throws(KeepsakeError) {
            let existing = try store.data(forKey: key)
            let encoded = try chain.encodeForSave(value, over: existing)
            try store.commitOne(StoreWrite(key: key, value: encoded, expectation: .unchanged(existing)))
        } catch {
            throw error.located(store: store.uri, key: key)
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

    private func resolve<Latest>(_ key: String?, _ chain: ModelChain<Latest>) throws(KeepsakeError) -> String {
        guard let key = key ?? chain.defaultKeys.first else {
            throw KeepsakeError(
                .invalidArgument, store: store.uri,
                "the \(chain.name) chain has no default key; pass the key to use")
        }
        try store.validateKey(key)
        return key
    }
}

extension ModelChain {
    /// The bytes a save of `value` writes over `existing`: the latest envelope; over a newer
    /// record declared readable by this release, that record with this release's keys replaced;
    /// refused over a newer record that was not, or another model's envelope.
    func encodeForSave(_ value: Latest, over existing: Data?) throws(KeepsakeError) -> Data {
        guard let existing else { return try encode(value) }
        let parsed: ParsedRecord
        let detected: DetectedRecord
        do throws(KeepsakeError) {
            parsed = try ParsedRecord.parse(existing)
            detected = try detect(parsed)
        } catch  where error.code == .schemaMismatch {
            throw error
        } catch {
            return try encode(value)  // an unreadable record may be replaced: that is what a save means
        }
        guard detected.version > latestVersion else { return try encode(value) }
        guard let reader = detected.oldestReader, reader <= latestVersion,
            case let .object(newerFields) = detected.fields
        else { throw newerError(detected.version) }
        return try merge(value, into: newerFields, version: detected.version, oldestReader: reader)
    }

    /// `value`'s keys over a newer record's: keys this release knows come from `value` (absent
    /// when it has none), the others stay exactly as the newer release wrote them.
    private func merge(
        _ value: Latest, into newer: JSONObject, version: Int, oldestReader: Int
    ) throws(KeepsakeError) -> Data {
        let own: JSONObject
        do {
            guard case let .object(object) = try JSONParser.parse(CanonicalJSON.encode(value)) else {
                throw KeepsakeError(.encodingFailed, "\(name) version \(latestVersion) does not encode as an object")
            }
            own = object
        } catch let error as KeepsakeError {
            throw error
        } catch {
            throw KeepsakeError(
                .encodingFailed, "\(name) version \(latestVersion) could not be encoded",
                cause: .other(String(describing: error)), underlying: error)
        }
        let known = (versions.last?.keys?.all ?? []).union(own.keys)
        var members = own.members
        members += newer.members.filter { !known.contains($0.key) }
        var bytes = Data()
        let envelope = JSONObject(members: [
            ("data", .object(JSONObject(members: members).sortedByKey)),
            ("oldestReader", .number(String(oldestReader))),
            ("schema", .string(name)),
            ("version", .number(String(version)))
        ])
        JSONValue.object(envelope).write(to: &bytes)
        // Verify: the merged record reads back, compatibly, as exactly `value`.
        guard case let .newerReadable(record) = outcome(of: bytes, context: .verification),
            (try? CanonicalJSON.encode(record.value)) == (try? CanonicalJSON.encode(value))
        else {
            throw KeepsakeError(
                .verificationFailed,
                """
                the \(name) record merged into version \(version) does not read back as the value saved; nothing \
                was written
                """)
        }
        return bytes
    }
}
