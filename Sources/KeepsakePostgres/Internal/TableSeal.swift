#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium
import Logging
internal import PostgresNIO
import Synchronization

/// A table's seal (docs/FORMAT.md §11.2): whether its values are sealed and by which master keys,
/// recorded beside the table, so that a store opened with another key, or with none, cannot write
/// values that the table's readers would find unreadable — and a store with a key cannot seal
/// values into a plain table.
///
/// The record, the table's *marker*, is a row of `keepsake_tables` in the table's schema:
///
/// ```sql
/// CREATE TABLE keepsake_tables (
///     table_name       text        PRIMARY KEY,  -- the records table as schema.name, as the server resolves it
///     table_oid        oid         NOT NULL,     -- its pg_class oid: a row whose table was dropped or restored is stale
///     sealed           bool        NOT NULL,
///     sealed_for       text,                     -- the table name its values are bound to (§11's T), when sealed
///     key_fingerprints text[]      NOT NULL,     -- the master keys that may write it; empty when plain
///     marked_at        timestamptz NOT NULL DEFAULT now());
/// ```
///
/// Every write transaction checks the marker before it sends any write, in one statement that
/// reads the row `FOR SHARE`: a concurrent change of the marker waits for the write to end, and
/// the write sees a change committed before it. A table without a valid marker — new, created
/// by an older release or by psql, restored elsewhere (another oid), renamed — gets one from its
/// first write, decided under a transaction-level advisory lock so that two first writers never
/// both decide: the writer's configuration when the table is empty, else what its rows say
/// (``decide(plainRows:samples:)``).
///
/// A role that may neither create nor write `keepsake_tables` keeps no marker: each process then
/// infers from the rows once, before its first write, and logs a warning.
///
/// Every query runs on the `PostgresConnection` given, whatever pool lent it.
struct TableSeal: Sendable {
    /// A table's marker, as stored.
    struct Marker: Sendable, Equatable {
        var sealed: Bool
        /// The table name the values are bound to (sealed tables only).
        var sealedFor: String?
        /// The fingerprints of the master keys that may write the table; empty when plain.
        var fingerprints: [String]
    }

    /// Where a table's marker is kept.
    enum Place: Sendable, Equatable {
        /// In `markers`, a `keepsake_tables` (quoted for SQL) the role can read and write, under
        /// `name`, the table's `schema.name` as the server resolved it.
        case table(markers: String, name: String)
        /// Nowhere: the role may not create or write `keepsake_tables`; each check infers from the rows.
        case unavailable
    }

    /// How many sealed values of an unmarked table are opened to tell whose key sealed it.
    static let sampleSize = 8

    /// Where each table's marker is, by ``placeKey``: found once per process.
    private static let places = Mutex<[String: Place]>([:])
    /// The writers (``writerKey``) whose check passed without a marker to re-read (no
    /// `keepsake_tables`, or outside a transaction): not checked again in this process.
    private static let accepted = Mutex<Set<String>>([])
    /// The writers (``writerKey``) the table's marker recorded at their last check.
    private static let settled = Mutex<Set<String>>([])

    /// The writing store's sealer; `nil` for a plain store.
    let sealer: Sealer?
    /// The table as configured, and quoted for SQL.
    let table: String
    let quotedTable: String
    /// The store's URI, for errors.
    let uri: String
    let logger: Logger
    /// The table and the role: one marker place each.
    let placeKey: String
    /// The table, the role and what this store writes (a key's fingerprint and the name its
    /// values are bound to, or plain).
    let writerKey: String

    init(store: PostgresStore) {
        sealer = store.sealer
        table = store.configuration.table
        quotedTable = store.configuration.quotedTable
        uri = store.uri
        logger = store.logger
        placeKey = store.configuration.identity + " " + store.configuration.user
        writerKey =
            placeKey + " "
            + (store.sealer.map { "writes \($0.writerID) reads \($0.readableIDs.joined(separator: ",")) \($0.table)" }
                ?? "plain")
    }

