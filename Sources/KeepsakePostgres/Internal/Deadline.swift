#if PostgreSQL
import Foundation
internal import PostgresNIO
import Synchronization

/// How a call raced against its deadline.
enum DeadlineOutcome<T: Sendable>: Sendable {
    /// The work finished first, with its result.
    case finished(Result<T, any Error>)
    /// The deadline passed first: the caller has its answer now, whatever the work still does.
    case expired
    /// `abort` fired first (the connection the work waits on closed).
    case aborted
}

/// What one attempt of a call holds while it runs: the connection it was lent, and whether it
/// has sent `COMMIT` — so that a deadline that passes can close the connection (ending whatever
/// waits on it) and say whether a write may have been applied, and so that the connection goes
/// back to the pool exactly once, whether the work or the call that gave up on it returns it.
final class CallSession: Sendable {
    private struct State {
        var connection: PostgresConnection?
        var expired = false
        /// The work succeeded and left its connection lent to the caller.
        var kept = false
        /// The connection went back to the pool (or was kept): nothing more to give back.
        var returned = false
        /// What to do when the connection in use closes (``ConnectionPool`` tells).
        var onClose: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())
    private let pool: ConnectionPool
    /// Set just before `COMMIT` is sent.
    let commitSent = Atomic<Bool>(false)

    init(pool: ConnectionPool) { self.pool = pool }

    /// Records the connection the attempt now uses; closes it at once when the deadline already
    /// passed, and says so at once when it closed already.
    func hold(_ connection: PostgresConnection) {
        let (expired, onClose) = state.withLock { state in
            state.connection = connection
            return (state.expired, state.onClose)
        }
        pool.track(connection, self)
        if expired { ConnectionPool.closeQuietly(connection) }
        if connection.isClosed { onClose?() }
    }

    /// Gives the connection in use back to the pool — kept for the next call when `reusable`
    /// — unless it already went back or was kept. Safe to call from the work and from the call
    /// that gave up on it.
    func giveBack(reusable: Bool) {
        guard
            let connection = state.withLock({ state -> PostgresConnection? in
                guard !state.returned, !state.kept, let connection = state.connection else { return nil }
                state.returned = true
                return connection
            })
        else { return }
        pool.untrack(connection)
        pool.release(connection, reusable: reusable)
    }

    /// Runs `action` when the connection in use closes (at once if it already has).
    func whenClosed(_ action: @escaping @Sendable () -> Void) {
        let connection = state.withLock { state in
            state.onClose = action
            return state.connection
        }
        if connection?.isClosed == true { action() }
    }

    /// The connection in use closed.
    func connectionClosed() {
        state.withLock { $0.onClose }?()
    }

    /// The work succeeded and its connection stays lent to the caller; `false` when the deadline
    /// passed first (then the caller never sees it, and the work gives it back).
    func keep() -> Bool {
        let connection = state.withLock { state -> PostgresConnection? in
            guard !state.expired, !state.returned else { return nil }
            state.kept = true
            return state.connection
        }
        guard let connection else { return false }
        pool.untrack(connection)
        return true
    }

    /// The deadline passed: closes the connection in use, if any, so that its queries fail now,
    /// and gives it back, not to be lent again — one the work had kept for a caller that will
    /// never see it too.
    func expire() {
        let connection = state.withLock { state -> PostgresConnection? in
            state.expired = true
            guard !state.returned, let connection = state.connection else { return nil }
            state.returned = true
            state.kept = false
            return connection
        }
        guard let connection else { return }
        ConnectionPool.closeQuietly(connection)
        pool.untrack(connection)
        pool.release(connection, reusable: false)
    }
}

enum Deadline {
    /// The event loop whose timers end calls at their deadlines: a timer there costs a heap
    /// entry, where a sleeping task costs a task and a Dispatch timer.
    static var timers: any EventLoop { Bridge.executor.loop }

    /// Runs `work` as a task of its own (on `executor` when given) and returns as soon as it
    /// finishes or `deadline` passes, whichever is first. When the deadline passes first, the
    /// work is cancelled and `onExpiry` runs (it closes the call's connection); the work's
    /// later result is dropped. So a call never outlives its deadline, whatever the server does.
    ///
    /// `late` receives a result the work produced after the deadline had answered (a connection
    /// made too late, to close). `abort`, when given, is handed a trigger that ends the race at
    /// once as ``DeadlineOutcome/aborted`` (the connection the work waits on closed).
    static func run<T: Sendable>(
        until deadline: ContinuousClock.Instant, executor: (any TaskExecutor)?,
        _ work: @escaping @Sendable () async throws -> T, onExpiry: @escaping @Sendable () -> Void,
        late: (@Sendable (T) -> Void)? = nil,
        abort: ((@escaping @Sendable () -> Void) -> Void)? = nil
    ) async -> DeadlineOutcome<T> {
        let race = Race<T>()
        return await withCheckedContinuation { continuation in
            race.start(continuation)
            let timer = timers.scheduleTask(in: TimeAmount(ContinuousClock.now.duration(to: deadline))) {
                if race.finish(.expired) {
                    race.cancelWork()
                    onExpiry()
                }
            }
            race.setWork(
                Task(executorPreference: executor) {
                    let result: Result<T, any Error>
                    do {
                        result = .success(try await work())
                    } catch {
                        result = .failure(error)
                    }
                    if race.finish(.finished(result)) {
                        timer.cancel()
                    } else if case let .success(value) = result {
                        late?(value)
                    }
                })
            abort?({
                if race.finish(.aborted) {
                    timer.cancel()
                    race.cancelWork()
                }
            })
        }
    }
}

extension TimeAmount {
    /// `duration` as a NIO time amount, at least zero.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else {
            self = .zero
            return
        }
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = overflow ? .hours(24 * 365) : .nanoseconds(nanoseconds + attoseconds / 1_000_000_000)
    }
}
/// The one answer of a ``Deadline/run(until:executor:_:onExpiry:)`` race.
private final class Race<T: Sendable>: Sendable {
    private let state = Mutex<
        (continuation: CheckedContinuation<DeadlineOutcome<T>, Never>?, work: Task<Void, Never>?)
    >(
        (nil, nil))

    func start(_ continuation: CheckedContinuation<DeadlineOutcome<T>, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func setWork(_ task: Task<Void, Never>) { state.withLock { $0.work = task } }

    func cancelWork() { state.withLock { $0.work }?.cancel() }

    /// Hands `outcome` to the caller if nothing was handed yet; whether it was.
    func finish(_ outcome: DeadlineOutcome<T>) -> Bool {
        guard
            let continuation = state.withLock({ state in
                defer { state.continuation = nil }
                return state.continuation
            })
        else { return false }
        continuation.resume(returning: outcome)
        return true
    }
}
#endif
