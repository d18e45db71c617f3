import Foundation

extension RecordStore {
    /// Loads the record under `key` and migrates it to the chain's latest version, writing the
    /// migrated record back (unless `writeBack` is `false`).
    ///
    /// ```swift
    /// switch try store.loadRecord(TrialInfo.chain, context: context) {
    /// case .absent: startTrial()
    /// case let .current(info), let .migrated(info, _, _): show(info.startDate)
    /// }
    /// ```
    ///
    /// The write-back follows DESIGN §5: every step runs in memory, the result is encoded,
    /// decoded again and re-encoded to the same bytes, the original bytes are backed up if
    /// `backup` is given, and then one atomic write replaces the record — only if it still holds
    /// the bytes that were read. A current record is never rewritten.
    ///
    /// - Parameters:
    ///   - chain: The model's chain.
    ///   - key: The storage key; the chain's first default key when `nil`.
    ///   - context: Clock, identifiers and device identity for the steps.
    ///   - writeBack: Whether to store a migrated record. `false` migrates in memory only.
    ///   - backup: Where to keep the original bytes before replacing them.
    /// - Returns: ``RecordState/absent``, ``RecordState/current(_:)`` or ``RecordState/migrated(_:from:to:)``.
    /// - Throws: ``KeepsakeError`` naming this store and the key: `.newerVersion`,
    ///   `.unrecognisedRecord`, `.ambiguousRecord`, `.corruptRecord`, `.schemaMismatch`,
    ///   `.migrationFailed`, `.verificationFailed`, `.conflict`, `.backupFailed`, or the store's own.
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func loadRecord<Model>(
        _ chain: ModelChain<Model>,
        forKey key: String? = nil,
        context: MigrationContext,
        writeBack: Bool = true,
        backup: BackupDirectory? = nil
    ) throws(KeepsakeError) -> RecordState<Model> {
        let key = try chain.resolveKey(key, store: uri)
        guard let bytes = try data(forKey: key) else { return .absent }
        do throws(KeepsakeError) {
            let detected = try chain.detect(ParsedRecord.parse(bytes))
            let value = try chain.migrate(detected, context: context)
            guard detected.version < chain.latestVersion else { return .current(value) }
            if writeBack {
                let encoded = try chain.encodeVerified(value)
                if let backup { try backup.save(bytes, forKey: key, store: uri) }
                try commitOne(StoreWrite(key: key, value: encoded, expectation: .unchanged(bytes)))
            }
            return .migrated(value, from: detected.version, to: chain.latestVersion)
        } catch {
            throw error.located(store: uri, key: key)
        }
    }

    /// Stores `value` as the chain's latest version under `key`, in an envelope.
    ///
    /// Replaces a current, older or unreadable record; refuses one written by a newer release
    /// (`.newerVersion`) or an envelope of another model (`.schemaMismatch`).
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func saveRecord<Model>(
        _ value: Model, in chain: ModelChain<Model>, forKey key: String? = nil
    ) throws(KeepsakeError) {
        let key = try chain.resolveKey(key, store: uri)
        do throws(KeepsakeError) {
            let encoded = try chain.encodeVerified(value)
            let existing = try data(forKey: key)
            if let existing {
                do throws(KeepsakeError) {
                    let detected = try chain.detect(ParsedRecord.parse(existing))
                    _ = try chain.entry(forVersion: detected.version)
                } catch where error.code == .newerVersion || error.code == .schemaMismatch {
                    throw error
                } catch {
                    // An unreadable record may be replaced: that is what saving a new value means.
                }
            }
            try commitOne(StoreWrite(key: key, value: encoded, expectation: .unchanged(existing)))
        } catch {
            throw error.located(store: uri, key: key)
        }
    }
}

extension ModelChain {
    func resolveKey(_ key: String?, store: String) throws(KeepsakeError) -> String {
        if let key { return key }
        guard let first = defaultKeys.first else {
            throw KeepsakeError(.invalidArgument, store: store,
                                "the \(name) chain has no default key; pass the key to use")
        }
        return first
    }
}
