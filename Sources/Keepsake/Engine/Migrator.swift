import Foundation

/// Migrates every managed record of a store: what `migrate status`, `plan` and `run` use.
///
/// Records are matched to chains by the envelope's `schema`, else by an explicit key → model
/// mapping, else by the chains' default keys; other keys are *unmanaged* and never touched.
///
/// ```swift
/// let migrator = Migrator(store: store, chains: [Person.chain.erased, TrialInfo.chain.erased],
///                         context: .live(deviceIdentity: device))
/// for report in try migrator.run(backup: .timestamped(in: backupsPath)) {
///     print(report.key, report.state)
/// }
/// ```
public struct Migrator: Sendable {
    /// The store whose records are planned and migrated.
    public let store: any RecordStore
    /// The models records are matched to, by key or by the schema an envelope names.
    public let chains: [AnyModelChain]
    /// What migration steps get: the clock, new identifiers and the device identity.
    public let context: MigrationContext
    /// Key → model name, for records whose key is not a default key of their model.
    public let keyModels: [String: String]

    /// - Precondition: Chain names are unique.
    public init(
        store: any RecordStore, chains: [AnyModelChain], context: MigrationContext, keyModels: [String: String] = [:]
    ) {
        precondition(Set(chains.map(\.name)).count == chains.count, "Migrator: two chains share a name")
        self.store = store
        self.chains = chains
        self.context = context
        self.keyModels = keyModels
    }

    /// Every key of the store with its state; nothing is written. Outdated records are migrated
    /// in memory, so that a failing step shows as `unreadable` here, not first in `run`; the
    /// round-trip verification of the bytes to write is left to `run`, where a write follows.
    ///
    /// - Throws: Only when the store itself cannot be read; a bad record is a report.
    public func plan() throws(KeepsakeError) -> [RecordReport] {
        var reports: [RecordReport] = []
        try forEachRecord { _, total, key, result in
            if reports.isEmpty { reports.reserveCapacity(total) }
            switch result {
            case let .success(bytes): reports.append(evaluate(key: key, bytes: bytes, encodeLatest: false).report)
            case let .failure(error): reports.append(unreadable(key: key, error).report)
            }
        }
        return reports
    }

