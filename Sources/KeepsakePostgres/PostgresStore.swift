#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium
import Logging
internal import PostgresNIO

/// A `RecordStore` on one PostgreSQL table, shared by every instance of a server app
/// (the KeepsakePostgres article).
///
/// The table — `keepsake_records` unless configured — holds one row per record:
///
/// ```sql
/// CREATE TABLE keepsake_records (
///     key        text        PRIMARY KEY,   -- the record key, compared by bytes (COLLATE "C" order)
///     record     bytea       NOT NULL,      -- the record's bytes, or its sealed value
///     version    int8        NOT NULL,      -- the row version: 1, then +1 per write
///     updated_at timestamptz NOT NULL DEFAULT now()
/// );
/// CREATE INDEX keepsake_keys_… ON keepsake_records ((key COLLATE "C"));  -- key patterns, in byte order
/// ```
///
/// It is created by the first write when absent; until then the store reads as empty.
///
/// - Every write is a compare-and-swap: a write that expects bytes (what `Vault.update`, a
///   migration's write-back and `Migrator` send) locks the rows it reads
///   (`SELECT … FOR UPDATE`) and updates them only at the row version it read; an insert that
///   expects nothing is `INSERT … ON CONFLICT DO NOTHING`. A batch — a copy, each block of
///   2,048 records of a `migrate run` (`StoreCapabilities.commitsRunInBlocks`) — is one
///   transaction with one statement over `unnest` arrays, whatever its size: every write of it
///   is applied, or none.
/// - Opening never needs the server: the first call connects (``ready(timeout:)`` asks whether
///   it answers). So an app boots, and serves what does not need its database, while the
///   server is down.
/// - Every call has a deadline (``PostgresConfiguration/timeout``, 30 s by default) and ends
///   within it whatever the server does: the server cancels a statement that runs longer, and
///   the call throws `KeepsakeError.Code.timeout`.
/// - Connecting honours ``PostgresConfiguration/connectTimeout`` (5 s by default): a server that
///   refuses or does not answer is `KeepsakeError.Code.unavailable` once it has passed. A
///   refused login is `KeepsakeError.Code.permissionDenied` at once, with what the server said,
///   and never tried again.
/// - A call whose connection was lost before its `COMMIT` was sent (nothing was applied) is
///   retried on a new connection within the deadline: a server restart costs a call a
///   reconnection. When the connection is lost after `COMMIT` was sent, the store asks the
///   server what became of the transaction (`pg_xact_status`) and reports that; only when the
///   server cannot say within the deadline is the write `unavailable`, "may have been applied".
/// - `Vault.update` holds the row while its change runs (`exclusiveUpdate(forKey:_:)`):
///   writers of one record take turns and none sees a conflict.
/// - Values can be sealed with a master key (``init(configuration:masterKey:requireExisting:)``):
///   XChaCha20-Poly1305 bound to the table and the record key, so that a database reader or a
///   backup sees no secret (docs/FORMAT.md).
/// - A key is at most ``maximumKeyLength`` bytes of UTF-8 (the primary key's index holds the
///   whole key, and a btree index entry must fit in a third of a page); a longer one is refused
///   before anything is sent, as `KeepsakeError.Code.invalidArgument`.
/// - The store is a swift-service-lifecycle `Service`: put it in the app's `ServiceGroup`, and a
///   graceful shutdown lets calls in flight end and closes its connections and watches.
/// - Each call is measured through swift-metrics and traced through swift-distributed-tracing,
///   labelled by scheme, operation and outcome (the KeepsakePostgres article lists them).
///
/// postgres-nio is asynchronous. The `async` calls (`AsyncRecordStore`, which `Vault`'s
/// `async` methods use) run on the caller's task; the synchronous `RecordStore` calls run
/// their work on an event loop thread of their own — never on Swift's cooperative pool — while
/// the calling thread waits.
///
/// ```swift
/// let store = try PostgresStore(
///     configuration: PostgresConfiguration(parsing: "postgresql://app@db.internal/myapp?table=app_records"),
///     masterKey: .keyFile(path: "/run/secrets/records.key"))
/// let vault = Vault(store: store)
/// let settings = try await vault.load(TenantSettings.chain, forKey: "tenant-42")
/// ```
public final class PostgresStore: RecordStore {
    /// Where the store is and how it connects.
    public let configuration: PostgresConfiguration
    /// Whether values are sealed with a master key.
    public var isSealed: Bool { sealer?.primary != nil }

