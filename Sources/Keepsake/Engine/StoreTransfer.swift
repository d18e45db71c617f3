internal import FileKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Copies or moves records from one store to another, verifying every record before anything
/// is removed: how a token an older release kept in a plain defaults suite moves into the
/// keyring or an encrypted store.
///
/// ```swift
/// // legacySuite and keyring: any two RecordStores (here, an old release's plain suite and
/// // the desktop keyring, each opened from its own module)
/// let transfer = StoreTransfer(from: legacySuite, to: keyring, chains: [Person.chain.erased])
/// let report = try transfer.run(.keys(["person", "apiToken"]), options: .init(move: true, migrate: true))
/// guard report.succeeded else { /* every record is still in the suite, or in both */ }
/// ```
///
/// A transfer runs in steps, and each step starts only when the one before succeeded for
/// every record:
/// 1. **Prepare.** Read each record from the source; with ``Options/migrate``, migrate an
///    outdated record to its latest version in memory (verified, as `migrate run` does).
///    Check that the destination can hold the bytes (``ValueConstrainedStore``) and read what
///    it holds under the key now: another value there is refused unless
///    ``Options/overwrite``; exactly the same bytes need no write.
/// 2. **Write** every record to the destination in one batch, each write applied only if the
///    key still holds what was read in step 1.
/// 3. **Verify:** read every record back from the destination and compare its bytes.
/// 4. **Remove** (a move only): delete every record from the source in one batch, each delete
///    applied only if the source still holds the bytes that were copied.
///
/// Nothing is lost at any point: a failure in step 1 writes nothing; a failure in step 2 or 3
/// gives every key of the destination back exactly the bytes it held before (or nothing) and
/// leaves the source untouched; a record that step 4 cannot remove stays in both stores. A
/// process killed between or during steps leaves each record in the source, the destination,
/// or both — never in neither — and running the same transfer again finishes it (a key that
/// already holds exactly the record's bytes is not a conflict).
///
/// Records are matched to chains as the ``Migrator`` matches them (the envelope's schema, then
/// `keyModels`, `patternModels`, then the chains' default keys and key patterns). Unmanaged values are copied as their exact
/// bytes when they are selected (``Selection/all`` or by key), where the destination can hold
/// them: a defaults suite holds only JSON values and the keyring only UTF-8 text, and a value
/// one cannot hold is that record's typed error (`.invalidArgument`), refused before anything
/// is written.
public struct StoreTransfer: Sendable {
    /// Which records to transfer.
    public enum Selection: Sendable, Equatable {
        /// Every record matched to one of the chains; unmanaged values stay where they are.
        case managed
        /// Every key of the source, unmanaged values included (as their bytes).
        case all
        /// These keys, managed or not. A key the source does not hold is that record's
        /// `.notFound` error, and nothing is written.
        case keys([String])
    }

    /// How to transfer.
    public struct Options: Sendable, Equatable {
        /// Remove each record from the source once every record is verified in the destination.
        public var move: Bool
        /// Write outdated managed records at their latest version instead of as stored.
        public var migrate: Bool
        /// Replace a value the destination already holds under a key (restored if the transfer
        /// fails); without it such a key is refused and nothing is written.
        public var overwrite: Bool
        /// How long a move waits for another move from the same source to finish (see
        /// ``run(_:options:)``) before it gives up with
        /// ``KeepsakeError/Code/lockTimeout``, having copied nothing.
        public var lockTimeout: Duration
        /// Let records leave a store that encrypts them (``StoreCapabilities/encryptedAtRest``:
        /// the keyring, an encrypted file store, a sealed table, a secret manager) for one that
        /// does not (a defaults suite, a plain table). Without it such a transfer is refused
        /// before anything is read or written, naming both stores.
        public var allowPlaintext: Bool

        /// Options; by default a copy of the records as stored, refusing keys the destination
        /// holds and any transfer from secure to plain storage, and a move waits up to a minute
        /// for another move from its source.
        public init(
            move: Bool = false, migrate: Bool = false, overwrite: Bool = false, lockTimeout: Duration = .seconds(60),
            allowPlaintext: Bool = false
        ) {
            self.move = move
            self.migrate = migrate
            self.overwrite = overwrite
            self.lockTimeout = lockTimeout
            self.allowPlaintext = allowPlaintext
        }
    }

