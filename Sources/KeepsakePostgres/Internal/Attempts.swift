#if PostgreSQL
import Foundation
import Keepsake
import Logging
internal import PostgresNIO
import Tracing

/// The attempts of one store call and what comes after each: shared by the async
/// (`PostgresStore.call`) and the synchronous (`PostgresStore.perform`) drivers, which differ
/// only in how they wait for an attempt and pause between two.
///
/// - Connecting honours the connect timeout: a server that refuses or does not answer is tried
///   again (with a growing pause) until `connect_timeout` has passed since the call needed a
///   connection, then the call is ``KeepsakeError/Code/unavailable``; a refused login is
///   reported at once, as the server said it, never tried again.
/// - A failure that left nothing applied (a connection lost before `COMMIT` was sent, a
///   deadlock, a serialization failure, a server shutting down) is retried on a new connection
///   while the deadline allows.
/// - When the deadline passes the call returns at once; the connection it held is closed, which
///   ends whatever still waits on it.
struct Attempts<T: Sendable> {
    /// What to do after an attempt.
    enum Next {
        case done(T)
        case fail(KeepsakeError)
        /// Wait this long, then make another attempt.
        case pause(Duration)
    }

    let store: PostgresStore
    let what: String
    let key: String?
    let operation: StoreOperation
    let retrying: Bool
    let tableMissing: IfTableMissing<T>
    let deadline: ContinuousClock.Instant
    let connectTimeout: Duration
    /// A connection the call must use (one that holds a row since an earlier call), instead of
    /// one from the pool; such a call is not retried.
    let given: PostgresConnection?
    /// Whether the connection stays lent to the caller when the work succeeds (it holds a row).
    let keep: Bool
    let work: @Sendable (PostgresConnection, CallSession) async throws -> T
    private let start: ContinuousClock.Instant
    private let span: any Span
    private var pause: Duration = .milliseconds(50)
    /// Connecting may be tried until this instant; a new window opens after a connection that
    /// worked was lost.
    private var connectBy: ContinuousClock.Instant
    private var lastConnectFailure: (any Error)?

    init(
        store: PostgresStore, what: String, key: String?, operation: StoreOperation, retrying: Bool,
        tableMissing: IfTableMissing<T>, deadline: ContinuousClock.Instant?, connectTimeout: Duration?,
        given: PostgresConnection?, keep: Bool,
        work: @escaping @Sendable (PostgresConnection, CallSession) async throws -> T
    ) {
        let start = ContinuousClock.now
        self.store = store
        self.what = what
        self.key = key
        self.operation = operation
        self.retrying = retrying
        self.tableMissing = tableMissing
        self.deadline = deadline ?? start + store.configuration.timeout
        self.connectTimeout = connectTimeout ?? store.configuration.connectTimeout
        self.given = given
        self.keep = keep
        self.work = work
        self.start = start
        self.span = store.instruments.startSpan(operation)
        self.connectBy = min(self.deadline, start + self.connectTimeout)
    }

    /// One attempt: a connection (leased, or the one given), the work on it, and the connection
    /// given back — or kept for the caller.
    func attempt(_ session: CallSession) -> @Sendable () async throws -> T {
        let (pool, given, keep, work, connectBy) = (store.pool, given, keep, work, connectBy)
        return {
            let connection: PostgresConnection
            if let given {
                connection = given
            } else {
                do {
                    connection = try await pool.lease(connectBy: connectBy, executor: Bridge.executor)
                } catch {
                    throw LeaseFailed(underlying: error)
                }
            }
            session.hold(connection)
            do {
                let value = try await work(connection, session)
                if keep {
                    guard session.keep() else { throw CancellationError() }
                } else {
                    session.giveBack(reusable: true)
                }
                return value
            } catch {
                session.giveBack(reusable: given == nil && !PostgresStore.isConnectionLost(error))
                throw error
            }
        }
    }