    /// What a marker records for this writer: its primary key's fingerprint, or `plain`.
    var writerID: String { sealer?.writerID ?? Sealer.plainID }
    /// Whether this store seals what it writes.
    var writesSealed: Bool { sealer?.primary != nil }
    /// Every id this store reads (its keys' fingerprints, `plain` when it reads plain values).
    var readableIDs: [String] { sealer?.readableIDs ?? [Sealer.plainID] }

    /// This store's marker: the one its first write records on a table that has none.
    var ownMarker: Marker {
        guard let sealer, writesSealed else { return Marker(sealed: false, sealedFor: nil, fingerprints: []) }
        return Marker(sealed: true, sealedFor: sealer.table, fingerprints: [writerID])
    }

    /// Who may write a table of `marker`: the ids it records, `plain` for a plain table.
    static func writers(of marker: Marker) -> [String] {
        marker.sealed ? marker.fingerprints : [Sealer.plainID]
    }

    /// `marker` with this writer added: the marker a writer records when its key set shares a
    /// key with the table's writers (a rotation, a table being sealed or unsealed).
    func extended(_ marker: Marker) -> Marker {
        Marker(
            sealed: marker.sealed || writesSealed,
            sealedFor: marker.sealedFor ?? (writesSealed ? sealer?.table : nil),
            fingerprints: Self.writers(of: marker) + [writerID])
    }

    // MARK: Checks

    /// Checks, inside the write transaction on `connection` and before any write of it is sent,
    /// that this store may write the table; records the table's marker when it has none.
    ///
    /// - Throws: ``KeepsakeError`` when it may not (`wrongKey`, or `invalidArgument` for a table
    ///   sealed under another name): nothing was written, and the transaction must be rolled
    ///   back. What the server threw otherwise (the transaction must be rolled back too).
    /// - Important: A table that does not exist passes: the write then fails as without this check.
    func check(on connection: PostgresConnection) async throws {
        guard let place = try await place(on: connection, creating: true) else { return }
        guard case let .table(markers, name) = place else {
            if isAccepted { return }
            _ = try await inferred(on: connection)
            Self.accepted.withLock { _ = $0.insert(writerKey) }
            return
        }
        if !isSettled, let marker = try await marker(in: markers, name: name, on: connection, locking: false),
            try judge(marker)
        {
            // Add this writer before taking the share lock: a writer that upgraded its own share
            // lock would deadlock with every other writer doing the same.
            try await extend(marker, in: markers, name: name, on: connection)
        }
        if let marker = try await marker(in: markers, name: name, on: connection, locking: true) {
            if try judge(marker) {
                // The marker changed between the two reads: the next attempt extends it afresh.
                Self.settled.withLock { _ = $0.remove(writerKey) }
                throw MarkerChanged()
            }
            Self.settled.withLock { _ = $0.insert(writerKey) }
            return
        }
        // No marker, or a stale one: one writer at a time decides, and the others then read its marker.
        guard let current = try await lockForMarking(on: connection) else { return }
        if current != name { Self.places.withLock { $0[placeKey] = .table(markers: markers, name: current) } }
        if let marker = try await marker(in: markers, name: current, on: connection, locking: true) {
            if try judge(marker) { try await record(extended(marker), in: markers, name: current, on: connection) }
            return
        }
        try await record(try await inferred(on: connection), in: markers, name: current, on: connection)
    }

    /// ``check(on:)`` outside a transaction, locking and recording nothing: whether a write
    /// would be refused, asked before a transfer writes anything. A pass is remembered for the
    /// process (every write checks again anyway).
    ///
    /// - Throws: What ``check(on:)`` throws.
    func preflight(on connection: PostgresConnection) async throws {
        if isAccepted { return }
        guard let place = try await place(on: connection, creating: false) else { return }
        if case let .table(markers, name) = place,
            let marker = try await marker(in: markers, name: name, on: connection, locking: false)
        {
            _ = try judge(marker)
        } else {
            _ = try await inferred(on: connection)
        }
        Self.accepted.withLock { _ = $0.insert(writerKey) }
    }

