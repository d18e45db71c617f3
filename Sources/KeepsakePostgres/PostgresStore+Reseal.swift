#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium
internal import PostgresNIO

/// One key id's count in a census query.
private struct StoredRowCount: Sendable {
    let id: String
    let count: Int
}

/// A row read to be re-sealed.
private struct ResealRow: Sendable {
    let key: String
    let version: Int64
    let record: Data
}

extension PostgresStore: ResealableStore {
    /// The primary key's fingerprint, or `plain` for a store that writes plain values.
    public var writtenKeyID: String { sealer?.writerID ?? Sealer.plainID }

    /// How many rows each key sealed (docs/FORMAT.md §11: a format-2 value names its key), in one
    /// query: `plain` for rows that are not sealed, `format1` for values sealed before values
    /// named their key, `unreadable` for a `KSPG` value of no format this release reads.
    ///
    /// - Throws: What a read throws; a table that does not exist has an empty census.
    public func keyCensus() throws(KeepsakeError) -> KeyCensus {
        let table = configuration.quotedTable
        let counts: [StoredRowCount] = try perform(
            "count values by key", operation: .readAll, tableMissing: .answer([])
        ) { connection, _ in
            let rows = try await connection.collect(
                """
                SELECT CASE
                    WHEN substr(record, 1, 4) <> decode('4b535047', 'hex') THEN 'plain'
                    WHEN substr(record, 5, 1) = decode('01', 'hex') AND length(record) >= 45 THEN 'format1'
                    WHEN substr(record, 5, 1) = decode('02', 'hex') AND length(record) >= 61
                        THEN encode(substr(record, 6, 16), 'hex')
                    ELSE 'unreadable' END AS id, count(*)
                FROM \(unescaped: table) GROUP BY 1
                """, logger: PostgresStore.queryLogger)
            var counts: [StoredRowCount] = []
            for row in rows {
                let (id, count) = try row.decode((String, Int64).self)
                counts.append(StoredRowCount(id: id, count: Int(count)))
            }
            return counts
        }
        return KeyCensus(entries: counts.map { KeyCensus.Entry(keyID: $0.id, count: $0.count, role: role(of: $0.id)) })
    }

    /// What this store does with the key `id` of a census.
    private func role(of id: String) -> KeyCensus.Role {
        if id == writtenKeyID { return .primary }
        let readable = sealer?.readableIDs ?? [Sealer.plainID]
        if readable.contains(id) { return .previous }
        if id == "format1", let sealer, sealer.primary != nil || !sealer.previous.isEmpty { return .previous }
        return .unknown
    }

    /// The rows not yet written the way this store writes, as an SQL condition on `record`.
    private var outstandingCondition: String {
        guard let prefix = sealer?.writtenPrefix else { return "substr(record, 1, 4) = decode('4b535047', 'hex')" }
        let hex = prefix.map { String(format: "%02x", $0) }.joined()
        return "substr(record, 1, \(prefix.count)) <> decode('\(hex)', 'hex')"
    }

