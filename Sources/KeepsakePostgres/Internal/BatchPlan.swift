#if PostgreSQL
import Foundation
import Keepsake
import Logging
internal import PostgresNIO

/// One ``PostgresStore/commit(_:)`` batch, ready to run as one transaction: the values as they
/// are stored (sealed when the store is), cut into segments of distinct keys (one statement
/// each; a batch that writes a key twice has more than one segment).
struct BatchPlan: Sendable {
    /// What the write statement does with one row.
    enum Operation: Int16 {
        /// Insert or replace, whatever is stored.
        case upsert = 1
        /// Insert only if no row has the key.
        case insertIfAbsent = 2
        /// Replace only at the row version read.
        case updateAtVersion = 3
        /// Delete, whatever is stored.
        case delete = 4
        /// Delete only at the row version read.
        case deleteAtVersion = 5
    }

    let writes: [StoreWrite]
    /// Each write's value as stored: sealed for a sealed store.
    let stored: [Data?]
    let sealer: Sealer?
    let segments: [Range<Int>]

    init(writes: [StoreWrite], sealer: Sealer?) {
        self.writes = writes
        self.sealer = sealer
        stored = writes.map { write in write.value.map { value in sealer?.stored(value, forKey: write.key) ?? value } }
        var segments: [Range<Int>] = []
        var start = 0
        var seen = Set<Data>()
        for (index, write) in writes.enumerated() {
            let key = Data(write.key.utf8)
            if seen.contains(key) {
                segments.append(start..<index)
                start = index
                seen = []
            }
            seen.insert(key)
        }
        segments.append(start..<writes.count)
        self.segments = segments
    }

    /// Runs the batch in one transaction on `connection`.
    ///
    /// - Returns: The results once the server answered `COMMIT`, or, when the connection failed
    ///   after `COMMIT` was sent, what to ask the server about (``CommitAttempt/uncertain``).
    /// - Throws: What the server or the connection threw before `COMMIT` was sent: the
    ///   transaction rolled back, nothing applied.
    func attempt(on connection: PostgresConnection, store: PostgresStore, session: CallSession) async throws
        -> CommitAttempt
    {
        _ = try await connection.collect("BEGIN", logger: store.logger)
        var results: [StoreWriteResult] = []
        results.reserveCapacity(writes.count)
        var transaction: Int64?
        do {
            // Table seal (Internal/TableSeal.swift): a store with another master key, or none, is
            // refused before any write is sent.
            try await TableSeal(store: store).check(on: connection)
            for segment in segments {
                let (segmentResults, id) = try await apply(segment, on: connection, store: store)
                results += segmentResults
                transaction = transaction ?? id
            }
        } catch {
            do {
                _ = try await connection.collect("ROLLBACK", logger: store.logger)
            } catch {
                // The connection is broken or confused: the call closes it (never lent again).
            }
            throw error
        }
        return try await Self.commit(on: connection, session: session, store: store, transaction: transaction, results)
    }

    /// Sends `COMMIT`: `results` once answered; ``CommitAttempt/uncertain`` when the connection
    /// failed after it was sent.
    ///
    /// - Throws: The server's refusal of the `COMMIT` (it rolled the transaction back).
    static func commit(
        on connection: PostgresConnection, session: CallSession, store: PostgresStore, transaction: Int64?,
        _ results: [StoreWriteResult]
    ) async throws -> CommitAttempt {
        session.commitSent.store(true, ordering: .relaxed)
        do {
            _ = try await connection.collect("COMMIT", logger: store.logger)
        } catch let error as PSQLError where error.code == .server {
            // The server refused the COMMIT and rolled the transaction back.
            session.commitSent.store(false, ordering: .relaxed)
            throw error
        } catch {
            ConnectionPool.closeQuietly(connection)
            return .uncertain(transaction: transaction, results: results, reason: PostgresStore.describe(error))
        }
        return .committed(results)
    }

