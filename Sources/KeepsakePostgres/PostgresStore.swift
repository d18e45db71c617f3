import Foundation
import Keepsake
import KeepsakeSodium
import Logging
internal import PostgresNIO

/// A `RecordStore` on one PostgreSQL table, shared by every instance of a server app
/// (DESIGN.md §19).
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
/// ```
///
/// It is created by the first write when absent; until then the store reads as empty.
///
/// - Every write is a compare-and-swap: a write that expects bytes (what `Vault.update`, a
///   migration's write-back and `Migrator` send) locks the rows it reads
///   (`SELECT … FOR UPDATE`) and updates them only at the row version it read; an insert that
///   expects nothing is `INSERT … ON CONFLICT DO NOTHING`. A batch — a `migrate run`, a copy —
///   is one transaction with one statement over `unnest` arrays, whatever its size: every write
///   of it is applied, or none.
/// - Every call has a deadline (``PostgresConfiguration/timeout``): the server cancels a
///   statement that runs longer, and the call throws `KeepsakeError.Code.timeout`.
/// - A lost connection or a restarting server is `KeepsakeError.Code.unavailable`.
///   A batch is retried on a new connection when it failed before its `COMMIT` was sent (so
///   nothing of it was applied); when the connection is lost after that, the error says the
///   batch was applied whole or not at all.
/// - Values can be sealed with a master key (``init(configuration:masterKey:requireExisting:)``):
///   XChaCha20-Poly1305 bound to the table and the record key, so that a database reader or a
///   backup sees no secret (docs/FORMAT.md).
///
/// postgres-nio is asynchronous; this store's calls are synchronous, as `RecordStore`
/// is. Each call runs its async work on an event loop thread of its own — never on Swift's
/// cooperative pool — while the calling thread waits. Call the store through
/// `Vault`'s `async` methods (which run store calls on a Dispatch queue) or from a plain thread;
/// a synchronous call made from inside a Swift task does not deadlock, but it holds one of the
/// pool's few threads until the server answers.
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
    public var isSealed: Bool { sealer != nil }

    let sealer: Sealer?
    let client: PostgresClient
    private let runner: Task<Void, Never>
    let logger = Logger(label: "keepsake.postgres")
    /// The logger of the store's read queries (they run in closures that do not capture the store).
    static let queryLogger = Logger(label: "keepsake.postgres")

    /// Opens the store: starts a connection pool and checks that the server answers.
    ///
    /// - Parameters:
    ///   - configuration: The server, database, table, credentials and deadline.
    ///   - masterKey: Seals every value with this master key (a key file, a provider such as
    ///     ``EnvironmentMasterKey`` or the keyring); `nil` stores values as given. A store's
    ///     values must all be written with the same choice.
    ///   - requireExisting: Whether the table must already exist.
    /// - Throws: `KeepsakeError.Code.unavailable` when the server cannot be reached
    ///   or refuses the login, `KeepsakeError.Code.timeout` past the deadline,
    ///   `KeepsakeError.Code.notFound` when `requireExisting` and the table does not
    ///   exist, `KeepsakeError.Code.invalidArgument` for a passphrase master key
    ///   (this store takes a 32-byte key), and what the master key source throws.
    /// - Important: Opening creates no table and writes no record.
    public init(
        configuration: PostgresConfiguration, masterKey: MasterKeySource? = nil, requireExisting: Bool = false
    ) throws(KeepsakeError) {
        self.configuration = configuration
        let uri = configuration.uri
        if let masterKey {
            let key: SecureBytes
            switch masterKey {
            case let .keyFile(path):
                key = try KeyFile(path: path).masterKey(createIfAbsent: false)
            case let .provider(provider):
                key = try provider.masterKey(
                    createIfAbsent: false, storeID: Sealer.storeID(forIdentity: configuration.identity))
            case .passphrase:
                throw KeepsakeError(
                    .invalidArgument, store: uri,
                    """
                    a PostgreSQL store is sealed with a 32-byte master key: give a key file, an environment \
                    variable key (EnvironmentMasterKey) or a keyring key, not a passphrase
                    """)
            }
            sealer = try Sealer(masterKey: key, table: configuration.table, store: uri)
        } else {
            sealer = nil
        }
        client = PostgresClient(configuration: Self.clientConfiguration(configuration))
        let client = self.client
        runner = Bridge.start { await client.run() }
        let exists = try perform("open the store", retrying: true) { client in
            let table = configuration.table
            let rows = try await client.collect(
                "SELECT to_regclass(\(table)) IS NOT NULL", logger: PostgresStore.queryLogger)
            return try rows.first?.decode(Bool.self) ?? false
        }
        if requireExisting && !exists {
            throw KeepsakeError(
                .notFound, store: uri,
                "the table \(configuration.table) does not exist in database \(configuration.database)")
        }
    }

    deinit { runner.cancel() }

    public var uri: String { configuration.uri }

    /// The server, database and table, whichever URI names them.
    public var identity: String { configuration.identity }

    public var capabilities: StoreCapabilities {
        sealer == nil ? [.survivesReinstall] : [.survivesReinstall, .encryptedAtRest]
    }

    /// The server's version (`SHOW server_version`), for `doctor`.
    ///
    /// - Throws: `KeepsakeError` when the server cannot be asked.
    public func serverVersion() throws(KeepsakeError) -> String {
        try perform("read the server version", retrying: true) { client in
            let rows = try await client.collect(
                "SELECT current_setting('server_version')", logger: PostgresStore.queryLogger)
            return try rows.first?.decode(String.self) ?? "unknown"
        }
    }

    // MARK: Reads

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        let table = configuration.quotedTable
        let stored: Data? = try perform("read", key: key, retrying: true, tableMissing: .answer(nil)) { client in
            let rows = try await client.collect(
                "SELECT record FROM \(unescaped: table) WHERE key = \(key)", logger: PostgresStore.queryLogger)
            return try rows.first.map { row in Data(try row.decode(ByteBuffer.self).readableBytesView) }
        }
        guard let stored else { return nil }
        return try open(stored, forKey: key)
    }

    public func keys() throws(KeepsakeError) -> [String] {
        let table = configuration.quotedTable
        return try perform("list the keys", retrying: true, tableMissing: .answer([])) { client in
            let rows = try await client.collect(
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

    /// Every record, streamed from the server in key order; a sealed value that does not open
    /// is that record's error.
    public func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        let table = configuration.quotedTable
        let rows: [StoredRow] = try perform("read the records", retrying: true, tableMissing: .answer([])) { client in
            let rows = try await client.collect(
                "SELECT key, record FROM \(unescaped: table) ORDER BY key COLLATE \"C\"",
                logger: PostgresStore.queryLogger)
            var result: [StoredRow] = []
            result.reserveCapacity(rows.count)
            for row in rows {
                let (key, record) = try row.decode((String, ByteBuffer).self)
                result.append(StoredRow(key: key, record: Data(record.readableBytesView)))
            }
            return result
        }
        return rows.map { row in
            do throws(KeepsakeError) {
                return (row.key, .success(try open(row.record, forKey: row.key)))
            } catch {
                return (row.key, .failure(error))
            }
        }
    }

    /// One row as read.
    struct StoredRow: Sendable {
        let key: String
        let record: Data
    }

    func open(_ stored: Data, forKey key: String) throws(KeepsakeError) -> Data {
        guard let sealer else { return stored }
        return try sealer.open(stored, forKey: key, store: uri)
    }

    // MARK: Writes

    /// Applies `writes` as one transaction: every write whose expectation holds is applied, and
    /// the others are `StoreWriteResult.conflict`.
    ///
    /// - Throws: `KeepsakeError` naming the store when the batch could not be
    ///   committed (`KeepsakeError.Code.unavailable`,
    ///   `KeepsakeError.Code.timeout`, …).
    /// - Important: If this throws, no write of the batch was applied — except when the
    ///   connection was lost after `COMMIT` was sent, which the error's message says: then the
    ///   batch was applied whole or not at all. A batch is never applied in part.
    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try validateKey(write.key) }
        guard !writes.isEmpty else { return [] }
        let plan = BatchPlan(writes: writes, sealer: sealer)
        let store = self
        let what = "commit \(writes.count) write\(writes.count == 1 ? "" : "s")"
        return try perform(what, key: writes.count == 1 ? writes[0].key : nil, retrying: true) { client in
            do {
                return try await client.withConnection { connection in try await plan.run(on: connection, store: store)
                }
            } catch  where Self.isMissingTable(error) {
                // The first write to this store: nothing was applied (the transaction was rolled back).
                try await store.createTable(client)
                return try await client.withConnection { connection in try await plan.run(on: connection, store: store)
                }
            }
        }
    }

    /// Creates the table and its change notification triggers (`NotifyTrigger`) in one
    /// transaction, so that no write is ever stored in the table without notifying.
    func createTable(_ client: PostgresClient) async throws {
        let table = configuration.quotedTable
        let trigger = NotifyTrigger(configuration: configuration)
        let logger = self.logger
        for attempt in 1...3 {
            do {
                try await client.withConnection { connection in
                    _ = try await connection.collect("BEGIN", logger: logger)
                    do {
                        _ = try await connection.collect(
                            """
                            CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                                key text PRIMARY KEY, record bytea NOT NULL, version int8 NOT NULL,
                                updated_at timestamptz NOT NULL DEFAULT now())
                            """, logger: logger)
                        // A server without triggers or PL/pgSQL (a PostgreSQL-compatible database)
                        // still gets its table; its watches poll.
                        _ = try await connection.collect("SAVEPOINT keepsake_notify", logger: logger)
                        do {
                            _ = try await connection.collect(
                                PostgresQuery(unsafeSQL: trigger.installSQL), logger: logger)
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
                        do {
                            _ = try await connection.collect("ROLLBACK", logger: logger)
                        } catch {
                            // The connection is broken or confused: close it so the pool never lends it again.
                            await BatchPlan.close(connection, store: self)
                        }
                        throw error
                    }
                }
                return
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" && attempt < 3 {
                // Two first writers created the table at once: the loser's IF NOT EXISTS raced.
                continue
            }
        }
    }
}