    /// The points between a transfer's steps, reported to a checkpoint.
    public enum Step: String, Sendable, CaseIterable {
        /// Every record was read and checked; nothing was written yet.
        case prepared
        /// Every record was written to the destination; none verified or removed yet.
        case written
        /// Every record was read back from the destination and matched.
        case verified
        /// Every record was removed from the source (a move only).
        case removed
    }

    /// Where the records come from.
    public let source: any RecordStore
    /// Where they go.
    public let destination: any RecordStore
    /// The chains records are matched to (and migrated along, with ``Options/migrate``).
    public let chains: [AnyModelChain]
    /// What migration steps get.
    public let context: MigrationContext
    /// Key → model name, for records whose key is not a default key of their model.
    public let keyModels: [String: String]
    /// Key pattern → model name, as ``Migrator/patternModels``.
    public let patternModels: [KeyPattern: String]

    /// A transfer from `source` to `destination`; nothing is read until ``plan(_:options:)`` or
    /// ``run(_:options:)``.
    ///
    /// - Parameters:
    ///   - source: Where the records are.
    ///   - destination: Where they go; another store than `source`.
    ///   - chains: The chains records are matched to; with none, every record is unmanaged.
    ///   - context: What migration steps get (``Options/migrate``).
    ///   - keyModels: Key → model name, for records whose key is not a default key of their model.
    ///   - patternModels: Key pattern → model name (``Migrator/patternModels``).
    /// - Precondition: Chain names are unique.
    public init(
        from source: any RecordStore, to destination: any RecordStore, chains: [AnyModelChain] = [],
        context: MigrationContext = .live(), keyModels: [String: String] = [:],
        patternModels: [KeyPattern: String] = [:]
    ) {
        self.source = source
        self.destination = destination
        self.chains = chains
        self.context = context
        self.keyModels = keyModels
        self.patternModels = patternModels
        precondition(Set(chains.map(\.name)).count == chains.count, "StoreTransfer: two chains share a name")
    }

    /// What ``run(_:options:)`` would do, found by doing its first step: every
    /// record is read, migrated in memory if asked, and checked against the destination.
    ///
    /// - Returns: ``TransferReport/Outcome/planned`` with every record ``TransferRecord/State/planned``,
    ///   or ``TransferReport/Outcome/refused`` with the records that stop the transfer.
    /// - Throws: ``KeepsakeError/Code/invalidArgument`` when the source and destination are one
    ///   store; the source's own error when it cannot be listed (``Selection/managed`` and
    ///   ``Selection/all``) or read.
    /// - Important: Nothing is written to either store, whether this returns or throws.
    public func plan(_ selection: Selection, options: Options = Options()) throws(KeepsakeError) -> TransferReport {
        let prepared = try prepare(selection, options: options)
        if let refused = refusal(prepared, options) { return refused }
        return report(prepared, options, .planned) { prepared[$0].skipped ? .failed : .planned }
    }

    /// Copies (or, with ``Options/move``, moves) the selected records: see ``StoreTransfer``
    /// for the steps.
    ///
    /// Moves from one source are exclusive: a move holds an advisory lock on its source for its
    /// whole run (a `flock` on a lock file named by the source store's identity, in
    /// the user's private lock directory: `$XDG_RUNTIME_DIR/keepsake/`, else
    /// `~/.cache/keepsake/locks/`, else `/tmp/keepsake-<uid>/`), which
    /// every Keepsake process of the same user honours. A second move from the same source, in
    /// this process or another, waits for it (up to ``Options/lockTimeout``) and then reads the
    /// source as it is then, so a record the first one moved is no longer there to be copied
    /// twice. A copy (no ``Options/move``) takes no lock.
    ///
    /// When removing a record from the source finds it changed or gone (another writer that is
    /// not a Keepsake move), the source is read again and the record reported as it is: gone
    /// from the source → ``TransferRecord/State/moved`` with a ``TransferRecord/note`` saying the
    /// destination holds it; changed → ``TransferRecord/State/inBoth``, naming both stores.
    ///
    /// - Parameters:
    ///   - selection: Which records.
    ///   - options: Move, migrate, overwrite.
    /// - Returns: The per-record report. Failures of records are reported there, not thrown:
    ///   ``TransferReport/succeeded`` says whether everything was done.
    /// - Throws: Only before anything is written: ``KeepsakeError/Code/invalidArgument`` when
    ///   the source and destination are one store, the source's own error when it cannot
    ///   be listed or read, and for a move ``KeepsakeError/Code/lockTimeout`` when another move
    ///   from the same source held the lock for longer than ``Options/lockTimeout`` (or the
    ///   lock's own `.permissionDenied` / `.io` error when its file cannot be made).
    /// - Important: Whether this returns or throws, every record is in the source, the
    ///   destination or both. When it throws, or returns anything but
    ///   ``TransferReport/Outcome/completed`` or ``TransferReport/Outcome/incomplete``, the
    ///   source was not touched and the destination holds exactly what it held before.
    public func run(_ selection: Selection, options: Options = Options()) throws(KeepsakeError) -> TransferReport {
        try run(selection, options: options, checkpoint: nil)
    }