    /// The longest key the store takes, in bytes of UTF-8: 2,048. The table's primary-key index
    /// holds each key whole, and PostgreSQL refuses an index entry larger than about a third of a
    /// page (2,704 bytes with the default 8 kB pages); the limit leaves room below that.
    public static let maximumKeyLength = 2048

    /// `validateKey(_:)`, and the key's length within ``maximumKeyLength``.
    func checkKey(_ key: String) throws(KeepsakeError) {
        try validateKey(key)
        let length = key.utf8.count
        guard length <= Self.maximumKeyLength else {
            throw KeepsakeError(
                .invalidArgument, store: uri, key: String(key.prefix(64)) + "…",
                "a key of \(length) bytes is longer than this store takes: at most \(Self.maximumKeyLength) bytes of UTF-8 (the table's primary-key index holds each key whole)"
            )
        }
    }

    let sealer: Sealer?
    let pool: ConnectionPool
    let instruments: StoreInstruments
    let watches = WatchRegistry()
    let logger = Logger(label: "keepsake.postgres")
    /// The logger of the store's read queries (they run in closures that do not capture the store).
    static let queryLogger = Logger(label: "keepsake.postgres")

    /// Opens the store. Nothing is asked of the server unless `requireExisting` is set: the
    /// first call connects.
    ///
    /// - Parameters:
    ///   - configuration: The server, database, table, credentials and deadline.
    ///   - masterKey: Seals every value with this master key, the key set's primary key (a key
    ///     file, a provider such as ``EnvironmentMasterKey`` or the keyring); `nil` stores values
    ///     as given. The configuration's ``PostgresConfiguration/previousSealingKeys`` open
    ///     values sealed before a rotation; its ``PostgresConfiguration/readsPlainValues`` lets
    ///     plain values read while a table is sealed. A table's seal (docs/FORMAT.md §11.2) keeps
    ///     every writer to the keys it records.
    ///   - requireExisting: Whether the table must already exist: then opening asks the server
    ///     (as `migrate` does, so that a misspelt table is not read as empty).
    /// - Throws: `KeepsakeError.Code.invalidArgument` for a passphrase master key (this store
    ///   takes a 32-byte key) or TLS settings that cannot be loaded, what the master key source
    ///   throws; with `requireExisting`, what a call throws
    ///   (`KeepsakeError.Code.unavailable`, `KeepsakeError.Code.permissionDenied`, …) and
    ///   `KeepsakeError.Code.notFound` when the table does not exist.
    /// - Important: Opening creates no table and writes no record.
    public init(
        configuration: PostgresConfiguration, masterKey: MasterKeySource? = nil, requireExisting: Bool = false
    ) throws(KeepsakeError) {
        self.configuration = configuration
        let uri = configuration.uri
        self.uri = uri  // made once: a call names its store in every error and log
        /// The source's keys, the one that writes first (a key file may name several).
        func load(_ source: MasterKeySource) throws(KeepsakeError) -> [SecureBytes] {
            switch source {
            case let .keyFile(path):
                return try KeyFile(path: path).masterKeys()
            case let .provider(provider):
                return [
                    try provider.masterKey(
                        createIfAbsent: false, storeID: Sealer.storeID(forIdentity: configuration.identity))
                ]
            case .passphrase:
                throw KeepsakeError(
                    .invalidArgument, store: uri,
                    """
                    a PostgreSQL store is sealed with a 32-byte master key: give a key file, an environment \
                    variable key (EnvironmentMasterKey) or a keyring key, not a passphrase
                    """)
            }
        }
        if masterKey != nil || !configuration.previousSealingKeys.isEmpty {
            var primary: SecureBytes?
            var previous: [SecureBytes] = []
            if let masterKey {
                let keys = try load(masterKey)
                primary = keys.first
                previous = Array(keys.dropFirst())
            }
            for source in configuration.previousSealingKeys { previous += try load(source) }
            sealer = try Sealer(
                primary: primary, previous: previous, readsPlain: configuration.readsPlainValues,
                table: configuration.table, store: uri)
        } else {
            sealer = nil
        }
        pool = ConnectionPool(
            configuration: try Self.connectionConfiguration(
                configuration, applicationName: configuration.applicationName),
            maximum: configuration.maximumConnections, logger: logger)
        instruments = StoreInstruments(
            scheme: "postgresql", database: configuration.database, table: configuration.table)
        if requireExisting {
            let exists = try perform("open the store", operation: .open) { connection, _ in
                let table = configuration.table
                let rows = try await connection.collect(
                    "SELECT to_regclass(\(table)) IS NOT NULL", logger: PostgresStore.queryLogger)
                return try rows.first?.decode(Bool.self) ?? false
            }
            if !exists {
                throw KeepsakeError(
                    .notFound, store: uri,
                    "the table \(configuration.table) does not exist in database \(configuration.database)")
            }
        }
    }

