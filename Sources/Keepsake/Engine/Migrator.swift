import Foundation
import Synchronization

/// Migrates every managed record of a store: what `migrate status`, `plan` and `run` use.
///
/// Records are matched to chains by the envelope's `schema`, else by an explicit key → model
/// mapping, else by an explicit pattern → model mapping, else by the chains' default keys and
/// key patterns (``KeyPattern``); other keys are *unmanaged* and never touched.
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
    /// Key pattern → model name (`tenant-*` → `Tenant`), for records whose keys no pattern of
    /// their model's chain names; the longest matching prefix wins, and an exact key in
    /// ``keyModels`` wins over every pattern.
    public let patternModels: [KeyPattern: String]
    let routing: KeyRouting

    /// - Precondition: Chain names are unique.
    public init(
        store: any RecordStore, chains: [AnyModelChain], context: MigrationContext, keyModels: [String: String] = [:],
        patternModels: [KeyPattern: String] = [:]
    ) {
        precondition(Set(chains.map(\.name)).count == chains.count, "Migrator: two chains share a name")
        self.store = store
        self.chains = chains
        self.context = context
        self.keyModels = keyModels
        self.patternModels = patternModels
        routing = KeyRouting(chains: chains, keyModels: keyModels, patternModels: patternModels)
    }

    /// Every key of the store with its state; nothing is written. Outdated records are migrated
    /// in memory, so that a failing step shows as `unreadable` here, not first in `run`; the
    /// round-trip verification of the bytes to write is left to `run`, where a write follows.
    ///
    /// - Throws: Only when the store itself cannot be read; a bad record is a report.
    public func plan() throws(KeepsakeError) -> [RecordReport] {
        Array(try planReports())
    }

    /// ``plan()``, its reports held compactly (``RecordReports``): what `migrate status` and
    /// `plan` use, so that a large store's reports take little more memory than its keys.
    package func planReports() throws(KeepsakeError) -> RecordReports {
        var reports = RecordReports()
        try forEachEvaluation(encodeLatest: false) { offset, total, _, evaluation in
            if offset == 0 { reports.reserveCapacity(total) }
            reports.append(evaluation.report)
        }
        return reports
    }

    /// Evaluates every record of the store, as ``RecordStore/forEachRecord(_:)`` hands them over
    /// (a defaults suite's records as slices of the suite's bytes as read once, no list of them
    /// built), and hands each evaluation to `body` in key order, with its position, the number of
    /// records and the bytes read (`nil` when the store could not read the record); after each
    /// block of at most ``parallelBlock`` records, `endOfBlock` runs.
    ///
    /// On more than one core, a large store's records are evaluated in parallel, a block at a
    /// time, and handed to `body` in order as each block completes: records are independent (each
    /// step gets a context scoped to its record), and only the evaluation runs in parallel —
    /// never `body`, the store or the reports. The blocks go through two stages: while this
    /// thread hands one block's evaluations to `body` (and `endOfBlock` commits them, on a store
    /// that commits in blocks), the other threads already evaluate the next block, and this
    /// thread joins them once it is done.
    private func forEachEvaluation(
        encodeLatest: Bool,
        _ body: (_ offset: Int, _ total: Int, _ bytes: Data?, _ evaluation: Evaluation) -> Void,
        endOfBlock: () -> Void = {}
    ) throws(KeepsakeError) {
        var block: [Entry] = []
        // The block evaluated last, not yet handed on, and its evaluations.
        var evaluated: [Entry] = []
        var results = [Evaluation?](repeating: nil, count: Self.parallelBlock)
        var next = [Evaluation?](repeating: nil, count: Self.parallelBlock)
        var offset = 0
        var total = 0
        var workers = 1
        func handOver() {
            guard !evaluated.isEmpty else { return }
            for index in evaluated.indices {
                // Moved out of its slot, not copied and then destroyed.
                guard let evaluation = results[index].take() else { continue }  // every slot was filled
                body(offset, total, Self.bytes(of: evaluated[index]), evaluation)
                offset += 1
            }
            evaluated.removeAll(keepingCapacity: true)
            endOfBlock()
        }
        func finishBlock() {
            if workers > 1 {
                // Evaluate `block` into `next` on the other threads while the block before it is
                // handed on here, then help with what is left.
                let entries = block
                next.withUnsafeMutableBufferPointer { buffer in
                    let work = BlockWork(entries: entries, slots: buffer)
                    let group = DispatchGroup()
                    for _ in 1..<workers {
                        DispatchQueue.global().async(group: group) {
                            work.evaluate { self.evaluate($0, encodeLatest: encodeLatest) }
                        }
                    }
                    handOver()
                    work.evaluate { self.evaluate($0, encodeLatest: encodeLatest) }
                    group.wait()
                }
                swap(&results, &next)
                swap(&evaluated, &block)
            } else {
                for index in block.indices { results[index] = evaluate(block[index], encodeLatest: encodeLatest) }
                swap(&evaluated, &block)
                handOver()
            }
            block.removeAll(keepingCapacity: true)
        }
        try store.forEachRecord { count, key, result in
            if total == 0 {
                total = count
                workers = Self.workers(for: count)
                block.reserveCapacity(min(count, Self.parallelBlock))
                evaluated.reserveCapacity(min(count, Self.parallelBlock))
            }
            block.append((key, result))
            if block.count == Self.parallelBlock { finishBlock() }
        }
        if !block.isEmpty { finishBlock() }
        if !evaluated.isEmpty { handOver() }
    }

    /// A record as the store handed it over.
    private typealias Entry = (key: String, result: Result<Data, KeepsakeError>)

    /// One block's evaluation shared by the threads doing it: each takes the next run of
    /// ``chunk`` records not yet taken, until none is left.
    private final class BlockWork: Sendable {
        static let chunk = 64
        let entries: [Entry]
        /// Each record's evaluation goes to its own slot: no two threads write one.
        nonisolated(unsafe) let slots: UnsafeMutableBufferPointer<Evaluation?>
        let taken = Atomic<Int>(0)

        init(entries: [Entry], slots: UnsafeMutableBufferPointer<Evaluation?>) {
            self.entries = entries
            self.slots = slots
        }

        func evaluate(_ evaluation: (Entry) -> Evaluation) {
            while true {
                let first = taken.add(Self.chunk, ordering: .relaxed).oldValue
                guard first < entries.count else { return }
                for index in first..<min(first + Self.chunk, entries.count) {
                    slots[index] = evaluation(entries[index])
                }
            }
        }
    }

    /// How many records are evaluated (in parallel, on more than one core) before they are
    /// handed on in order.
    static let parallelBlock = 2_048

    /// How many threads evaluate `count` records: one for a store smaller than two blocks (the
    /// threads would cost more than they save), else one per active core, at most 8.
    static func workers(for count: Int) -> Int {
        guard count >= 2 * parallelBlock else { return 1 }
        return max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
    }

    /// The bytes the store read for `entry`; `nil` when it could not read them (the
    /// evaluation is then `unreadable`, and nothing is written).
    private static func bytes(of entry: Entry) -> Data? {
        guard case let .success(bytes) = entry.result else { return nil }
        return bytes
    }

    private func evaluate(_ entry: Entry, encodeLatest: Bool) -> Evaluation {
        switch entry.result {
        case let .success(bytes): return evaluate(key: entry.key, bytes: bytes, encodeLatest: encodeLatest)
        case let .failure(error): return unreadable(key: entry.key, error)
        }
    }

    /// The record under `key` migrated in memory, and its latest envelope bytes; nothing written.
    ///
    /// - Returns: `nil` when nothing is stored under `key`; `latest` is `nil` when the record is
    ///   unmanaged or cannot be read (the report says why).
    public func preview(key: String) throws(KeepsakeError) -> (report: RecordReport, latest: Data?)? {
        guard let bytes = try store.data(forKey: key) else { return nil }
        let evaluation = evaluate(key: key, bytes: bytes, encodeLatest: true, keepValue: true)
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
    /// each applied only if its record still holds the bytes that were read — or, for a store
    /// that ``StoreCapabilities/commitsRunInBlocks`` (PostgreSQL), one batch per block of
    /// records as they are read, so that memory and row locks stay flat in the number of
    /// records. A record that is
    /// newer, unreadable (its bytes, or the store's copy of it, cannot be read — see
    /// ``RecordStore/allRecords()``), fails its step or fails its backup keeps its bytes and is
    /// reported; the others still migrate.
    ///
    /// A record another writer changed between the read and the write keeps that writer's
    /// bytes: it is read again and reported as it now stands, with a ``RecordReport/note`` —
    /// `current` when the other writer brought it to the latest version (an app instance
    /// migrating it on load), `newerReadable`, `removed`, or as `status` would report it. One
    /// that is still outdated is migrated again from the other writer's bytes (backed up first),
    /// at most three writes in all; only a record still outdated after that is reported
    /// `outdated`, with a ``KeepsakeError/Code/conflict`` error.
    ///
    /// - Parameters:
    ///   - backup: When set, each record's original bytes are saved there before the batch, all
    ///     in one durable batch of their own (``BackupDirectory/saveAll(_:store:)``) — per block
    ///     on a store that commits a run in blocks.
    ///   - progress: Called after each record is evaluated and once the batch is written.
    /// - Throws: `KeepsakeError.Code.invalidArgument` when `backup` is given for a store that
    ///   encrypts its records (``StoreCapabilities/encryptedAtRest``): the backup would hold
    ///   them in plain text; nothing is read or written then. Otherwise only when the store
    ///   itself cannot be read or written; then nothing was written
    ///   — except, on a store that commits a run in blocks, the blocks committed before the
    ///   failure: each of their records is its migrated self, every other record as it was, and
    ///   running again migrates the rest.
    public func run(
        backup: BackupDirectory? = nil,
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) throws(KeepsakeError) -> [RecordReport] {
        Array(try runReports(backup: backup, progress: progress))
    }

    /// ``run(backup:progress:)``, its reports held compactly (``RecordReports``): what
    /// `migrate run` uses. The records to write are held in a ``WriteBatch`` (one buffer per
    /// block of records, 40 bytes a write), not one allocation each — or, on a store that takes
    /// them as they are made (``RunStreamingStore``), streamed into it block by block, the batch
    /// holding only where each write's bytes lie (24 bytes).
    package func runReports(
        backup: BackupDirectory? = nil,
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) throws(KeepsakeError) -> RecordReports {
        if let backup, store.capabilities.contains(.encryptedAtRest) {
            // A backup holds each record's bytes as read: for a store that encrypts, plaintext.
            throw KeepsakeError(
                .invalidArgument, store: store.uri,
                """
                this store keeps its records encrypted and a backup in \(backup.path) would hold them in plain \
                text; back up the store itself instead; nothing was read or written
                """)
        }
        var reports = RecordReports()
        var batch = WriteBatch()
        var conflicted: [Int] = []  // records another writer changed meanwhile
        var count = 0
        let inBlocks = store.capabilities.contains(.commitsRunInBlocks)
        var failure: KeepsakeError?  // a block's commit that threw: the run stops there
        var committed = false  // whether any batch was sent
        // On a store that takes a run's writes as they are made (the defaults store: into the new
        // suite file), each block's writes go to it as the block is handed on: the run holds
        // where their bytes lie, not the bytes, and the commit has only to put them in place.
        // Not with a backup, whose failures drop writes from the batch after the fact.
        var streaming = backup == nil && !inBlocks && store is any RunStreamingStore
        var stream: (any RunStream)?
        defer { stream?.discard() }
        /// Streams the writes gathered so far into the store, while it takes them.
        func streamGathered() {
            guard streaming, !batch.isEmpty else { return }
            if stream == nil { stream = (store as? any RunStreamingStore)?.beginRunStream() }
            guard let stream else {
                streaming = false
                return
            }
            streaming = batch.stream(into: stream, keyedBy: reports)
        }
        /// Backs up and commits the writes gathered so far, and notes how each ended.
        func commitGathered() throws(KeepsakeError) {
            batch.endBlock()
            if let backup, !batch.isEmpty { backUp(&batch, in: backup, &reports) }
            guard !batch.isEmpty else { return }
            committed = true
            streamGathered()
            if let taken = stream {
                stream = nil
                defer { taken.discard() }
                if try taken.commit() {
                    for entry in batch.entries { reports.setState(.migrated, at: entry.report) }
                    batch.removeAll()
                    return
                }
                // The store changed since the run read it: the writes go as a batch, each
                // applied only over what it was migrated from.
                try batch.restoreStreamed(from: taken, keyedBy: reports, store: store.uri)
            }
            let results = try commit(batch.writes(keyedBy: reports))
            for (entry, result) in zip(batch.entries, results) {
                switch result {
                case .applied:
                    reports.setState(.migrated, at: entry.report)
                case .conflict:
                    conflicted.append(entry.report)
                case let .failed(error):
                    reports.update(entry.report) { $0.error = error }
                }
            }
            batch.removeAll()
        }
        try forEachEvaluation(
            encodeLatest: true,
            { offset, total, bytes, evaluation in
                if offset == 0 {
                    reports.reserveCapacity(total)
                    // One batch: room for every record at once (pages never written are never
                    // resident), rather than copies while it doubles.
                    if !inBlocks { batch.reserveCapacity(total) }
                }
                count = total
                if let encoded = evaluation.encoded, let bytes, failure == nil {
                    batch.append(encoded, over: bytes, report: reports.count)
                }
                reports.append(evaluation.report)
                progress?(MigrationProgress(evaluated: offset + 1, total: total, written: false))
            },
            endOfBlock: {
                guard failure == nil else { return }
                batch.endBlock()
                streamGathered()
                guard inBlocks else { return }
                do throws(KeepsakeError) {
                    try commitGathered()
                } catch {
                    failure = error
                }
            })
        if let failure { throw failure }
        try commitGathered()
        settle(conflicted, in: &reports, backup: backup)
        if committed { progress?(MigrationProgress(evaluated: count, total: count, written: true)) }
        Log.engine.ranMigration(reports, store: store.uri)
        return reports
    }

    /// Commits `writes`: as they are held when the store takes any collection, else as an array.
    private func commit(_ writes: WriteBatch.Writes) throws(KeepsakeError) -> [StoreWriteResult] {
        if let store = store as? any BatchCommittingStore { return try store.commit(batch: writes) }
        return try store.commit(Array(writes))
    }

    /// Saves each write's record as read in `backup`, as one durable batch, and keeps in `batch`
    /// the writes whose record was backed up; a record whose backup failed keeps its bytes, and
    /// its report says why.
    private func backUp(_ batch: inout WriteBatch, in backup: BackupDirectory, _ reports: inout RecordReports) {
        let originals = batch.entries.indices.map { position in
            (key: reports.key(at: batch.entries[position].report), bytes: batch.original(at: position))
        }
        let saved = backup.saveAll(originals, store: store.uri)
        for (entry, saved) in zip(batch.entries, saved) {
            switch saved {
            case let .success(file): reports.update(entry.report) { $0.backupPath = file }
            case let .failure(error): reports.update(entry.report) { $0.error = error }
            }
        }
        batch.filter { position in
            guard case .success = saved[position] else { return false }
            return true
        }
    }

    // MARK: Another writer

    /// How many times a run writes one record: a record another writer changed while the run
    /// was migrating it is read again and, while it is still outdated, migrated and written
    /// again, at most this many writes in all.
    static let writeAttempts = 3

    /// What a run says of a record another writer changed while the run was migrating it
    /// (``RecordReport/note``).
    enum Note {
        static let current = "brought to the latest version by another writer while it was being migrated"
        static let newerReadable =
            "brought to a newer version this release reads by another writer while it was being migrated"
        static let removed = "removed by another writer while it was being migrated"
        static let migratedAgain =
            "changed by another writer while it was being migrated; migrated again from what that writer stored"
        static let leftAsStored = "changed by another writer while it was being migrated; left as that writer stored it"
    }

    /// Settles the records whose write-back found another writer's change (the reports at
    /// `conflicted`, their writes skipped): each is read again and reported as it now stands,
    /// as `status` would report it — `current` (or `newerReadable`) when the other writer
    /// brought it up to date, `removed` when it removed it — with a note saying so. A record
    /// that is still outdated is migrated again from what the other writer stored (those bytes
    /// backed up first, when the run backs up) and written only if it still holds them, at most
    /// ``writeAttempts`` writes in all; after that it stays `outdated`, with a `conflict`
    /// error. Another writer's change is never written over.
    ///
    /// Never throws: the run's first batch is written already. A record that cannot be read
    /// again, or whose new write fails, keeps an error saying so.
    private func settle(_ conflicted: [Int], in reports: inout RecordReports, backup: BackupDirectory?) {
        var conflicted = conflicted
        var attempt = 1  // writes made of each record in `conflicted`
        while !conflicted.isEmpty {
            var batch = WriteBatch()
            for index in conflicted {
                let previous = reports[index]
                let key = previous.key
                let bytes: Data?
                do throws(KeepsakeError) {
                    bytes = try store.data(forKey: key)
                } catch {
                    reports.update(index) {
                        $0.error = KeepsakeError(
                            .conflict, store: store.uri, key: key,
                            """
                            the record changed while it was being migrated; it was left as the other writer \
                            stored it, and could not be read again: \(error.message)
                            """, cause: error.cause, underlying: error)
                    }
                    continue
                }
                guard let bytes else {
                    reports.update(index) {
                        $0 = RecordReport(
                            key: key, schema: previous.schema, latestVersion: previous.latestVersion, state: .removed,
                            backupPath: previous.backupPath, note: Note.removed)
                    }
                    continue
                }
                let evaluation = evaluate(key: key, bytes: bytes, encodeLatest: true)
                var report = evaluation.report
                report.backupPath = previous.backupPath
                if let encoded = evaluation.encoded {
                    if attempt < Self.writeAttempts {
                        batch.append(encoded, over: bytes, report: index)
                    } else {
                        report.error = KeepsakeError(
                            .conflict, store: store.uri, key: key,
                            """
                            the record changed while it was being migrated, \(attempt) times; it was left as the \
                            other writer stored it, still outdated
                            """)
                    }
                } else {
                    switch report.state {
                    case .current: report.note = Note.current
                    case .newerReadable: report.note = Note.newerReadable
                    default: report.note = Note.leftAsStored
                    }
                }
                reports.update(index) { $0 = report }
            }
            conflicted = []
            attempt += 1
            batch.endBlock()
            if let backup, !batch.isEmpty { backUp(&batch, in: backup, &reports) }
            guard !batch.isEmpty else { break }
            let results: [StoreWriteResult]
            do throws(KeepsakeError) {
                results = try commit(batch.writes(keyedBy: reports))
            } catch {
                for entry in batch.entries {
                    let key = reports.key(at: entry.report)
                    reports.update(entry.report) { $0.error = error.located(store: store.uri, key: key) }
                }
                break
            }
            for (entry, result) in zip(batch.entries, results) {
                switch result {
                case .applied:
                    reports.update(entry.report) {
                        $0.state = .migrated
                        $0.note = Note.migratedAgain
                    }
                case .conflict:
                    conflicted.append(entry.report)
                case let .failed(error):
                    reports.update(entry.report) { $0.error = error }
                }
            }
        }
    }

    // MARK: Evaluation

    struct Evaluation: Sendable {
        var report: RecordReport
        /// The verified latest envelope of an outdated record, when asked for.
        var encoded: Data?
        var chain: AnyModelChain?
        var value: (any ModelVersion)?
    }

    private func chain(named name: String) -> AnyModelChain? {
        routing.chain(named: name)
    }

    /// A record the store could not read: unreadable, matched to a chain by key when it can be.
    func unreadable(key: String, _ error: KeepsakeError) -> Evaluation {
        let chain = chainByKey(key)
        return Evaluation(
            report: RecordReport(
                key: key, schema: chain?.name, latestVersion: chain?.latestVersion, state: .unreadable,
                error: error.located(store: store.uri, key: nil)))
    }

    /// Routes the record to its chain (by envelope schema, else by key) and runs the pipeline;
    /// with `keepValue`, the evaluation holds the migrated value and its chain as well.
    func evaluate(key: String, bytes: Data, encodeLatest: Bool, keepValue: Bool = false) -> Evaluation {
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
        guard keepValue else {
            let (report, latest) = chain.reportPipeline(parsed, context, encodeLatest, key, store.uri)
            return Evaluation(report: report, encoded: latest)
        }
        let evaluated = chain.pipeline(parsed, context, encodeLatest)
        let outcome = evaluated.outcome.located(store: store.uri, key: key)
        return Evaluation(
            report: RecordReport(key: key, schema: chain.name, latestVersion: chain.latestVersion, outcome: outcome),
            encoded: evaluated.latest, chain: chain, value: outcome.record?.value)
    }

    /// The chain a key belongs to (``KeyRouting``), compared by UTF-8 bytes (keys are exact strings).
    private func chainByKey(_ key: String) -> AnyModelChain? {
        routing.chain(forKey: key)
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