    /// Whether this writer passed a check without a marker before, in this process.
    var isAccepted: Bool { Self.accepted.withLock { $0.contains(writerKey) } }

    /// Whether the table's marker recorded this writer at its last check in this process: then
    /// a check reads the marker once, under the share lock.
    var isSettled: Bool { Self.settled.withLock { $0.contains(writerKey) } }

    /// The marker changed between a check's two reads; the write transaction is rolled back and
    /// tried again (any error that is not a server's or Keepsake's is retried).
    struct MarkerChanged: Error {}

    /// Records `marker` extended with this writer, if the marker is still `marker` (compared as
    /// read, without a lock): the update locks the row, so two writers extending it take turns.
    private func extend(_ marker: Marker, in markers: String, name: String, on connection: PostgresConnection)
        async throws
    {
        let new = extended(marker)
        _ = try await connection.collect(
            """
            UPDATE \(unescaped: markers) SET sealed = \(new.sealed), sealed_for = \(new.sealedFor)::text,
                key_fingerprints = \(new.fingerprints)::text[], marked_at = now()
            WHERE table_name = \(name) AND table_oid = to_regclass(\(table)) AND sealed = \(marker.sealed)
                AND key_fingerprints = \(marker.fingerprints)::text[]
            """, logger: logger)
        logger.info(
            "added this store's key to the table's seal",
            metadata: ["table": "\(table)", "fingerprints": "\(new.fingerprints.joined(separator: ","))"])
    }

    /// The refusal, if any, of `marker` for this store; `true` when this store may write once it
    /// has added itself to the marker (``extended(_:)``): the marker does not record this
    /// writer's key, but it records a key this store holds — the key set of a rotation, or of a
    /// table being sealed or unsealed. Holding a key of the table is what entitles a writer.
    func judge(_ marker: Marker) throws(KeepsakeError) -> Bool {
        let writers = Self.writers(of: marker)
        let extending: Bool
        if writers.contains(writerID) {
            extending = false
        } else if !Set(readableIDs).isDisjoint(with: writers) {
            extending = true
        } else if !writesSealed {
            throw sealedTableRefusal(marker.fingerprints)
        } else if !marker.sealed {
            throw plainTableRefusal()
        } else {
            throw otherKeyRefusal(marker.fingerprints)
        }
        if let sealer, writesSealed, let sealedFor = marker.sealedFor, sealedFor != sealer.table {
            throw KeepsakeError(
                .invalidArgument, store: uri,
                """
                this table's values are sealed for the table name '\(sealedFor)' and this store names it \
                '\(sealer.table)': values sealed for one name do not open for the other; open it as \
                table=\(sealedFor); nothing was written
                """)
        }
        return extending
    }