    /// Ends an attempt as aborted when its connection closes under it without its queries failing
    /// (postgres-nio 1.33 can leave a query unanswered when the server is killed). A moment's
    /// grace lets a work that closed the connection itself (an unanswered `COMMIT`) return its
    /// own answer.
    static func abortWhenClosed(_ session: CallSession) -> (@escaping @Sendable () -> Void) -> Void {
        { trigger in session.whenClosed { _ = Deadline.timers.scheduleTask(in: .milliseconds(300)) { trigger() } } }
    }

    /// What comes after an attempt that ended as `outcome`.
    mutating func next(after outcome: DeadlineOutcome<T>, session: CallSession) -> Next {
        let instruments = store.instruments
        let failure: any Error
        switch outcome {
        case let .finished(.success(value)):
            if lastConnectFailure != nil { instruments.reconnected() }
            instruments.finished(operation, span: span, outcome: "ok", after: ContinuousClock.now - start)
            return .done(value)
        case let .finished(.failure(error as LeaseFailed)):
            let error = error.underlying
            store.logger.debug(
                "connecting failed",
                metadata: ["operation": "\(operation.rawValue)", "error": "\(PostgresStore.describe(error))"])
            if error is CancellationError || error is ConnectionPool.Closed {
                return fail(error)
            }
            guard PostgresStore.mayConnectLater(error) else {
                return fail(ConnectFailed(underlying: error, final: true))
            }
            guard ContinuousClock.now + pause < connectBy else {
                return fail(ConnectFailed(underlying: error, final: false))
            }
            lastConnectFailure = error
            return pauseBeforeRetry(newConnectWindow: false)
        case let .finished(.failure(error)):
            if lastConnectFailure != nil { instruments.reconnected() }
            lastConnectFailure = nil
            store.logger.debug(
                "a call failed",
                metadata: ["operation": "\(operation.rawValue)", "error": "\(PostgresStore.describe(error))"])
            if case let .answer(answer) = tableMissing, PostgresStore.isMissingTable(error) {
                instruments.finished(operation, span: span, outcome: "ok", after: ContinuousClock.now - start)
                return .done(answer)
            }
            failure = error
        case .aborted:
            session.giveBack(reusable: false)
            failure = ConnectionLost(commitSent: session.commitSent.load(ordering: .relaxed))
        case .expired:
            instruments.finished(
                operation, span: span, outcome: KeepsakeError.Code.timeout.rawValue, after: ContinuousClock.now - start)
            let written = session.commitSent.load(ordering: .relaxed)
            return .fail(
                KeepsakeError(
                    .timeout, store: store.uri, key: key,
                    """
                    could not \(what) within \(PostgresStore.seconds(store.configuration.timeout)) s (timeout=); \
                    \(written ? "COMMIT was sent and not answered: the write may have been applied" : "nothing was changed")
                    """, mayHaveBeenApplied: written))
        }
        guard retrying, given == nil, PostgresStore.isRetryable(failure), ContinuousClock.now + pause < deadline else {
            return fail(failure)
        }
        return pauseBeforeRetry(newConnectWindow: true)
    }

    private mutating func pauseBeforeRetry(newConnectWindow: Bool) -> Next {
        store.instruments.retried()
        let current = pause
        pause = min(pause * 2, .milliseconds(500))
        if newConnectWindow { connectBy = min(deadline, ContinuousClock.now + current + connectTimeout) }
        return .pause(current)
    }

    private func fail(_ error: any Error) -> Next {
        let mapped = store.mapError(error, what: what, key: key)
        store.instruments.finished(
            operation, span: span, outcome: mapped.code.rawValue, after: ContinuousClock.now - start)
        return .fail(mapped)
    }
}

/// Leasing a connection failed (connecting, or the pool closed): told apart from the work's own
/// failures, which are retried by other rules.
struct LeaseFailed: Error {
    let underlying: any Error
}
#endif