    /// Re-seals every row under this store's primary key (or, for a store that writes plain
    /// values and holds previous keys, unseals it): `ResealableStore.reseal(batchSize:progress:)`.
    ///
    /// Each batch is read by key order after the last one, opened with the key set, re-sealed,
    /// and written in one transaction that checks the table's seal and updates each row only at
    /// the row version read: a row another writer changed meanwhile keeps that writer's value.
    /// When a pass leaves no row under another key, the table's seal is narrowed to this store's
    /// key in one transaction that locks the seal and counts again, so no writer slips a value
    /// under a retired key in between.
    ///
    /// - Throws: What a read or a write throws (`unavailable`, `timeout`, `wrongKey` when the
    ///   table's seal refuses this store): batches committed before stay re-sealed, and running
    ///   again resumes.
    public func reseal(
        batchSize: Int = 512, progress: (@Sendable (ResealProgress) -> Void)? = nil
    ) throws(KeepsakeError) -> ResealReport {
        let size = min(max(batchSize, 1), 10_000)
        var resealed = 0
        var changed = 0
        var unreadable: [String: Void] = [:]
        var unreadableKeys: [String] = []
        var retired: [String] = []
        let condition = outstandingCondition
        let table = configuration.quotedTable
        for _ in 0..<8 {
            let total = try outstandingCount(condition)
            var done = 0
            var cursor = ""
            progress?(ResealProgress(done: 0, total: total))
            var passResealed = 0
            while true {
                let after = cursor
                let rows: [ResealRow] = try perform(
                    "read values to re-seal", operation: .readAll, tableMissing: .answer([])
                ) { connection, _ in
                    let result = try await connection.collect(
                        """
                        SELECT key, version, record FROM \(unescaped: table)
                        WHERE key COLLATE "C" > \(after) AND \(unescaped: condition)
                        ORDER BY key COLLATE "C" LIMIT \(unescaped: String(size))
                        """, logger: PostgresStore.queryLogger)
                    var rows: [ResealRow] = []
                    for row in result {
                        let (key, version, record) = try row.decode((String, Int64, ByteBuffer).self)
                        rows.append(ResealRow(key: key, version: version, record: Data(record.readableBytesView)))
                    }
                    return rows
                }
                guard let last = rows.last else { break }
                cursor = last.key
                var keys: [String] = []
                var versions: [Int64] = []
                var records: [ByteBuffer] = []
                for row in rows {
                    let plain: Data
                    do {
                        plain = try open(row.record, forKey: row.key)
                    } catch {
                        if unreadable.updateValue((), forKey: row.key) == nil, unreadableKeys.count < 20 {
                            unreadableKeys.append(row.key)
                        }
                        continue
                    }
                    keys.append(row.key)
                    versions.append(row.version)
                    records.append(ByteBuffer(bytes: sealer?.stored(plain, forKey: row.key) ?? plain))
                }
                if !keys.isEmpty {
                    let batch = (keys, versions, records)
                    let applied = try perform("re-seal \(keys.count) values", operation: .commit) { connection, _ in
                        try await self.resealBatch(batch, table: table, on: connection)
                    }
                    passResealed += applied
                    changed += keys.count - applied
                }
                done += rows.count
                progress?(ResealProgress(done: min(done, max(total, done)), total: max(total, done)))
            }
            resealed += passResealed
            // Rows written under an old key meanwhile (a writer that still holds it) are what a
            // next pass is for; unreadable rows are never retried.
            let left = try outstandingCount(condition)
            if left <= unreadable.count {
                if unreadable.isEmpty {
                    retired = try perform("retire the table's old keys", operation: .commit) { connection, _ in
                        try await TableSeal(store: self).retire(outstanding: condition, on: connection)
                    }
                    if retired.isEmpty, try outstandingCount(condition) > 0 { continue }  // written meanwhile
                }
                break
            }
            if passResealed == 0 && left == total { break }  // nothing moves: stop rather than spin
        }
        return ResealReport(
            resealed: resealed, changedMeanwhile: changed, unreadable: unreadable.count,
            unreadableKeys: unreadableKeys, retired: retired, census: try keyCensus())
    }

    /// How many rows match `condition`; 0 when the table does not exist.
    private func outstandingCount(_ condition: String) throws(KeepsakeError) -> Int {
        let table = configuration.quotedTable
        return try perform("count values to re-seal", operation: .readAll, tableMissing: .answer(0)) { connection, _ in
            let rows = try await connection.collect(
                "SELECT count(*) FROM \(unescaped: table) WHERE \(unescaped: condition)",
                logger: PostgresStore.queryLogger)
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    /// Writes one batch of re-sealed values in a transaction that checks the table's seal first;
    /// the number of rows updated (a row whose version moved on keeps its value).
    private func resealBatch(
        _ batch: ([String], [Int64], [ByteBuffer]), table: String, on connection: PostgresConnection
    ) async throws -> Int {
        _ = try await connection.collect("BEGIN", logger: logger)
        do {
            try await TableSeal(store: self).check(on: connection)
            let (keys, versions, records) = batch
            let rows = try await connection.collect(
                """
                UPDATE \(unescaped: table) AS t SET record = v.record, version = t.version + 1, updated_at = now()
                FROM unnest(\(keys)::text[], \(versions)::int8[], \(records)::bytea[]) AS v(key, version, record)
                WHERE t.key = v.key AND t.version = v.version
                RETURNING t.key
                """, logger: logger)
            var count = 0
            for _ in rows { count += 1 }
            _ = try await connection.collect("COMMIT", logger: logger)
            return count
        } catch {
            do {
                _ = try await connection.collect("ROLLBACK", logger: logger)
            } catch {
                // The connection is broken or confused: the call closes it (never lent again).
            }
            throw error
        }
    }
}
#endif
