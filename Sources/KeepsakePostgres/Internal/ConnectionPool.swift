#if PostgreSQL
import Foundation
import Keepsake
import Logging
internal import PostgresNIO
import Synchronization

/// The store's connections to the server: opened when a call needs one (never at start), kept
/// for the next call, at most `maximum` at once.
///
/// Keepsake keeps this pool instead of postgres-nio's `PostgresClient`, whose pool hides why a
/// connection could not be made: a caller waits for a connection until its own deadline
/// (30 s by default) whatever `connect_timeout` says, a refused password is tried again about
/// twenty times per call, and the error that reaches the caller names the pool's internal
/// types (measured on 1.33; issue notes in the CHANGELOG). Here each call connects itself, so
/// it sees the server's own answer at once: a refused login is reported as the server said it,
/// and a server that does not answer costs a call its connect timeout, not its deadline.
final class ConnectionPool: Sendable {
    /// Thrown by ``lease(connectBy:executor:)`` once ``shutdown()`` has begun.
    struct Closed: Error {}

    private struct Waiter {
        let id: Int
        /// Resumed with a connection handed over, or `nil` when a place to open one came free.
        let continuation: CheckedContinuation<PostgresConnection?, any Error>
    }

    private struct State {
        var idle: [PostgresConnection] = []
        /// Connections open, being opened, or lent: never more than `maximum`.
        var open = 0
        var waiters: [Waiter] = []
        /// Waiters whose task was cancelled before they were queued.
        var cancelled: Set<Int> = []
        var nextWaiter = 0
        var closed = false
    }

    private let state = Mutex(State())
    /// The call using each lent connection, by connection id: told when its connection closes.
    private let holders = Mutex<[Int: CallSession]>([:])
    private let configuration: PostgresConnection.Configuration
    private let maximum: Int
    private let logger: Logger
    private static let ids = Atomic<Int>(0)
    /// How many connections have been opened, for metrics and tests.
    let opened = Atomic<Int>(0)

    init(configuration: PostgresConnection.Configuration, maximum: Int, logger: Logger) {
        self.configuration = configuration
        self.maximum = max(1, maximum)
        self.logger = logger
    }

    /// A connection for one call: an idle one, a new one (connecting by `connectBy` at the
    /// latest), or the next one another call gives back.
    ///
    /// - Throws: What connecting threw (the server's own error for a refused login);
    ///   `ChannelError.connectTimeout` when `connectBy` passed; `CancellationError`; ``Closed``.
    /// `executor` is where connecting runs (the caller's: the bridge's event loop for a
    /// synchronous call, so that it never needs a thread of Swift's cooperative pool).
    func lease(connectBy: ContinuousClock.Instant, executor: (any TaskExecutor)?) async throws -> PostgresConnection {
        while true {
            try Task.checkCancellation()
            enum Next {
                case use(PostgresConnection)
                case connect
                case wait
                case closed
            }
            let next = state.withLock { state -> Next in
                if state.closed { return .closed }
                while let connection = state.idle.popLast() {
                    if !connection.isClosed { return .use(connection) }
                    state.open -= 1
                }
                if state.open < maximum {
                    state.open += 1
                    return .connect
                }
                return .wait
            }
            switch next {
            case let .use(connection):
                return connection
            case .closed:
                throw Closed()
            case .connect:
                do {
                    return try await connect(by: connectBy, executor: executor)
                } catch {
                    freePlace()
                    throw error
                }
            case .wait:
                if let connection = try await waitForTurn() { return connection }
            }
        }
    }

    /// Gives `connection` back: kept for the next call when `reusable` and still open, else closed.
    func release(_ connection: PostgresConnection, reusable: Bool) {
        enum Then {
            case handedOver(CheckedContinuation<PostgresConnection?, any Error>)
            case kept
            case close(CheckedContinuation<PostgresConnection?, any Error>?)
        }
        let then = state.withLock { state -> Then in
            guard reusable, !connection.isClosed, !state.closed else {
                state.open -= 1
                return .close(state.waiters.isEmpty ? nil : state.waiters.removeFirst().continuation)
            }
            if !state.waiters.isEmpty { return .handedOver(state.waiters.removeFirst().continuation) }
            state.idle.append(connection)
            return .kept
        }
        switch then {
        case let .handedOver(waiter):
            waiter.resume(returning: connection)
        case .kept:
            break
        case let .close(waiter):
            waiter?.resume(returning: nil)
            if !connection.isClosed { Self.close(connection, logger: logger) }
        }
    }

