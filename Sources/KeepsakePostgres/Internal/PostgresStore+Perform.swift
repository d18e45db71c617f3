#if PostgreSQL
import Foundation
import Keepsake
import Logging
internal import PostgresNIO

extension PostgresStore {
    /// Runs `work` on a connection of the store's pool and returns its result, within the
    /// store's deadline whatever the server does (``Attempts`` says how failures are tried
    /// again). The work runs on the bridge's event loop, which the store's connections use too:
    /// a query and its answer cross no thread, and only the result comes back to the caller.
    ///
    /// - Parameters:
    ///   - what: The operation, for messages: "read", "commit 3 writes".
    ///   - key: The record key the operation is about, if one.
    ///   - operation: What the call does, for metrics and traces.
    ///   - retrying: Whether failures that left nothing applied are retried.
    ///   - tableMissing: The answer when the table does not exist (a read of a store not yet
    ///     written); `.fail` makes that an error like any other.
    ///   - deadline: When the call must end; the store's timeout from now by default.
    ///   - connectTimeout: How long connecting may be tried (the configuration's by default).
    ///   - given: A connection the call must use (one that holds a row since an earlier call),
    ///     instead of one from the pool; such a call is not retried.
    ///   - keep: Whether the connection stays lent to the caller when `work` succeeds (it holds a
    ///     row); the next call gives it as `given`.
    func call<T: Sendable>(
        _ what: String, key: String? = nil, operation: StoreOperation, retrying: Bool = true,
        tableMissing: IfTableMissing<T> = .fail, deadline: ContinuousClock.Instant? = nil,
        connectTimeout: Duration? = nil, on given: PostgresConnection? = nil,
        keep: Bool = false, _ work: @escaping @Sendable (PostgresConnection, CallSession) async throws -> T
    ) async throws(KeepsakeError) -> T {
        var attempts = Attempts(
            store: self, what: what, key: key, operation: operation, retrying: retrying, tableMissing: tableMissing,
            deadline: deadline, connectTimeout: connectTimeout, given: given, keep: keep, work: work)
        while true {
            let session = CallSession(pool: pool)
            let outcome = await Deadline.run(
                until: attempts.deadline, executor: Bridge.executor, attempts.attempt(session),
                onExpiry: { session.expire() }, abort: Attempts<T>.abortWhenClosed(session))
            switch attempts.next(after: outcome, session: session) {
            case let .done(value): return value
            case let .fail(error): throw error
            case let .pause(duration): try? await Task.sleep(for: duration)  // cancellation is seen by the next lease
            }
        }
    }

    /// ``call(_:key:operation:retrying:tableMissing:deadline:connectTimeout:on:keep:_:)`` for a
    /// synchronous caller: each attempt runs on the bridge's event loop, never on Swift's
    /// cooperative pool, while the calling thread waits for it until the deadline.
    func perform<T: Sendable>(
        _ what: String, key: String? = nil, operation: StoreOperation, retrying: Bool = true,
        tableMissing: IfTableMissing<T> = .fail, deadline: ContinuousClock.Instant? = nil,
        on given: PostgresConnection? = nil, keep: Bool = false,
        _ work: @escaping @Sendable (PostgresConnection, CallSession) async throws -> T
    ) throws(KeepsakeError) -> T {
        var attempts = Attempts(
            store: self, what: what, key: key, operation: operation, retrying: retrying, tableMissing: tableMissing,
            deadline: deadline, connectTimeout: nil, given: given, keep: keep, work: work)
        while true {
            let session = CallSession(pool: pool)
            let outcome = Bridge.race(
                until: attempts.deadline, attempts.attempt(session), onExpiry: { session.expire() },
                abort: Attempts<T>.abortWhenClosed(session))
            switch attempts.next(after: outcome, session: session) {
            case let .done(value): return value
            case let .fail(error): throw error
            case let .pause(duration): Thread.sleep(forTimeInterval: Double(duration.dispatchNanoseconds) / 1e9)
            }
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = attoseconds / 1_000_000_000_000_000
        return milliseconds == 0 ? "\(seconds)" : String(format: "%.3f", Double(seconds) + Double(milliseconds) / 1000)
    }

    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    static func isMissingTable(_ error: any Error) -> Bool {
        sqlState(error) == "42P01"
    }

    /// Whether `error` left nothing applied and may pass on another try.
    static func isRetryable(_ error: any Error) -> Bool {
        if let error = error as? ConnectionLost { return !error.commitSent }
        if error is CommitUncertain || error is CancellationError || error is KeepsakeError || error is ConnectFailed
            || error is ConnectionPool.Closed
        {
            return false
        }
        guard let error = error as? PSQLError else {
            // A connection that failed under a query: nothing was committed.
            return true
        }
        switch error.code {
        case .serverClosedConnection, .connectionError, .uncleanShutdown, .clientClosedConnection:
            return true
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            // Serialization failure, deadlock, the server shutting down or starting, too many
            // connections.
            return ["40001", "40P01", "57P01", "57P02", "57P03", "53300"].contains(state)
        default:
            return false
        }
    }

    /// Whether a connection that failed with `error` must not be lent again.
    static func isConnectionLost(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return !(error is KeepsakeError) }
        switch error.code {
        case .server:
            // The server ended the session (shutting down, terminated by an administrator).
            return (error.serverInfo?[.sqlState] ?? "").hasPrefix("57P")
        default:
            return true
        }
    }