    deinit { pool.shutdown() }

    /// The store's URI, without secrets (see ``PostgresConfiguration/uri``).
    public let uri: String

    /// The server, database and table, whichever URI names them.
    public var identity: String { configuration.identity }

    public var capabilities: StoreCapabilities {
        sealer?.primary == nil
            ? [.survivesReinstall, .commitsRunInBlocks] : [.survivesReinstall, .encryptedAtRest, .commitsRunInBlocks]
    }

    /// The server's version (`SHOW server_version`), for `doctor`.
    ///
    /// - Throws: `KeepsakeError` when the server cannot be asked.
    public func serverVersion() throws(KeepsakeError) -> String {
        try perform("read the server version", operation: .ready, Self.versionQuery)
    }

    /// Whether the server answers: connects (or takes a kept connection) and asks for its
    /// version, within `timeout`. For a health check, a readiness probe, or an app that wants to
    /// know at start-up without depending on it.
    ///
    /// - Parameter timeout: How long to try (the store's connect timeout by default).
    /// - Returns: The server's version.
    /// - Throws: `KeepsakeError.Code.unavailable` (cannot be reached), `.permissionDenied`
    ///   (the login was refused: the server's words are in the message), `.timeout`.
    /// - Important: Nothing is written, whether this returns or throws.
    @discardableResult
    public func ready(timeout: Duration? = nil) async throws(KeepsakeError) -> String {
        let window = timeout ?? configuration.connectTimeout
        // The call's deadline leaves a moment past the connect window, so that a server that
        // cannot be reached is reported as such (unavailable), not as a timeout.
        return try await call(
            "reach the server", operation: .ready, deadline: ContinuousClock.now + window + .milliseconds(500),
            connectTimeout: window, Self.versionQuery)
    }

    private static let versionQuery: @Sendable (PostgresConnection, CallSession) async throws -> String = {
        connection, _ in
        let rows = try await connection.collect(
            "SELECT current_setting('server_version')", logger: PostgresStore.queryLogger)
        return try rows.first?.decode(String.self) ?? "unknown"
    }