    /// The marker an unmarked table's rows call for with this store as its writer, or the refusal.
    ///
    /// - Parameters:
    ///   - plainRows: Whether some row's value does not start with `KSPG`.
    ///   - samples: Up to ``sampleSize`` rows whose value starts with `KSPG`, the first by key.
    /// - Throws: `wrongKey` for a plain store and sealed values, for a sealed store and plain
    ///   values only, and for a sealed store whose key does not open every sampled value.
    func decide(plainRows: Bool, samples: [(key: String, record: Data)]) throws(KeepsakeError) -> Marker {
        guard let sealer, writesSealed else {
            if !samples.isEmpty { throw sealedTableRefusal([]) }
            return ownMarker
        }
        // A table being sealed (the store reads plain values) records that plain writers may
        // still write it until `migrate seal` has sealed every row.
        let plainToo = plainRows && sealer.readsPlain ? [Sealer.plainID] : []
        if samples.isEmpty {
            if plainRows && !sealer.readsPlain { throw plainTableRefusal() }
            return Marker(sealed: true, sealedFor: sealer.table, fingerprints: plainToo + [writerID])
        }
        var opened = 0
        var keyIDs: [String] = []
        for sample in samples {
            do {
                _ = try sealer.open(sample.record, forKey: sample.key, store: uri)
                opened += 1
                if let id = Sealer.keyID(of: sample.record), id != writerID, sealer.readableIDs.contains(id),
                    !keyIDs.contains(id)
                {
                    keyIDs.append(id)
                }
            } catch {
                continue  // counted: a sample that does not open is what the refusal below is about
            }
        }
        if opened == 0 { throw otherKeyRefusal([]) }
        if opened < samples.count {
            throw KeepsakeError(
                .wrongKey, store: uri,
                """
                this table holds values sealed by more than one key: \(opened) of the \(samples.count) sealed \
                values read open with this store's keys (\(sealer.describeKeys())) and the others \
                do not; record which key the table belongs to in keepsake_tables (docs/FORMAT.md §11.2) before \
                writing; nothing was written
                """)
        }
        if plainRows && !sealer.readsPlain {
            logger.warning(
                "the sealed table also holds plain values, which this store reads as corrupt records",
                metadata: ["table": "\(table)"])
        }
        return Marker(sealed: true, sealedFor: sealer.table, fingerprints: plainToo + keyIDs + [writerID])
    }

    // MARK: Rotation

    /// Narrows the table's seal to this store's key, in a transaction of its own on `connection`,
    /// when no row matches `outstanding` (an SQL condition on `record`: the rows not written the
    /// way this store writes): the marker is locked first, so writers wait, and the rows are
    /// counted under that lock. Returns the ids retired; none when rows are left, when the table
    /// keeps no marker, or when only this store's key was recorded.
    func retire(outstanding: String, on connection: PostgresConnection) async throws -> [String] {
        _ = try await connection.collect("BEGIN", logger: logger)
        do {
            guard case let .table(markers, name)? = try await place(on: connection, creating: false),
                let marker = try await marker(in: markers, name: name, on: connection, locking: true, forUpdate: true)
            else {
                _ = try await connection.collect("ROLLBACK", logger: logger)
                return []
            }
            let rows = try await connection.collect(
                "SELECT count(*) FROM \(unescaped: quotedTable) WHERE \(unescaped: outstanding)", logger: logger)
            let left = try rows.first?.decode(Int64.self) ?? 0
            let retiring = Self.writers(of: marker).filter { $0 != writerID }
            guard left == 0, !retiring.isEmpty else {
                _ = try await connection.collect("ROLLBACK", logger: logger)
                return []
            }
            try await record(ownMarker, in: markers, name: name, on: connection)
            _ = try await connection.collect("COMMIT", logger: logger)
            logger.info(
                "retired the table's old keys",
                metadata: ["table": "\(table)", "retired": "\(retiring.joined(separator: ","))"])
            return retiring
        } catch {
            do {
                _ = try await connection.collect("ROLLBACK", logger: logger)
            } catch {
                // The connection is broken or confused: the call closes it (never lent again).
            }
            throw error
        }
    }

    // MARK: Refusals

    private func sealedTableRefusal(_ fingerprints: [String]) -> KeepsakeError {
        let known = fingerprints.isEmpty ? "" : " (master key fingerprint \(fingerprints.joined(separator: ", ")))"
        return KeepsakeError(
            .wrongKey, store: uri,
            """
            this table is sealed\(known); open it with its master key (sealkey_file= or sealkey_env= in the \
            URI, or PostgresStore's masterKey:); nothing was written
            """)
    }

