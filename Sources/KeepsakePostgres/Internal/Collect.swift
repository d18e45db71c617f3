#if PostgreSQL
import Logging
internal import PostgresNIO

extension PostgresConnection {
    /// Every row of `query`, collected on the connection's event loop.
    ///
    /// The store reads rows only this way, never through postgres-nio's back-pressured
    /// `PostgresRowSequence`: in postgres-nio 1.33 a connection that closes while such a sequence
    /// waits for its consumer's demand (a server restart during a long result) stops the process
    /// in a precondition of its row stream state machine ("How can we receive a body part, after
    /// a channelReadComplete…"). Collected rows are always in demand, so a lost connection there
    /// is an error like any other (ServerRestartTests).
    func collect(_ query: PostgresQuery, logger: Logger) async throws -> PostgresQueryResult {
        let result: EventLoopFuture<PostgresQueryResult> = self.query(query, logger: logger)
        return try await result.get()
    }
}
#endif