    /// Closes every idle connection and refuses every later lease; connections lent out are
    /// closed when they come back.
    func shutdown() {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: Closed()) }
        for connection in idle { Self.close(connection, logger: logger) }
    }

    /// Records that `session` uses `connection`, to be told if it closes.
    func track(_ connection: PostgresConnection, _ session: CallSession) {
        holders.withLock { $0[connection.id] = session }
    }

    /// `connection` is no longer used by a call.
    func untrack(_ connection: PostgresConnection) {
        _ = holders.withLock { $0.removeValue(forKey: connection.id) }
    }

    /// Whether ``shutdown()`` has begun.
    var isClosed: Bool { state.withLock { $0.closed } }

    private func connect(
        by deadline: ContinuousClock.Instant, executor: (any TaskExecutor)?
    ) async throws -> PostgresConnection {
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else { throw ChannelError.connectTimeout(.zero) }
        var configuration = self.configuration
        let (seconds, attoseconds) = remaining.components
        let allowed = TimeAmount.nanoseconds(max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        configuration.options.connectTimeout = min(configuration.options.connectTimeout, allowed)
        let logger = self.logger
        // The connect timeout covers the TCP connection only: a server that accepts and then
        // says nothing (a hung or overloaded server, a port forwarded to nowhere) would hold the
        // start-up until the call's deadline. The whole of connecting, TLS and login included,
        // races the connect deadline.
        let outcome = await Deadline.run(until: deadline, executor: executor) { [configuration] in
            // On the bridge's event loop: a synchronous call's work runs there too, so that its
            // queries cross no thread between the work and the socket.
            try await PostgresConnection.connect(
                on: Bridge.executor.loop, configuration: configuration,
                id: Self.ids.add(1, ordering: .relaxed).newValue, logger: logger)
        } onExpiry: {
        } late: { connection in
            Self.close(connection, logger: logger)
        }
        switch outcome {
        case let .finished(.success(connection)):
            opened.add(1, ordering: .relaxed)
            // Once per connection: whoever uses it when it closes is told.
            connection.closeFuture.whenComplete { [weak self] _ in
                self?.holders.withLock { $0[connection.id] }?.connectionClosed()
            }
            return connection
        case let .finished(.failure(error)):
            throw error
        case .expired, .aborted:
            throw ChannelError.connectTimeout(allowed)
        }
    }

    /// A place was given back without a connection: the first waiter may open one.
    private func freePlace() {
        let waiter = state.withLock { state -> CheckedContinuation<PostgresConnection?, any Error>? in
            state.open -= 1
            return state.waiters.isEmpty ? nil : state.waiters.removeFirst().continuation
        }
        waiter?.resume(returning: nil)
    }

    private func waitForTurn() async throws -> PostgresConnection? {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let refused = state.withLock { state -> (any Error)? in
                    if state.closed { return Closed() }
                    if state.cancelled.remove(id) != nil { return CancellationError() }
                    if state.open < maximum || !state.idle.isEmpty {
                        // A place came free between the look and now: try again.
                        continuation.resume(returning: nil)
                        return nil
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let refused { continuation.resume(throwing: refused) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                    return state.waiters.remove(at: index)
                }
                state.cancelled.insert(id)
                return nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Closes `connection` without waiting, to end whatever waits on it; a failure to close is
    /// of no interest (the connection is not used again either way).
    static func closeQuietly(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        // The connection must outlive its closing (postgres-nio checks that a connection is
        // closed before it goes away).
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Closes `connection` without waiting; a failure to close is logged (it is gone either way).
    static func close(_ connection: PostgresConnection, logger: Logger) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { result in
            withExtendedLifetime(connection) {}
            if case let .failure(error) = result {
                logger.debug("closing a connection failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
#endif