    /// ``run(_:options:)``, calling `checkpoint` after each step that completed: for tests (and
    /// the test build of `migrate copy`), which stop a process between two steps. Not public.
    package func run(
        _ selection: Selection, options: Options, checkpoint: (@Sendable (Step) -> Void)?
    ) throws(KeepsakeError) -> TransferReport {
        // A move holds its source's lock from before the first read to after the last removal.
        let moveLock = options.move ? try Self.lockSource(source, timeout: options.lockTimeout) : nil
        defer { moveLock?.unlock() }
        let lastMove = moveLock.flatMap(LastMove.init(lock:))
        var prepared = try prepare(selection, options: options, lastMove: lastMove)
        if let refused = refusal(prepared, options) { return refused }
        checkpoint?(.prepared)

        // Step 2: write, each only over what was read from the destination in step 1.
        let toWrite = prepared.indices.filter { !prepared[$0].alreadyPresent && !prepared[$0].skipped }
        var written: [Int: Data?] = [:]  // record index → what the destination is believed to hold now
        var forced = Set<Int>()  // keys restored whatever they hold (their read-back differed)
        var failed = false
        if !toWrite.isEmpty {
            let writes = toWrite.map {
                StoreWrite(
                    key: prepared[$0].key, value: prepared[$0].bytes,
                    expectation: .unchanged(prepared[$0].previous))
            }
            do throws(KeepsakeError) {
                let results = try destination.commit(writes)
                for (index, result) in zip(toWrite, results) {
                    switch result {
                    case .applied:
                        written[index] = prepared[index].bytes
                    case .conflict:
                        prepared[index].error = KeepsakeError(
                            .conflict, store: destination.uri, key: prepared[index].key,
                            "the destination's value changed while the record was being copied; it was left as the other writer stored it"
                        )
                        failed = true
                    case let .failed(error):
                        prepared[index].error = error.located(store: destination.uri, key: prepared[index].key)
                        failed = true
                    }
                }
            } catch  where Self.refusedBeforeWriting(error) {
                // The destination refused the batch (a role that may not create the table, a
                // locked keyring): nothing was written, so there is nothing to restore.
                for index in toWrite {
                    prepared[index].error = error.located(store: destination.uri, key: prepared[index].key)
                }
                return report(prepared, options, .refused) { prepared[$0].error != nil ? .failed : .notCopied }
            } catch {
                // Nothing should have been written; a store that cannot be sure (a keyring call
                // that timed out may still be applied) is covered by restoring every key that
                // now holds the new bytes.
                for index in toWrite {
                    prepared[index].error = error.located(store: destination.uri, key: prepared[index].key)
                    written[index] = prepared[index].bytes
                }
                failed = true
            }
        }

        // Step 3: read every record back.
        if !failed {
            checkpoint?(.written)
            let readBacks = read(prepared.map(\.key), from: destination)
            for index in prepared.indices where !prepared[index].skipped {
                do throws(KeepsakeError) {
                    let readBack = try readBacks[index].get()
                    if readBack != prepared[index].bytes {
                        // What is there is not what was written: restore it whatever it is.
                        if written[index] != nil {
                            written[index] = .some(nil)
                            forced.insert(index)
                        }
                        prepared[index].error = KeepsakeError(
                            .verificationFailed, store: destination.uri,
                            key: prepared[index].key,
                            readBack == nil
                                ? "the record was written but reads back as absent"
                                : "the record was written but reads back as other bytes")
                        failed = true
                    }
                } catch {
                    prepared[index].error = error.located(store: destination.uri, key: prepared[index].key)
                    failed = true
                }
            }
        }
        if failed { return revert(prepared, written, forced: forced, options) }
        checkpoint?(.verified)

        let skipped = prepared.contains(where: \.skipped)
        guard options.move else {
            return report(prepared, options, skipped ? .partial : .completed) {
                prepared[$0].skipped ? .failed : .copied
            }
        }

        // Step 4: remove from the source, each only if it still holds what was copied. A
        // skipped record stays in the source.
        let moving = prepared.indices.filter { !prepared[$0].skipped }
        let removes = moving.map {
            StoreWrite(key: prepared[$0].key, value: nil, expectation: .unchanged(prepared[$0].sourceBytes))
        }
        var states: [TransferRecord.State] = prepared.map { $0.skipped ? .failed : .moved }
        do throws(KeepsakeError) {
            let results = try removes.isEmpty ? [] : source.commit(removes)
            for (index, result) in zip(moving, results) {
                switch result {
                case .applied: continue
                case .conflict:
                    // Another writer got there first: say what the source holds now.
                    states[index] = recheckRemoval(&prepared[index])
                case let .failed(error):
                    states[index] = .inBoth
                    prepared[index].error = removalError(error, key: prepared[index].key)
                }
            }
        } catch {
            for index in moving {
                states[index] = .inBoth
                prepared[index].error = removalError(error, key: prepared[index].key)
            }
        }
        if let moveLock {
            // For the next move from this source: where these records went.
            LastMove(
                destination: destination.uri, finished: Date(),
                keys: prepared.indices.filter { states[$0] == .moved }.map { prepared[$0].key }
            ).leave(in: moveLock)
        }
        let complete = !states.contains(.inBoth)
        if complete { checkpoint?(.removed) }
        return report(prepared, options, !complete ? .incomplete : skipped ? .partial : .completed) { states[$0] }
    }