    // MARK: Reads

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try checkKey(key)
        let stored = try perform("read", key: key, operation: .read, tableMissing: .answer(nil), readWork(key))
        guard let stored else { return nil }
        return try open(stored, forKey: key)
    }

    /// The synchronous `data(forKey:)`, without blocking a thread.
    public func data(forKey key: String) async throws(KeepsakeError) -> Data? {
        try checkKey(key)
        let stored = try await call("read", key: key, operation: .read, tableMissing: .answer(nil), readWork(key))
        guard let stored else { return nil }
        return try open(stored, forKey: key)
    }

    private func readWork(_ key: String) -> @Sendable (PostgresConnection, CallSession) async throws -> Data? {
        let table = configuration.quotedTable
        return { connection, _ in
            let rows = try await connection.collect(
                "SELECT record FROM \(unescaped: table) WHERE key = \(key)", logger: PostgresStore.queryLogger)
            return try rows.first.map { row in Data(try row.decode(ByteBuffer.self).readableBytesView) }
        }
    }

    public func keys() throws(KeepsakeError) -> [String] {
        let table = configuration.quotedTable
        return try perform("list the keys", operation: .list, tableMissing: .answer([])) { connection, _ in
            let rows = try await connection.collect(
                "SELECT key FROM \(unescaped: table) ORDER BY key COLLATE \"C\"", logger: PostgresStore.queryLogger)
            return try rows.map { row in try row.decode(String.self) }
        }
    }

    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        var result: [(key: String, data: Data)] = []
        for entry in try allRecords() {
            switch entry.result {
            case let .success(data): result.append((entry.key, data))
            case let .failure(error): throw error
            }
        }
        return result
    }

    /// Every record, read from the server in key order in one query; a sealed value that does
    /// not open is that record's error.
    public func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        try records(matching: KeyPattern(prefix: ""), after: nil, limit: Int(Int32.max))
    }

    /// One row as read.
    struct StoredRow: Sendable {
        let key: String
        let record: Data
    }

    /// The record text of a stored value: opened when this store seals; as stored when it does
    /// not, unless it is a sealed value, which is `wrongKey` (a plain store cannot read it).
    func open(_ stored: Data, forKey key: String) throws(KeepsakeError) -> Data {
        guard let sealer else {
            if let format = Sealer.sealedFormat(of: stored) {
                throw KeepsakeError(
                    .wrongKey, store: uri, key: key,
                    """
                    the stored value is sealed (KSPG, format \(format)) and this store was opened without a master \
                    key: open the table with its master key (migrate's --master-key, sealkey_file= or sealkey_env= in \
                    the URI, or PostgresStore's masterKey:); nothing was changed
                    """)
            }
            return stored
        }
        return try sealer.open(stored, forKey: key, store: uri)
    }

    // MARK: Writes

    /// Applies `writes` as one transaction: every write whose expectation holds is applied, and
    /// the others are `StoreWriteResult.conflict`.
    ///
    /// - Throws: `KeepsakeError` naming the store when the batch could not be committed
    ///   (`KeepsakeError.Code.unavailable`, `KeepsakeError.Code.timeout`, …).
    /// - Important: If this throws, no write of the batch was applied — except when the
    ///   connection was lost after `COMMIT` was sent and the server could not be asked within
    ///   the deadline what became of it: then the error is `unavailable` and says the batch
    ///   may have been applied (whole or not at all). A batch is never applied in part.
    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try checkKey(write.key) }
        guard !writes.isEmpty else { return [] }
        let batch = try commitBatch(writes)
        let deadline = ContinuousClock.now + configuration.timeout
        while true {
            let attempt = try perform(batch.what, key: batch.key, operation: .commit, deadline: deadline, batch.work)
            if let results = try settle(attempt, batch: batch) { return results }
            if let results = try perform(
                "ask what became of the write", key: batch.key, operation: .commit, deadline: deadline,
                transactionFate(attempt, batch: batch))
            {
                return results
            }
        }
    }

    /// The synchronous `commit(_:)`, without blocking a thread.
    ///
    /// - Important: As the synchronous `commit(_:)`: if this throws, no write was applied, unless
    ///   the error is `unavailable` and says the batch may have been applied.
    public func commit(_ writes: [StoreWrite]) async throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try checkKey(write.key) }
        guard !writes.isEmpty else { return [] }
        let batch = try commitBatch(writes)
        let deadline = ContinuousClock.now + configuration.timeout
        while true {
            let attempt = try await call(batch.what, key: batch.key, operation: .commit, deadline: deadline, batch.work)
            if let results = try settle(attempt, batch: batch) { return results }
            if let results = try await call(
                "ask what became of the write", key: batch.key, operation: .commit, deadline: deadline,
                transactionFate(attempt, batch: batch))
            {
                return results
            }
        }
    }

    /// One batch, ready to be tried.
    struct Batch: Sendable {
        let what: String
        let key: String?
        let work: @Sendable (PostgresConnection, CallSession) async throws -> CommitAttempt
    }

    private func commitBatch(_ writes: [StoreWrite]) throws(KeepsakeError) -> Batch {
        let plan = BatchPlan(writes: writes, sealer: sealer)
        let store = self
        return Batch(
            what: "commit \(writes.count) write\(writes.count == 1 ? "" : "s")",
            key: writes.count == 1 ? writes[0].key : nil
        ) { connection, session in
            do {
                return try await plan.attempt(on: connection, store: store, session: session)
            } catch  where Self.isMissingTable(error) {
                // The first write to this store: nothing was applied (the transaction was rolled back).
                try await store.createTable(on: connection)
                return try await plan.attempt(on: connection, store: store, session: session)
            }
        }
    }

    /// The results of `attempt` when it was answered; `nil` when its fate must be asked.
    private func settle(_ attempt: CommitAttempt, batch: Batch) throws(KeepsakeError) -> [StoreWriteResult]? {
        switch attempt {
        case let .committed(results):
            return results
        case let .uncertain(transaction, results, reason):
            guard transaction != nil else {
                // Nothing was written by the transaction: what it committed does not matter.
                return results
            }
            instruments.uncertainCommit()
            _ = reason
            return nil
        }
    }

    /// Asks the server what became of an unanswered `COMMIT`: the results when it committed,
    /// `nil` when it did not (the batch is tried again), an error when the server cannot say.
    private func transactionFate(
        _ attempt: CommitAttempt, batch: Batch
    ) -> @Sendable (PostgresConnection, CallSession) async throws -> [StoreWriteResult]? {
        guard case let .uncertain(transaction?, results, reason) = attempt else { return { _, _ in nil } }
        let what = batch.what
        return { connection, _ in
            while true {
                let rows = try await connection.collect(
                    "SELECT txid_status(\(transaction))", logger: PostgresStore.queryLogger)
                switch try rows.first?.decode(String?.self) {
                case "committed": return results
                case "aborted": return nil
                case "in progress": try await Task.sleep(for: .milliseconds(20))
                default:
                    throw UnknownFate(
                        message:
                            "could not \(what): the connection was lost after COMMIT was sent (\(reason)) and the server no longer knows the transaction: the write may have been applied"
                    )
                }
            }
        }
    }

    // MARK: Holding a record

    /// Runs `change` on the bytes under `key` while the row is locked (`SELECT … FOR UPDATE`),
    /// and stores what it returns in the same transaction: other writers of the row wait, and
    /// none conflicts. An absent row is inserted; should another writer insert it first, the
    /// change runs again on what that writer stored.
    ///
    /// `change` runs on the calling thread while the row is locked: keep it short, and do not
    /// call this store from it. This call blocks its thread while another writer holds the row:
    /// async code uses the `async` overload, which does not — a blocking call made on Swift's
    /// cooperative pool can take the thread an async writer holding the row needs to finish,
    /// and both then wait until the deadline.
    ///
    /// - Throws: What `change` throws (nothing written); `KeepsakeError.Code.timeout` when the
    ///   row could not be held and written within the store's deadline; the store's errors.
    /// - Important: If this throws, nothing was written — except `unavailable` saying the write
    ///   may have been applied (the connection was lost after `COMMIT`, and the server could not
    ///   say what became of it within the deadline).
    public func exclusiveUpdate(
        forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data
    ) throws(KeepsakeError) {
        try checkKey(key)
        let deadline = ContinuousClock.now + configuration.timeout
        let holding = RowHold(store: self, key: key)
        while true {
            let held = try perform(
                "hold the record", key: key, operation: .hold, deadline: deadline, keep: true, holding.hold)
            let bytes: Data
            do throws(KeepsakeError) {
                bytes = try change(
                    try held.current.map { stored throws(KeepsakeError) in try open(stored, forKey: key) })
            } catch {
                try perform(
                    "let go of the record", key: key, operation: .hold, deadline: deadline, on: held.connection,
                    holding.letGo(held))
                throw error
            }
            let attempt: CommitAttempt
            do throws(KeepsakeError) {
                attempt = try perform(
                    "update", key: key, operation: .update, deadline: deadline, on: held.connection,
                    holding.write(bytes, over: held))
            } catch  where error.code == .unavailable && ContinuousClock.now < deadline {
                // The held connection was lost before COMMIT was sent: nothing was written. Hold again.
                continue
            }
            if case let .committed(results) = attempt, results.first == .conflict { continue }  // inserted meanwhile
            if try settle(attempt, batch: holding.batch) != nil { return }
            if try perform(
                "ask what became of the update", key: key, operation: .update, deadline: deadline,
                transactionFate(attempt, batch: holding.batch)) != nil
            {
                return
            }
        }
    }

    /// The synchronous `exclusiveUpdate(forKey:_:)`, without blocking a thread.
    ///
    /// - Important: If this throws, nothing was written — except `unavailable` saying the write
    ///   may have been applied.
    public func exclusiveUpdate(
        forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data
    ) async throws(KeepsakeError) {
        try checkKey(key)
        let deadline = ContinuousClock.now + configuration.timeout
        let holding = RowHold(store: self, key: key)
        while true {
            let held = try await call(
                "hold the record", key: key, operation: .hold, deadline: deadline, keep: true, holding.hold)
            let bytes: Data
            do throws(KeepsakeError) {
                bytes = try change(
                    try held.current.map { stored throws(KeepsakeError) in try open(stored, forKey: key) })
            } catch {
                try await call(
                    "let go of the record", key: key, operation: .hold, deadline: deadline, on: held.connection,
                    holding.letGo(held))
                throw error
            }
            let attempt: CommitAttempt
            do throws(KeepsakeError) {
                attempt = try await call(
                    "update", key: key, operation: .update, deadline: deadline, on: held.connection,
                    holding.write(bytes, over: held))
            } catch  where error.code == .unavailable && ContinuousClock.now < deadline {
                // The held connection was lost before COMMIT was sent: nothing was written. Hold again.
                continue
            }
            if case let .committed(results) = attempt, results.first == .conflict { continue }  // inserted meanwhile
            if try settle(attempt, batch: holding.batch) != nil { return }
            if try await call(
                "ask what became of the update", key: key, operation: .update, deadline: deadline,
                transactionFate(attempt, batch: holding.batch)) != nil
            {
                return
            }
        }
    }

    // MARK: Lifecycle

    /// Ends the store: later calls fail `unavailable` ("the store was shut down"), calls in
    /// flight end (each within its deadline), idle connections and every watch are closed.
    public func shutdown() {
        pool.shutdown()
        watches.cancelAll()
    }

    /// Creates the table and its change notification triggers (`NotifyTrigger`) in one
    /// transaction on `connection`, so that no write is ever stored in the table without notifying.
    func createTable(on connection: PostgresConnection) async throws {
        let table = configuration.quotedTable
        let trigger = NotifyTrigger(configuration: configuration)
        let logger = self.logger
        for attempt in 1...3 {
            do {
                _ = try await connection.collect("BEGIN", logger: logger)
                do {
                    _ = try await connection.collect(
                        """
                        CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                            key text PRIMARY KEY, record bytea NOT NULL, version int8 NOT NULL,
                            updated_at timestamptz NOT NULL DEFAULT now())
                        """, logger: logger)
                    // Key patterns are ranges of this index (PostgresStore+Scan.swift): byte order,
                    // whatever the database's collation.
                    _ = try await connection.collect(
                        """
                        CREATE INDEX IF NOT EXISTS \(unescaped: Self.keyIndex(table: configuration.table)) \
                        ON \(unescaped: table) ((key COLLATE "C"))
                        """, logger: logger)
                    // A server without triggers or PL/pgSQL (a PostgreSQL-compatible database)
                    // still gets its table; its watches poll.
                    _ = try await connection.collect("SAVEPOINT keepsake_notify", logger: logger)
                    do {
                        _ = try await connection.collect(PostgresQuery(unsafeSQL: trigger.installSQL), logger: logger)
                    } catch  where NotifyTrigger.isRefusal(error) {
                        logger.warning(
                            "cannot create the change notification triggers; watches of this table poll",
                            metadata: ["table": "\(trigger.table)", "error": "\(Self.sqlState(error) ?? "?")"])
                        _ = try await connection.collect("ROLLBACK TO SAVEPOINT keepsake_notify", logger: logger)
                    }
                    // Table seal (Internal/TableSeal.swift): the new table's marker, in this transaction.
                    try await TableSeal(store: self).check(on: connection)
                    _ = try await connection.collect("COMMIT", logger: logger)
                } catch {
                    _ = try await connection.collect("ROLLBACK", logger: logger)
                    throw error
                }
                return
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" && attempt < 3 {
                // Two first writers created the table at once: the loser's IF NOT EXISTS raced.
                continue
            }
        }
    }
}

/// What one try of a batch came to.
enum CommitAttempt: Sendable {
    /// The server answered the `COMMIT`.
    case committed([StoreWriteResult])
    /// The connection was lost after `COMMIT` was sent: `transaction` is the id to ask about
    /// (`nil` when the transaction wrote nothing), `results` what to report if it committed.
    case uncertain(transaction: Int64?, results: [StoreWriteResult], reason: String)
}

/// The server no longer knows an unanswered transaction: the write may have been applied.
struct UnknownFate: Error {
    let message: String
}
#endif