    /// Whether a connection that could not be made may be made a moment later: a server that
    /// refused, did not answer, is starting or is full may; a refused login, a database that
    /// does not exist, a TLS setting the server does not support may not.
    static func mayConnectLater(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return true }
        switch error.code {
        case .server:
            return ["57P01", "57P02", "57P03", "53300"].contains(error.serverInfo?[.sqlState] ?? "")
        case .connectionError, .serverClosedConnection, .uncleanShutdown:
            return true
        default:
            return false
        }
    }

    /// What a failure to connect or a lost connection was, in words (never a dependency's type).
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return "the server said: \(message)" }
            if let underlying = error.underlying { return describe(underlying) }
            switch error.code {
            case .serverClosedConnection: return "the server closed the connection"
            case .uncleanShutdown: return "the connection ended uncleanly"
            case .clientClosedConnection: return "the connection was closed"
            default: return "the connection failed"
            }
        }
        if let error = error as? NIOConnectionError {
            if let failure = error.connectionErrors.first { return describe(failure.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil {
                return "the host name \(error.host) does not resolve"
            }
            return "no address of \(error.host) answered"
        }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        if let error = error as? ChannelError, case .connectTimeout = error { return "no answer in time" }
        if let error = error as? NIOSSLError { return "TLS failed (\(error))" }
        return "the connection failed"
    }

    /// `error` as a ``KeepsakeError`` naming this store; never a value or a password, never a
    /// dependency's internal type (that stays in ``KeepsakeError/underlying``).
    func mapError(_ error: any Error, what: String, key: String?) -> KeepsakeError {
        if let error = error as? KeepsakeError { return error }
        if let error = error as? ConnectionLost {
            return KeepsakeError(
                .unavailable, store: uri, key: key,
                error.commitSent
                    ? "could not \(what): the connection was lost after COMMIT was sent: the write may have been applied"
                    : "could not \(what): the connection to the server was lost; nothing was changed",
                mayHaveBeenApplied: error.commitSent)
        }
        if let error = error as? UnexpectedAnswer {
            return KeepsakeError(
                .corruptStore, store: uri, key: key,
                "could not \(what): the server's answer makes no sense (\(error.what))")
        }
        if let error = error as? UnknownFate {
            return KeepsakeError(.unavailable, store: uri, key: key, error.message, mayHaveBeenApplied: true)
        }
        if error is ConnectionPool.Closed {
            return KeepsakeError(
                .unavailable, store: uri, key: key, "could not \(what): the store was shut down; nothing was changed")
        }
        if let error = error as? ConnectFailed {
            if let mapped = serverRefusal(error.underlying, what: what, key: key) { return mapped }
            let reason = Self.describe(error.underlying)
            return KeepsakeError(
                .unavailable, store: uri, key: key,
                """
                could not \(what): the server cannot be reached (\(reason))\
                \(error.final ? "" : "; tried for \(Self.seconds(configuration.connectTimeout)) s (connect_timeout=)"); \
                nothing was changed
                """,
                cause: .other(reason), underlying: error.underlying)
        }
        if let error = error as? CommitUncertain {
            var mapped = mapError(error.underlying, what: what, key: key)
            mapped.code = .unavailable
            mapped.message += "; the connection was lost after COMMIT was sent: the write may have been applied"
            mapped.mayHaveBeenApplied = true
            return mapped
        }
        if error is CancellationError {
            return KeepsakeError(
                .timeout, store: uri, key: key, "could not \(what) within \(Self.seconds(configuration.timeout)) s")
        }
        guard let error = error as? PSQLError else {
            let reason = Self.describe(error)
            return KeepsakeError(
                .unavailable, store: uri, key: key, "could not \(what): \(reason)", cause: .other(reason),
                underlying: error)
        }
        if let mapped = serverRefusal(error, what: what, key: key) { return mapped }
        let state = error.serverInfo?[.sqlState]
        let serverMessage = error.serverInfo?[.message] ?? ""
        let cause = KeepsakeError.Cause.library(
            domain: "PostgreSQL", code: 0,
            message: state.map { "SQLSTATE \($0): \(serverMessage)" } ?? Self.describe(error))
        switch error.code {
        case .server:
            switch state ?? "" {
            case "57014":
                return KeepsakeError(
                    .timeout, store: uri, key: key,
                    "could not \(what) within \(Self.seconds(configuration.timeout)) s: the server cancelled the statement; nothing was changed",
                    cause: cause)
            case "57P01", "57P02", "57P03", "53300":
                return KeepsakeError(
                    .unavailable, store: uri, key: key,
                    "could not \(what): the server is shutting down, starting or full (\(serverMessage))",
                    cause: cause)
            default:
                return KeepsakeError(
                    .io, store: uri, key: key, "could not \(what): the server reported an error (\(serverMessage))",
                    cause: cause)
            }
        case .queryCancelled:
            return KeepsakeError(
                .timeout, store: uri, key: key, "could not \(what) within \(Self.seconds(configuration.timeout)) s",
                cause: cause)
        case .serverClosedConnection, .connectionError, .uncleanShutdown, .clientClosedConnection, .poolClosed:
            return KeepsakeError(
                .unavailable, store: uri, key: key,
                "could not \(what): the connection to the server was lost (\(Self.describe(error)))",
                cause: cause, underlying: error)
        case .sslUnsupported:
            return KeepsakeError(
                .unavailable, store: uri, key: key,
                "could not \(what): the server does not offer TLS, which sslmode=\(configuration.tlsMode.rawValue) requires",
                cause: cause)
        case .messageDecodingFailure, .unexpectedBackendMessage, .invalidCommandTag:
            return KeepsakeError(
                .corruptStore, store: uri, key: key,
                "could not \(what): the server sent an answer that does not decode",
                cause: cause)
        default:
            return KeepsakeError(.io, store: uri, key: key, "could not \(what) (\(Self.describe(error)))", cause: cause)
        }
    }

    /// The server's refusal of a login or an access, as what the server said: never retried.
    private func serverRefusal(_ error: any Error, what: String, key: String?) -> KeepsakeError? {
        guard let error = error as? PSQLError else { return nil }
        let who = "role \(configuration.user), database \(configuration.database)"
        if error.code == .authMechanismRequiresPassword {
            return KeepsakeError(
                .permissionDenied, store: uri, key: key,
                "could not \(what): the server asks \(who) for a password; set PGPASSWORD or add it to a passfile",
                cause: .library(domain: "PostgreSQL", code: 0, message: "password required"))
        }
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return nil }
        let message = error.serverInfo?[.message] ?? ""
        let cause = KeepsakeError.Cause.library(domain: "PostgreSQL", code: 0, message: "SQLSTATE \(state): \(message)")
        switch state {
        case "28P01", "28000":
            return KeepsakeError(
                .permissionDenied, store: uri, key: key,
                "could not \(what): the server refused the login of \(who): \(message); not retried", cause: cause)
        case "42501":
            return KeepsakeError(
                .permissionDenied, store: uri, key: key,
                "could not \(what): \(who) may not do this: \(message); nothing was changed", cause: cause)
        case "3D000", "3F000":
            return KeepsakeError(
                .unavailable, store: uri, key: key, "could not \(what): \(message) (\(who))", cause: cause)
        default:
            return nil
        }
    }

    /// The TLS settings of `configuration`'s `sslmode` and root certificates.
    static func tlsConfiguration(_ configuration: PostgresConfiguration) -> TLSConfiguration {
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        switch configuration.tlsMode {
        case .disable, .allow, .prefer, .require: tlsConfiguration.certificateVerification = .none
        case .verifyCA: tlsConfiguration.certificateVerification = .noHostnameVerification
        case .verifyFull: tlsConfiguration.certificateVerification = .fullVerification
        }
        if let roots = configuration.rootCertificatePath { tlsConfiguration.trustRoots = .file(roots) }
        return tlsConfiguration
    }
}

/// What a call answers when the store's table does not exist yet.
enum IfTableMissing<T: Sendable>: Sendable {
    /// The missing table is an error.
    case fail
    /// The store reads as empty: this is the answer.
    case answer(T)
}

/// A failure after a batch's `COMMIT` was sent: the batch may have been applied; never retried
/// blindly. `transaction` is the transaction's id, when it was learnt, so that its fate can be
/// asked of the server (`pg_xact_status`); `results` what the batch would have reported.
struct CommitUncertain: Error {
    let underlying: any Error
    var transaction: Int64? = nil
    var results: [StoreWriteResult] = []
}

/// The connection closed under a call whose queries did not fail: retried when `COMMIT` was not
/// sent (nothing was applied); "may have been applied" when it was.
struct ConnectionLost: Error {
    let commitSent: Bool
}

/// Connecting failed: `final` when it was not worth another try (a refused login).
struct ConnectFailed: Error {
    let underlying: any Error
    let final: Bool
}
#endif