    // MARK: Steps

    /// One record on its way.
    private struct Prepared {
        var key: String
        var evaluation: TransferRecord
        /// What the source holds.
        var sourceBytes: Data?
        /// What goes to the destination: the source's bytes, or the migrated record.
        var bytes: Data?
        /// What the destination held before.
        var previous: Data?
        var alreadyPresent = false
        var error: KeepsakeError?
        /// A record of the source that cannot be read (or, with `migrate`, migrated): reported
        /// failed and left where it is, while the others are transferred.
        var skipped = false
        /// What happened to the record beside the transfer (another writer removed it).
        var note: String?
        /// Refused because the destination holds another value.
        var exists = false
    }

    /// `selection` in words, for the plaintext refusal: which records would be exposed.
    private func describe(_ selection: Selection) -> String {
        switch selection {
        case .managed: return "every managed record"
        case .all: return "every record"
        case let .keys(keys):
            let shown = keys.prefix(5).map { "'\($0)'" }.joined(separator: ", ")
            return keys.count > 5 ? "the records \(shown) and \(keys.count - 5) more" : "the records \(shown)"
        }
    }

    /// Step 1: reads, evaluates and checks every selected record; writes nothing.
    private func prepare(
        _ selection: Selection, options: Options, lastMove: LastMove? = nil
    ) throws(KeepsakeError) -> [Prepared] {
        guard source.identity != destination.identity else {
            throw KeepsakeError(
                .invalidArgument, store: source.uri,
                """
                the source and the destination are the same store (\(destination.uri)); a move would remove \
                what it copied, so nothing was done
                """)
        }
        if !options.allowPlaintext, source.capabilities.contains(.encryptedAtRest),
            !destination.capabilities.contains(.encryptedAtRest)
        {
            throw KeepsakeError(
                .invalidArgument, store: source.uri,
                """
                this store keeps its records encrypted and \(destination.uri) does not: \(describe(selection)) would \
                be written there in plain text; nothing was read or written (allow it with --allow-plaintext, \
                or StoreTransfer.Options.allowPlaintext)
                """)
        }
        let entries: [(key: String, result: Result<Data, KeepsakeError>?)]
        switch selection {
        case .managed, .all:
            entries = try source.allRecords().map { ($0.key, $0.result) }
        case let .keys(keys):
            var seen = Set<ExactString>()
            let unique = keys.filter { seen.insert(ExactString($0)).inserted }
            var list: [(key: String, result: Result<Data, KeepsakeError>?)] = []
            for (key, result) in zip(unique, read(unique, from: source)) {
                switch result {
                case let .success(data):
                    list.append((key, data.map { .success($0) }))
                case let .failure(error) where [.invalidArgument, .corruptRecord].contains(error.code):
                    list.append((key, .failure(error)))  // this key's problem, not the store's
                case let .failure(error):
                    throw error
                }
            }
            entries = list
        }
        let migrator = Migrator(
            store: source, chains: chains, context: context, keyModels: keyModels, patternModels: patternModels)
        var prepared: [Prepared] = []
        for entry in entries {
            guard let result = entry.result else {
                prepared.append(
                    Prepared(
                        key: entry.key, evaluation: TransferRecord(key: entry.key, state: .failed),
                        error: KeepsakeError(
                            .notFound, store: source.uri, key: entry.key,
                            "the source holds no record under this key"
                                + (lastMove.flatMap { $0.whereMoved(entry.key) } ?? ""))))
                continue
            }
            let bytes: Data
            switch result {
            case let .success(read): bytes = read
            case let .failure(error):
                let evaluation = migrator.unreadable(key: entry.key, error)
                prepared.append(
                    Prepared(
                        key: entry.key,
                        evaluation: TransferRecord(key: entry.key, schema: evaluation.report.schema, state: .failed),
                        error: error.located(store: source.uri, key: nil), skipped: true))
                continue
            }
            let evaluation = migrator.evaluate(key: entry.key, bytes: bytes, encodeLatest: options.migrate)
            let report = evaluation.report
            if report.state == .unmanaged, selection == .managed { continue }
            var item = Prepared(
                key: entry.key,
                evaluation: TransferRecord(
                    key: entry.key, schema: report.state == .unmanaged ? nil : report.schema,
                    storedVersion: report.storedVersion, writtenVersion: report.storedVersion,
                    unmanaged: report.state == .unmanaged, state: .failed),
                sourceBytes: bytes, bytes: bytes)
            if options.migrate, report.state == .outdated || report.state == .unreadable {
                if let latest = evaluation.encoded {
                    item.bytes = latest
                    item.evaluation.writtenVersion = report.latestVersion
                    item.evaluation.migrated = true
                } else {
                    item.error =
                        report.error
                        ?? KeepsakeError(
                            .migrationFailed, store: source.uri, key: entry.key,
                            "the record could not be migrated")
                    item.skipped = true
                }
            }
            prepared.append(item)
        }
        // The destination: can it hold each value, and what does it hold now?
        let ready = prepared.indices.filter {
            prepared[$0].error == nil && !prepared[$0].skipped && prepared[$0].bytes != nil
        }
        let held = read(ready.map { prepared[$0].key }, from: destination)
        for (index, current) in zip(ready, held) {
            let key = prepared[index].key
            guard let bytes = prepared[index].bytes else { continue }
            do throws(KeepsakeError) {
                if let constrained = destination as? any ValueConstrainedStore {
                    try constrained.checkCanHold(bytes, forKey: key)
                }
                let previous = try current.get()
                prepared[index].previous = previous
                if previous == bytes {
                    prepared[index].alreadyPresent = true
                } else if let previous {
                    if let held = VersionClaim.highest(in: previous),
                        held > VersionClaim.highest(in: bytes) ?? -1
                    {
                        // Overwrite or not, a record of a newer version is never replaced by an
                        // older one.
                        prepared[index].exists = true
                        prepared[index].error = KeepsakeError(
                            .newerVersion, store: destination.uri, key: key,
                            """
                            the destination holds a record of version \(VersionClaim.describe(held)), newer than the one \
                            copied (\(copiedVersion(bytes, prepared[index].evaluation))); it was \
                            left as it is
                            """)
                    } else if options.overwrite {
                        prepared[index].evaluation.replaced = true
                    } else {
                        prepared[index].exists = true
                        prepared[index].error = KeepsakeError(
                            .conflict, store: destination.uri, key: key,
                            "the destination already holds another value under this key; it was left as it is (Options.overwrite replaces it)"
                        )
                    }
                }
            } catch {
                prepared[index].error = error.located(store: destination.uri, key: key)
            }
        }
        return prepared
    }