    private func otherKeyRefusal(_ fingerprints: [String]) -> KeepsakeError {
        let own = sealer.map { $0.describeKeys() } ?? "-"
        if fingerprints.isEmpty {
            return KeepsakeError(
                .wrongKey, store: uri,
                """
                this table is sealed by another key, or for another spelling of its name: its sealed values do \
                not open with this store's keys (\(own)), and it records no fingerprint (an older \
                release wrote it); nothing was written
                """)
        }
        return KeepsakeError(
            .wrongKey, store: uri,
            """
            this table is sealed by another key (fingerprint \(fingerprints.joined(separator: ", "))); this \
            store holds \(own); nothing was written
            """)
    }

    private func plainTableRefusal() -> KeepsakeError {
        KeepsakeError(
            .wrongKey, store: uri,
            """
            this table holds plain values and this store has a master key: open it without one, or seal the \
            table while it serves — give its writers sealkey_previous=plain beside the key (they then read its \
            plain values) and run `migrate seal`; nothing was written
            """)
    }

    // MARK: Queries

    /// Where the table's marker is kept; `nil` when the table does not exist. Found once per
    /// process; with `creating`, `keepsake_tables` is created in the table's schema when absent
    /// (inside the caller's transaction, under a savepoint).
    private func place(on connection: PostgresConnection, creating: Bool) async throws -> Place? {
        if let known = Self.places.withLock({ $0[placeKey] }) { return known }
        let rows = try await connection.collect(
            """
            SELECT quote_ident(n.nspname) || '.keepsake_tables', n.nspname || '.' || c.relname, m.oid IS NOT NULL,
                coalesce(has_table_privilege(m.oid, 'SELECT') AND has_table_privilege(m.oid, 'INSERT')
                    AND has_table_privilege(m.oid, 'UPDATE'), false)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_class m ON m.relnamespace = n.oid AND m.relname = 'keepsake_tables' AND m.relkind = 'r'
            WHERE c.oid = to_regclass(\(table))
            """, logger: logger)
        guard let row = rows.first else { return nil }
        let (markers, name, exists, usable) = try row.decode((String, String, Bool, Bool).self)
        let place: Place
        if usable {
            place = .table(markers: markers, name: name)
        } else if exists {
            place = .unavailable
            logger.warning(
                "this role may not read and write keepsake_tables: the table's seal is inferred from its rows",
                metadata: ["table": "\(table)"])
        } else if creating {
            place = try await create(markers, on: connection) ? .table(markers: markers, name: name) : .unavailable
        } else {
            return .unavailable  // not created outside a write, nor remembered
        }
        Self.places.withLock { $0[placeKey] = place }
        return place
    }