    /// Hands every record of the store to `body` in key order, with its position and the
    /// number of records: what ``RecordStore/allRecords()`` returns (a defaults suite's records
    /// as slices of the suite's bytes as read once, no copy per record).
    private func forEachRecord(
        _ body: (_ offset: Int, _ total: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError) {
        let entries = try store.allRecords()
        for (offset, entry) in entries.enumerated() { body(offset, entries.count, entry.key, entry.result) }
    }

    /// The record under `key` migrated in memory, and its latest envelope bytes; nothing written.
    ///
    /// - Returns: `nil` when nothing is stored under `key`; `latest` is `nil` when the record is
    ///   unmanaged or cannot be read (the report says why).
    public func preview(key: String) throws(KeepsakeError) -> (report: RecordReport, latest: Data?)? {
        guard let bytes = try store.data(forKey: key) else { return nil }
        let evaluation = evaluate(key: key, bytes: bytes, encodeLatest: true)
        var report = evaluation.report
        guard let chain = evaluation.chain, let value = evaluation.value else { return (report, nil) }
        if let encoded = evaluation.encoded { return (report, encoded) }
        do throws(KeepsakeError) {
            return (report, try chain.encode(value))
        } catch {
            report.error = error.located(store: store.uri, key: key)
            report.state = .unreadable
            return (report, nil)
        }
    }

    /// Migrates every outdated managed record and writes each back once.
    ///
    /// Writes go to the store as one batch (for the defaults store, one durable document write),
    /// each applied only if its record still holds the bytes that were read. A record that is
    /// newer, unreadable (its bytes, or the store's copy of it, cannot be read — see
    /// ``RecordStore/allRecords()``), fails its step, fails its backup or changed meanwhile keeps
    /// its bytes and is reported; the others still migrate.
    ///
    /// - Parameters:
    ///   - backup: When set, each record's original bytes are saved there before the batch, all
    ///     in one durable batch of their own (``BackupDirectory/saveAll(_:store:)``).
    ///   - progress: Called after each record is evaluated and once the batch is written.
    /// - Throws: Only when the store itself cannot be read or written; then nothing was written.
    public func run(
        backup: BackupDirectory? = nil,
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) throws(KeepsakeError) -> [RecordReport] {
        var reports: [RecordReport] = []
        var writes: [StoreWrite] = []
        var writeIndex: [Int] = []  // report index for each write
        var originals: [(key: String, bytes: Data)] = []  // each write's record as read, for the backup
        var count = 0
        try forEachRecord { offset, total, key, result in
            if offset == 0 { reports.reserveCapacity(total) }
            count = total
            let bytes: Data
            switch result {
            case let .success(read): bytes = read
            case let .failure(error):
                reports.append(unreadable(key: key, error).report)
                progress?(MigrationProgress(evaluated: offset + 1, total: total, written: false))
                return
            }
            let evaluation = evaluate(key: key, bytes: bytes, encodeLatest: true)
            if let encoded = evaluation.encoded {
                writes.append(StoreWrite(key: key, value: encoded, expectation: .unchanged(bytes)))
                writeIndex.append(reports.count)
                if backup != nil { originals.append((key, bytes)) }
            }
            reports.append(evaluation.report)
            progress?(MigrationProgress(evaluated: offset + 1, total: total, written: false))
        }
        if let backup, !writes.isEmpty {
            // One durable batch of backups; a record whose backup failed keeps its bytes.
            var kept: [StoreWrite] = []
            var keptIndex: [Int] = []
            for ((write, index), saved) in zip(zip(writes, writeIndex), backup.saveAll(originals, store: store.uri)) {
                switch saved {
                case let .success(file):
                    reports[index].backupPath = file
                    kept.append(write)
                    keptIndex.append(index)
                case let .failure(error):
                    reports[index].error = error
                }
            }
            writes = kept
            writeIndex = keptIndex
        }
        guard !writes.isEmpty else {
            Log.engine.ranMigration(reports, store: store.uri)
            return reports
        }
        let results = try store.commit(writes)
        for (index, result) in zip(writeIndex, results) {
            switch result {
            case .applied:
                reports[index].state = .migrated
            case .conflict:
                reports[index].error = KeepsakeError(
                    .conflict, store: store.uri, key: reports[index].key,
                    "the record changed while it was being migrated; it was left as the other writer stored it")
            case let .failed(error):
                reports[index].error = error
            }
        }
        progress?(MigrationProgress(evaluated: count, total: count, written: true))
        Log.engine.ranMigration(reports, store: store.uri)
        return reports
    }

    // MARK: Evaluation

    struct Evaluation {
        var report: RecordReport
        /// The verified latest envelope of an outdated record, when asked for.
        var encoded: Data?
        var chain: AnyModelChain?
        var value: (any ModelVersion)?
    }

    private func chain(named name: String) -> AnyModelChain? {
        chains.first { $0.name.isExactly(name) }
    }

    /// A record the store could not read: unreadable, matched to a chain by key when it can be.
    func unreadable(key: String, _ error: KeepsakeError) -> Evaluation {
        let chain = chainByKey(key)
        return Evaluation(
            report: RecordReport(
                key: key, schema: chain?.name, latestVersion: chain?.latestVersion, state: .unreadable,
                error: error.located(store: store.uri, key: nil)))
    }

    /// Routes the record to its chain (by envelope schema, else by key) and runs the pipeline.
    func evaluate(key: String, bytes: Data, encodeLatest: Bool) -> Evaluation {
        let parsed: ParsedRecord
        do throws(KeepsakeError) {
            parsed = try ParsedRecord.parse(bytes)
        } catch {
            // A record that does not parse may still name its model and version (read leniently,
            // in linear time): the report says both, instead of calling it unmanaged.
            let claimedChain = VersionClaim.schema(in: bytes).flatMap { self.chain(named: $0) }
            guard let chain = claimedChain ?? chainByKey(key) else {
                return Evaluation(report: RecordReport(key: key, state: .unmanaged))
            }
            var error = error.located(store: store.uri, key: key)
            var claimed: Int?
            if let version = VersionClaim.highest(in: bytes) {
                if version.rounded() == version, abs(version) < 1e9 { claimed = Int(version) }
                if version > Double(chain.latestVersion) {
                    error.message += """
                        ; it names \(chain.name) version \(VersionClaim.describe(version)), newer than this \
                        release's latest (\(chain.latestVersion)): a newer release may read it
                        """
                }
            }
            return Evaluation(
                report: RecordReport(
                    key: key, schema: chain.name, storedVersion: claimed, latestVersion: chain.latestVersion,
                    state: .unreadable, error: error))
        }
        let chain: AnyModelChain
        if let schema = parsed.envelopeSchema {
            guard let named = self.chain(named: schema) else {
                return Evaluation(report: RecordReport(key: key, schema: schema, state: .unmanaged, form: .envelope))
            }
            chain = named
        } else if let byKey = chainByKey(key) {
            chain = byKey
        } else {
            return Evaluation(report: RecordReport(key: key, state: .unmanaged))
        }
        let outcome = chain.pipeline(parsed, context, encodeLatest).located(store: store.uri, key: key)
        var evaluation = Evaluation(
            report: RecordReport(key: key, schema: chain.name, latestVersion: chain.latestVersion, outcome: outcome),
            chain: chain, value: outcome.record?.value)
        if case let .outdated(_, latest) = outcome { evaluation.encoded = latest }
        return evaluation
    }

    /// The chain a key belongs to: by `keyModels`, else by the chains' default keys, both
    /// compared by UTF-8 bytes (keys are exact strings).
    private func chainByKey(_ key: String) -> AnyModelChain? {
        if let index = keyModels.index(forKey: key), keyModels[index].key.isExactly(key) {
            return chain(named: keyModels[index].value)
        }
        return chains.first { $0.defaultKeys.contains { $0.isExactly(key) } }
    }
}

/// How far a ``Migrator/run(backup:progress:)`` has come.
public struct MigrationProgress: Sendable, Equatable {
    /// How many records have been read and migrated in memory so far.
    public let evaluated: Int
    /// How many records the store holds.
    public let total: Int
    /// Whether the batch of writes has been committed.
    public let written: Bool

    /// Progress after `evaluated` of `total` records, the batch `written` or not yet.
    public init(evaluated: Int, total: Int, written: Bool) {
        self.evaluated = evaluated
        self.total = total
        self.written = written
    }
}