    /// Takes the lock every move from `store` holds (see ``run(_:options:)``): named by
    /// the store's ``RecordStore/identity``, so that every path to one store takes one lock.
    ///
    /// - Throws: ``KeepsakeError/Code/lockTimeout`` after `timeout`; the lock directory's or
    ///   file's error when they cannot be made.
    static func lockSource(_ store: any RecordStore, timeout: Duration) throws(KeepsakeError) -> StoreLock {
        let uri = store.uri
        let directory = try Syscall.userLockDirectory(environment: ProcessInfo.processInfo.environment)
        let path = directory + "/move-" + Self.identityHash(store.identity) + ".lock"
        let lock: StoreLock?
        do throws(SystemFailure) {
            lock = try StoreLock.acquire(path, timeout: timeout)
        } catch {
            throw error.error(store: uri, "cannot open the lock file \(path) that moves from this store share")
        }
        guard let lock else {
            throw KeepsakeError(
                .lockTimeout, store: uri,
                """
                another move from this store held its lock (\(path)) for more than \(timeout); nothing was \
                copied or removed
                """)
        }
        return lock
    }

    /// 32 hex digits naming `identity` (two FNV-1a 64-bit hashes): a lock file name that
    /// holds nothing of the store's path or name.
    static func identityHash(_ identity: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in identity.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte ^ 0x5a)) &* 0x0000_0100_0000_01b3
        }
        return [first, second].map { value in
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// What `store` holds under each of `keys`, in order: an invalid key, or a key the store
    /// cannot read, is that key's error.
    ///
    /// Many keys are read with one listing (a defaults suite parses its document once, the
    /// keyring answers one search) when every record in it could be read; otherwise, and for a
    /// few keys, each key is read on its own, so that an unreadable record is its own error and
    /// never taken for an absent one.
    private func read(_ keys: [String], from store: any RecordStore) -> [Result<Data?, KeepsakeError>] {
        if keys.count > 8 {
            do throws(KeepsakeError) {
                let records = try store.allRecords()
                var byKey: [ExactString: Data] = [:]
                byKey.reserveCapacity(records.count)
                var complete = true
                for record in records {
                    guard case let .success(data) = record.result else {
                        complete = false
                        break
                    }
                    byKey[ExactString(record.key)] = data
                }
                if complete {
                    return keys.map { key in
                        do throws(KeepsakeError) {
                            try store.validateKey(key)
                            return .success(byKey[ExactString(key)])
                        } catch {
                            return .failure(error)
                        }
                    }
                }
            } catch {
                // The listing failed as a whole: the reads one by one below say why, key by key.
            }
        }
        return keys.map { key in
            do throws(KeepsakeError) {
                return .success(try store.data(forKey: key))
            } catch {
                return .failure(error)
            }
        }
    }

    /// The report that stops a transfer after step 1, or `nil` when every record is ready.
    /// The version of `bytes` for a message: the one they claim, else the one the chain read
    /// them as (a record stored bare claims none).
    private func copiedVersion(_ bytes: Data, _ evaluation: TransferRecord) -> String {
        if let claimed = VersionClaim.highest(in: bytes) { return VersionClaim.describe(claimed) }
        if let version = evaluation.writtenVersion { return "\(version), stored without a version" }
        return "no version"
    }

    /// Whether a batch that threw `error` was refused before anything was written: codes a store
    /// gives only for a write it did not start. Any other (`timeout`, `unavailable`, `io`) may
    /// come from a write whose fate is unknown, and the keys are restored as if written.
    private static func refusedBeforeWriting(_ error: KeepsakeError) -> Bool {
        [.permissionDenied, .invalidArgument, .valueRefused, .locked, .lockTimeout].contains(error.code)
    }

    private func refusal(_ prepared: [Prepared], _ options: Options) -> TransferReport? {
        guard prepared.contains(where: { $0.error != nil && !$0.skipped }) else { return nil }
        return report(prepared, options, .refused) { index in
            prepared[index].exists ? .exists : prepared[index].error != nil ? .failed : .notCopied
        }
    }

    /// After a failed write or read-back: gives every written key its previous bytes back, each
    /// only if it still holds what this transfer wrote (a key whose read-back differed is
    /// restored whatever it holds: what is there came from this transfer's write).
    private func revert(
        _ prepared: [Prepared], _ written: [Int: Data?], forced: Set<Int>, _ options: Options
    ) -> TransferReport {
        var prepared = prepared
        var states: [TransferRecord.State] = prepared.map { $0.error != nil ? .failed : .notCopied }
        let indices = written.keys.sorted()
        var notRestored: [Int: KeepsakeError] = [:]
        if !indices.isEmpty {
            let writes = indices.map { index in
                StoreWrite(
                    key: prepared[index].key, value: prepared[index].previous,
                    expectation: forced.contains(index) ? .anything : .unchanged(written[index] ?? nil))
            }
            do throws(KeepsakeError) {
                let results = try destination.commit(writes)
                for (index, result) in zip(indices, results) {
                    switch result {
                    case .applied:
                        continue
                    case .conflict:
                        // The key does not hold what this transfer left there: a write that never
                        // landed (then it holds its previous bytes), or another writer.
                        do throws(KeepsakeError) {
                            if try destination.data(forKey: prepared[index].key) == prepared[index].previous {
                                continue
                            }
                            notRestored[index] = KeepsakeError(
                                .conflict, store: destination.uri, key: prepared[index].key,
                                "the destination's value was changed by another writer during the transfer and was left as it is"
                            )
                        } catch {
                            notRestored[index] = error
                        }
                    case let .failed(error):
                        notRestored[index] = error
                    }
                }
            } catch {
                for index in indices { notRestored[index] = error }
            }
        }
        for index in indices {
            guard let error = notRestored[index] else {
                if states[index] == .notCopied { states[index] = .reverted }
                continue
            }
            prepared[index].error = restoreError(error, key: prepared[index].key, prepared[index].error)
            // Still the copy in the destination: the record is in both stores. Other bytes there
            // (a read-back that differed, another writer): the record is in the source only.
            states[index] = (written[index] ?? nil) == prepared[index].bytes ? .inBoth : .failed
        }
        return report(prepared, options, notRestored.isEmpty ? .reverted : .incomplete) { states[$0] }
    }

    private func restoreError(_ error: KeepsakeError, key: String, _ earlier: KeepsakeError?) -> KeepsakeError {
        var located = error.located(store: destination.uri, key: key)
        located.message =
            "the destination could not be restored after the transfer failed; "
            + "the source holds the record as it was (\(located.message))"
            + (earlier.map { "; the transfer failed first because: \($0.message)" } ?? "")
        return located
    }

    /// After a removal from the source found the record not as it was copied: reads the
    /// source again and returns where the record is, with the note or error that says so. Gone
    /// → moved (the destination holds it); the copied bytes still there (the conflict was
    /// another writer's write of the same bytes) → removed again, once; other bytes → in both.
    private func recheckRemoval(_ item: inout Prepared) -> TransferRecord.State {
        let key = item.key
        for attempt in 1...2 {
            let now: Data?
            do throws(KeepsakeError) {
                now = try source.data(forKey: key)
            } catch {
                item.error = KeepsakeError(
                    error.code, store: source.uri, key: key,
                    """
                    the source's record changed after it was copied, so it was not removed, and reading it again                     failed (\(error.message)); \(destination.uri) holds the copy, and \(source.uri) may still hold it
                    """, cause: error.cause)
                return .inBoth
            }
            guard let now else {
                item.note =
                    "another writer removed the record from \(source.uri) after it was copied (moved or deleted it); "
                    + "\(destination.uri) holds it"
                return .moved
            }
            guard now == item.sourceBytes, attempt == 1 else {
                item.error = KeepsakeError(
                    .conflict, store: source.uri, key: key,
                    """
                    the source's record was changed by another writer after it was copied, so it was not removed:                     \(source.uri) holds the changed record and \(destination.uri) the copied one
                    """)
                return .inBoth
            }
            do throws(KeepsakeError) {
                let results = try source.commit([StoreWrite(key: key, value: nil, expectation: .unchanged(now))])
                switch results.first {
                case .applied?: return .moved
                case .conflict?, nil: continue  // changed again: read once more and say what is there
                case let .failed(error)?:
                    item.error = removalError(error, key: key)
                    return .inBoth
                }
            } catch {
                item.error = removalError(error, key: key)
                return .inBoth
            }
        }
        return .inBoth  // not reached: the second pass always returns
    }

    private func removalError(_ error: KeepsakeError, key: String) -> KeepsakeError {
        var located = error.located(store: source.uri, key: key)
        located.message =
            "the record was copied and verified, but could not be removed from the source; "
            + "both stores hold it (\(located.message))"
        return located
    }

    private func report(
        _ prepared: [Prepared], _ options: Options, _ outcome: TransferReport.Outcome,
        state: (Int) -> TransferRecord.State
    ) -> TransferReport {
        let records = prepared.indices.map { index in
            var record = prepared[index].evaluation
            record.state = state(index)
            record.error = prepared[index].error
            record.alreadyPresent = prepared[index].alreadyPresent
            record.note = prepared[index].note
            return record
        }
        return TransferReport(
            source: source.uri, destination: destination.uri, move: options.move,
            outcome: outcome, records: records)
    }
}

