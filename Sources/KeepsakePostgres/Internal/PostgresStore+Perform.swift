import Foundation
import Keepsake
import Logging
internal import PostgresNIO

extension PostgresStore {
    /// Runs `work` with the store's client on the bridge's event loop and waits for it, within
    /// the store's deadline; retries it on a new connection after a failure that left nothing
    /// applied (a lost or refused connection before `COMMIT`, a deadlock, a serialization
    /// failure), with a growing pause.
    ///
    /// - Parameters:
    ///   - what: The operation, for messages: "read", "commit 3 writes".
    ///   - key: The record key the operation is about, if one.
    ///   - retrying: Whether failures that left nothing applied are retried.
    ///   - tableMissing: The answer when the table does not exist (a read of a store not yet
    ///     written); `nil` makes that an error like any other.
    func perform<T: Sendable>(
        _ what: String, key: String? = nil, retrying: Bool, tableMissing: IfTableMissing<T> = .fail,
        _ work: @escaping @Sendable (PostgresClient) async throws -> T
    ) throws(KeepsakeError) -> T {
        let client = self.client
        let timeout = configuration.timeout
        let start = ContinuousClock.now
        let outcome = Bridge.wait(deadline: timeout + .seconds(1)) { () async throws -> T in
            var pause: Duration = .milliseconds(50)
            while true {
                do {
                    return try await work(client)
                } catch {
                    if case let .answer(answer) = tableMissing, Self.isMissingTable(error) { return answer }
                    guard retrying, Self.isRetryable(error), ContinuousClock.now - start + pause < timeout else {
                        throw error
                    }
                    try await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(1))
                }
            }
        }
        switch outcome {
        case let .finished(.success(value)):
            return value
        case let .finished(.failure(error)):
            throw mapError(error, what: what, key: key)
        case .timedOut:
            throw KeepsakeError(
                .timeout, store: uri, key: key,
                """
                could not \(what) within \(Self.seconds(timeout)) s; \
                \(what.hasPrefix("commit") ? "the batch was applied whole or not at all, and the server did not say which" : "nothing was changed")
                """)
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
        if error is CommitUncertain || error is CancellationError || error is KeepsakeError { return false }
        guard let error = error as? PSQLError else {
            // Connecting failed (refused, reset, no such socket): nothing was sent.
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

    /// `error` as a ``KeepsakeError`` naming this store; never a value or a password.
    func mapError(_ error: any Error, what: String, key: String?) -> KeepsakeError {
        if let error = error as? KeepsakeError { return error }
        if let error = error as? CommitUncertain {
            var mapped = mapError(error.underlying, what: what, key: key)
            mapped.message +=
                "; the connection was lost after COMMIT was sent: the batch was applied whole or not at all"
            return mapped
        }
        if error is CancellationError {
            return KeepsakeError(
                .timeout, store: uri, key: key, "could not \(what) within \(Self.seconds(configuration.timeout)) s")
        }
        guard let error = error as? PSQLError else {
            return KeepsakeError(
                .unavailable, store: uri, key: key,
                "could not \(what): the server cannot be reached (\(String(describing: error)))",
                cause: .other(String(describing: error)), underlying: error)
        }
        let state = error.serverInfo?[.sqlState]
        let serverMessage = error.serverInfo?[.message] ?? ""
        let cause = KeepsakeError.Cause.library(
            domain: "PostgreSQL", code: 0, message: state.map { "SQLSTATE \($0): \(serverMessage)" } ?? "\(error.code)")
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
                    "could not \(what): the server is shutting down, starting or full",
                    cause: cause)
            case "28P01", "28000", "42501":
                return KeepsakeError(
                    .permissionDenied, store: uri, key: key,
                    "could not \(what): the server refused the login or access",
                    cause: cause)
            case "3D000", "3F000":
                return KeepsakeError(
                    .unavailable, store: uri, key: key, "could not \(what): the database or schema does not exist",
                    cause: cause)
            default:
                return KeepsakeError(
                    .io, store: uri, key: key, "could not \(what): the server reported an error", cause: cause)
            }
        case .queryCancelled:
            return KeepsakeError(
                .timeout, store: uri, key: key, "could not \(what) within \(Self.seconds(configuration.timeout)) s",
                cause: cause)
        case .serverClosedConnection, .connectionError, .uncleanShutdown, .clientClosedConnection, .poolClosed:
            return KeepsakeError(
                .unavailable, store: uri, key: key, "could not \(what): the connection to the server was lost",
                cause: cause, underlying: error)
        case .sslUnsupported:
            return KeepsakeError(
                .unavailable, store: uri, key: key,
                "could not \(what): the server does not offer TLS, which sslmode=\(configuration.tlsMode.rawValue) requires",
                cause: cause)
        case .authMechanismRequiresPassword:
            return KeepsakeError(
                .permissionDenied, store: uri, key: key,
                "could not \(what): the server asks for a password; set PGPASSWORD or add it to a passfile",
                cause: cause)
        case .messageDecodingFailure, .unexpectedBackendMessage, .invalidCommandTag:
            return KeepsakeError(
                .corruptStore, store: uri, key: key,
                "could not \(what): the server sent an answer that does not decode",
                cause: cause)
        default:
            return KeepsakeError(.io, store: uri, key: key, "could not \(what)", cause: cause)
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

    /// The postgres-nio client configuration of `configuration`.
    static func clientConfiguration(_ configuration: PostgresConfiguration) -> PostgresClient.Configuration {
        var result: PostgresClient.Configuration
        switch configuration.endpoint {
        case let .tcp(host, port):
            let tlsConfiguration = Self.tlsConfiguration(configuration)
            let tls: PostgresClient.Configuration.TLS
            switch configuration.tlsMode {
            case .disable: tls = .disable
            case .allow, .prefer: tls = .prefer(tlsConfiguration)
            case .require, .verifyCA, .verifyFull: tls = .require(tlsConfiguration)
            }
            result = .init(
                host: host, port: port, username: configuration.user, password: configuration.password,
                database: configuration.database, tls: tls)
        case let .unixSocket(directory, port):
            result = .init(
                unixSocketPath: "\(directory)/.s.PGSQL.\(port)", username: configuration.user,
                password: configuration.password, database: configuration.database)
        }
        let (seconds, attoseconds) = configuration.timeout.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        result.options.connectTimeout = configuration.connectTimeout
        result.options.maximumConnections = configuration.maximumConnections
        result.options.additionalStartupParameters = [
            ("application_name", configuration.applicationName),
            ("statement_timeout", "\(max(1, milliseconds))")
        ]
        return result
    }
}

/// What a call answers when the store's table does not exist yet.
enum IfTableMissing<T: Sendable>: Sendable {
    /// The missing table is an error.
    case fail
    /// The store reads as empty: this is the answer.
    case answer(T)
}

/// A failure after a batch's `COMMIT` was sent: the batch may have been applied; never retried.
struct CommitUncertain: Error {
    let underlying: any Error
}
