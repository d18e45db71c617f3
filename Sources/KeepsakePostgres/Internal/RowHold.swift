#if PostgreSQL
import Foundation
import Keepsake
internal import PostgresNIO

/// The steps of ``PostgresStore/exclusiveUpdate(forKey:_:)``: lock the row and read it (the
/// connection stays lent to the caller while its change runs), then write and commit on that
/// same connection — or roll back when the change threw.
struct RowHold: Sendable {
    /// A row locked by an open transaction on `connection`.
    struct Held: Sendable {
        let connection: PostgresConnection
        /// The stored bytes (sealed, for a sealed store), `nil` when no row has the key.
        let current: Data?
        let started: ContinuousClock.Instant
    }

    let store: PostgresStore
    let key: String

    /// How the update is named in messages.
    var batch: PostgresStore.Batch {
        PostgresStore.Batch(what: "update", key: key) { _, _ in .committed([]) }
    }

    /// Begins a transaction and locks the row (`SELECT … FOR UPDATE`): waits while another
    /// writer holds it.
    var hold: @Sendable (PostgresConnection, CallSession) async throws -> Held {
        let table = store.configuration.quotedTable
        let key = self.key
        let store = self.store
        return { connection, _ in
            let started = ContinuousClock.now
            _ = try await connection.collect("BEGIN", logger: store.logger)
            do {
                // Table seal (Internal/TableSeal.swift): another master key, or none, is refused
                // before anything is written.
                try await TableSeal(store: store).check(on: connection)
                let rows = try await connection.collect(
                    "SELECT record FROM \(unescaped: table) WHERE key = \(key) FOR UPDATE", logger: store.logger)
                let current = try rows.first.map { row in Data(try row.decode(ByteBuffer.self).readableBytesView) }
                store.instruments.waitedForLock(ContinuousClock.now - started)
                return Held(connection: connection, current: current, started: started)
            } catch  where PostgresStore.isMissingTable(error) {
                _ = try await connection.collect("ROLLBACK", logger: store.logger)
                try await store.createTable(on: connection)
                _ = try await connection.collect("BEGIN", logger: store.logger)
                return Held(connection: connection, current: nil, started: started)
            } catch {
                _ = try? await connection.collect("ROLLBACK", logger: store.logger)
                throw error
            }
        }
    }

    /// Writes `plain` (sealed for a sealed store) over the held row and commits; a `conflict`
    /// result when the row was absent and another writer inserted it meanwhile (rolled back:
    /// the update runs again).
    func write(
        _ plain: Data, over held: Held
    ) -> @Sendable (PostgresConnection, CallSession) async throws -> CommitAttempt {
        let table = store.configuration.quotedTable
        let key = self.key
        let store = self.store
        let record = ByteBuffer(bytes: store.sealer?.stored(plain, forKey: key) ?? plain)
        let exists = held.current != nil
        return { connection, session in
            let rows: PostgresQueryResult
            do {
                if exists {
                    rows = try await connection.collect(
                        """
                        UPDATE \(unescaped: table) SET record = \(record), version = version + 1, updated_at = now()
                        WHERE key = \(key) RETURNING txid_current()
                        """, logger: store.logger)
                } else {
                    rows = try await connection.collect(
                        """
                        INSERT INTO \(unescaped: table) (key, record, version) VALUES (\(key), \(record), 1)
                        ON CONFLICT (key) DO NOTHING RETURNING txid_current()
                        """, logger: store.logger)
                }
            } catch {
                _ = try? await connection.collect("ROLLBACK", logger: store.logger)
                throw error
            }
            guard let row = rows.first else {
                // Absent when read, inserted by another writer since: nothing written; read again.
                _ = try await connection.collect("ROLLBACK", logger: store.logger)
                store.instruments.conflicted()
                return .committed([.conflict])
            }
            let transaction = try row.decode(Int64.self)
            return try await BatchPlan.commit(
                on: connection, session: session, store: store, transaction: transaction, [.applied])
        }
    }

    /// Rolls the held transaction back: the change threw, nothing is written.
    func letGo(_ held: Held) -> @Sendable (PostgresConnection, CallSession) async throws -> Void {
        let store = self.store
        return { connection, _ in _ = try await connection.collect("ROLLBACK", logger: store.logger) }
    }
}
#endif