/// What the last move from a source left in its lock file for the next one: where its records
/// went, so that a move that waited for it can say where a named record is now.
private struct LastMove: Codable {
    var destination: String
    var finished: Date
    var keys: [String]
    /// `keys`, to look one up in constant time.
    private var keySet: Set<ExactString> = []

    private enum CodingKeys: String, CodingKey { case destination, finished, keys }

    init(destination: String, finished: Date, keys: [String]) {
        self.destination = destination
        self.finished = finished
        self.keys = keys
    }

    /// The note in `lock`'s file, or `nil` when there is none or it cannot be read (it is a
    /// hint for messages, never a record: a damaged one is left unused, and logged).
    init?(lock: StoreLock) {
        do {
            let bytes = try lock.contents(limit: LastMove.limit)
            guard !bytes.isEmpty else { return nil }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            self = try decoder.decode(LastMove.self, from: Data(bytes))
            keySet = Set(keys.map(ExactString.init))
        } catch {
            Log.engine.debug(
                "the last move's note in a lock file is not readable; not used", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The most a note holds: a move of more keys than fit leaves none.
    static let limit = 1 << 20

    /// Replaces the note in `lock`'s file with this one (when it moved anything).
    func leave(in lock: StoreLock) {
        guard !keys.isEmpty else { return }
        do {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let bytes = [UInt8](try encoder.encode(self))
            try lock.replaceContents(bytes.count < LastMove.limit ? bytes : [])
        } catch {
            Log.engine.debug("could not leave a note in a move's lock file", metadata: ["error": "\(error)"])
        }
    }

    /// `; the last move from this store, finished at …, moved it to …` when it moved `key`.
    func whereMoved(_ key: String) -> String? {
        guard keySet.contains(ExactString(key)) else { return nil }
        return
            "; the last move from this store, finished at \(finished.formatted(.iso8601)), moved it to \(destination)"
    }
}

/// A store that can hold only some byte values: a defaults suite holds JSON values, the keyring
/// holds UTF-8 text. ``StoreTransfer`` asks it before writing anything, so that a value it
/// cannot hold is refused with a typed error instead of failing midway or being changed.
public protocol ValueConstrainedStore: RecordStore {
    /// Throws when `value` cannot be stored under `key` and read back as exactly these bytes.
    ///
    /// - Throws: ``KeepsakeError/Code/invalidArgument`` naming this store and `key`, saying what
    ///   the store can hold.
    func checkCanHold(_ value: Data, forKey key: String) throws(KeepsakeError)
}