    /// Creates `keepsake_tables` under a savepoint; `false` when the role may not.
    private func create(_ markers: String, on connection: PostgresConnection) async throws -> Bool {
        _ = try await connection.collect("SAVEPOINT keepsake_seal", logger: logger)
        do {
            _ = try await connection.collect(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE TABLE \(markers) (
                            table_name text PRIMARY KEY, table_oid oid NOT NULL, sealed bool NOT NULL, sealed_for text,
                            key_fingerprints text[] NOT NULL, marked_at timestamptz NOT NULL DEFAULT now())
                        """), logger: logger)
            _ = try await connection.collect(
                PostgresQuery(
                    unsafeSQL: """
                        COMMENT ON TABLE \(markers) IS 'Keepsake: whether each records table is sealed, and by which \
                        master keys (docs/FORMAT.md, section 11.2)'
                        """), logger: logger)
            _ = try await connection.collect("RELEASE SAVEPOINT keepsake_seal", logger: logger)
            return true
        } catch let error as PSQLError where ["42501", "23505", "42P07"].contains(Self.sqlState(error) ?? "") {
            _ = try await connection.collect("ROLLBACK TO SAVEPOINT keepsake_seal", logger: logger)
            guard Self.sqlState(error) == "42501" else { return true }  // another writer created it meanwhile
            logger.warning(
                "this role may not create keepsake_tables: the table's seal is inferred from its rows",
                metadata: ["table": "\(table)"])
            return false
        }
    }

    /// The table's marker in `markers`, if it has a valid one: under `name`, of the oid the
    /// configured name resolves to. With `locking`, held `FOR SHARE` until the transaction ends.
    private func marker(
        in markers: String, name: String, on connection: PostgresConnection, locking: Bool, forUpdate: Bool = false
    ) async throws -> Marker? {
        let rows: PostgresQueryResult
        do {
            rows = try await connection.collect(
                """
                SELECT sealed, sealed_for, key_fingerprints FROM \(unescaped: markers)
                WHERE table_name = \(name) AND table_oid = to_regclass(\(table))\(unescaped: forUpdate ? " FOR UPDATE" : locking ? " FOR SHARE" : "")
                """, logger: logger)
        } catch  where Self.sqlState(error) == "42P01" {
            // keepsake_tables was dropped: look for it again next time (a commit creates what is
            // missing and retries after this error).
            Self.places.withLock { $0[placeKey] = nil }
            throw error
        }
        guard let row = rows.first else { return nil }
        let (sealed, sealedFor, fingerprints) = try row.decode((Bool, String?, [String]).self)
        return Marker(sealed: sealed, sealedFor: sealedFor, fingerprints: fingerprints)
    }

    /// Takes the transaction-level advisory lock under which a table's marker is decided; the
    /// table's `schema.name` as the server resolves it now, or `nil` when it does not exist.
    private func lockForMarking(on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.collect(
            """
            SELECT t.name, pg_advisory_xact_lock(hashtext('keepsake.seal'), hashtext(t.name)) IS NULL FROM (
                SELECT n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.oid = to_regclass(\(table))) AS t
            """, logger: logger)
        return try rows.first.map { row in try row.decode((String, Bool).self).0 }
    }

    /// What the table's rows say (``decide(plainRows:samples:)``): whether one holds a plain
    /// value, and the first ``sampleSize`` sealed values by key.
    private func inferred(on connection: PostgresConnection) async throws -> Marker {
        let rows = try await connection.collect(
            """
            SELECT p.plain, s.key, s.record FROM (
                SELECT EXISTS (SELECT 1 FROM \(unescaped: quotedTable) WHERE substr(record, 1, 4) <> 'KSPG'::bytea) AS plain
            ) AS p LEFT JOIN LATERAL (
                SELECT key, record FROM \(unescaped: quotedTable) WHERE substr(record, 1, 4) = 'KSPG'::bytea
                ORDER BY key LIMIT \(unescaped: String(Self.sampleSize))
            ) AS s ON true
            """, logger: logger)
        var plainRows = false
        var samples: [(key: String, record: Data)] = []
        for row in rows {
            let (plain, key, record) = try row.decode((Bool, String?, ByteBuffer?).self)
            plainRows = plain
            if let key, let record { samples.append((key, Data(record.readableBytesView))) }
        }
        return try decide(plainRows: plainRows, samples: samples)
    }

    /// Records `marker` as the table's, under `name`, replacing a stale one.
    private func record(
        _ marker: Marker, in markers: String, name: String, on connection: PostgresConnection
    ) async throws {
        _ = try await connection.collect(
            """
            INSERT INTO \(unescaped: markers) AS m (table_name, table_oid, sealed, sealed_for, key_fingerprints)
            VALUES (\(name), to_regclass(\(table)), \(marker.sealed), \(marker.sealedFor)::text, \(marker.fingerprints)::text[])
            ON CONFLICT (table_name) DO UPDATE SET table_oid = EXCLUDED.table_oid, sealed = EXCLUDED.sealed,
                sealed_for = EXCLUDED.sealed_for, key_fingerprints = EXCLUDED.key_fingerprints, marked_at = now()
            """, logger: logger)
        logger.info(
            "recorded the table's seal",
            metadata: [
                "table": "\(table)", "sealed": "\(marker.sealed)",
                "fingerprints": "\(marker.fingerprints.joined(separator: ","))"
            ])
    }

    private static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }
}
#endif