    /// Applies one segment; its results, and the transaction's id when it wrote anything.
    private func apply(
        _ segment: Range<Int>, on connection: PostgresConnection, store: PostgresStore
    ) async throws -> ([StoreWriteResult], Int64?) {
        let table = store.configuration.quotedTable
        var current: [Data: (version: Int64, record: Data)] = [:]
        if writes[segment].contains(where: { $0.expectation != .anything }) {
            let keys = writes[segment].map(\.key)
            let rows = try await connection.collect(
                """
                SELECT key, version, record FROM \(unescaped: table) WHERE key = ANY(\(keys)::text[])
                ORDER BY key COLLATE "C" FOR UPDATE
                """, logger: store.logger)
            for row in rows {
                let (key, version, record) = try row.decode((String, Int64, ByteBuffer).self)
                current[Data(key.utf8)] = (version, Data(record.readableBytesView))
            }
        }

        var results = [StoreWriteResult?](repeating: nil, count: segment.count)
        var transaction: Int64?
        var slots: [Int] = []
        var keys: [String] = []
        var operations: [Int16] = []
        var versions: [Int64] = []
        var records: [ByteBuffer] = []
        func add(_ slot: Int, _ operation: Operation, version: Int64) {
            let index = segment.lowerBound + slot
            slots.append(slot)
            keys.append(writes[index].key)
            operations.append(operation.rawValue)
            versions.append(version)
            records.append(ByteBuffer(bytes: stored[index] ?? Data()))
        }
        for (slot, index) in segment.enumerated() {
            let write = writes[index]
            switch write.expectation {
            case .anything:
                add(slot, write.value == nil ? .delete : .upsert, version: 0)
            case let .unchanged(expected):
                let row = current[Data(write.key.utf8)]
                var plain: Data?
                if let row {
                    do {
                        plain = try store.open(row.record, forKey: write.key)
                    } catch {
                        results[slot] = .failed(error)
                        continue
                    }
                }
                guard plain == expected else {
                    results[slot] = .conflict
                    continue
                }
                if let row {
                    add(slot, write.value == nil ? .deleteAtVersion : .updateAtVersion, version: row.version)
                } else if write.value == nil {
                    results[slot] = .applied
                } else {
                    add(slot, .insertIfAbsent, version: 0)
                }
            }
        }

        if !keys.isEmpty {
            let rows = try await connection.collect(
                """
                WITH w(key, op, expected, record) AS (
                    SELECT * FROM unnest(\(keys)::text[], \(operations)::int2[], \(versions)::int8[], \(records)::bytea[])),
                up AS (
                    INSERT INTO \(unescaped: table) AS r (key, record, version) SELECT key, record, 1 FROM w WHERE op = 1
                    ON CONFLICT (key) DO UPDATE SET record = EXCLUDED.record, version = r.version + 1, updated_at = now()
                    RETURNING r.key),
                ins AS (
                    INSERT INTO \(unescaped: table) AS r (key, record, version) SELECT key, record, 1 FROM w WHERE op = 2
                    ON CONFLICT (key) DO NOTHING RETURNING r.key),
                upd AS (
                    UPDATE \(unescaped: table) AS r SET record = w.record, version = r.version + 1, updated_at = now()
                    FROM w WHERE w.op = 3 AND r.key = w.key AND r.version = w.expected RETURNING r.key),
                del AS (
                    DELETE FROM \(unescaped: table) AS r USING w
                    WHERE w.op IN (4, 5) AND r.key = w.key AND (w.op = 4 OR r.version = w.expected) RETURNING r.key)
                SELECT txid_current(), array(
                    SELECT key FROM up UNION ALL SELECT key FROM ins UNION ALL SELECT key FROM upd
                    UNION ALL SELECT key FROM del)
                """, logger: store.logger)
            var applied = Set<Data>()
            guard let row = rows.first else { throw UnexpectedAnswer(what: "the write statement returned no row") }
            let (id, appliedKeys) = try row.decode((Int64, [String]).self)
            transaction = id
            for key in appliedKeys { applied.insert(Data(key.utf8)) }
            for (position, slot) in slots.enumerated() {
                let deleteAnyway = operations[position] == Operation.delete.rawValue
                results[slot] = deleteAnyway || applied.contains(Data(keys[position].utf8)) ? .applied : .conflict
            }
        }
        return (results.map { $0 ?? .conflict }, transaction)
    }
}

/// The server answered a statement of the store with something it cannot send.
struct UnexpectedAnswer: Error {
    let what: String
}
#endif
