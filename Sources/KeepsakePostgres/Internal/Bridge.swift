#if PostgreSQL
import Dispatch
import Foundation
import Keepsake
// `package`: EventLoopTaskExecutor, which names NIO's EventLoop, is package API (the
// PostgreSQL benchmark runs its postgres-nio floor on it).
package import PostgresNIO
import Synchronization

/// A task executor that runs every job on one NIO event loop: how the bridge runs postgres-nio's
/// async work for the synchronous ``RecordStore`` calls. `package` for the PostgreSQL benchmark,
/// whose postgres-nio floor runs its reads on a connection's own loop likewise.
///
/// Every job of the work runs on one NIO event loop, chosen as the task's executor preference,
/// never on Swift's cooperative pool; the calling thread waits on a semaphore. So a synchronous
/// call made from inside a Swift task blocks only its own thread and cannot deadlock the pool,
/// even when every pool thread is blocked in such a call (ManyTasksTests: 64 tasks at once).
///
/// The rule that keeps it so: nothing the bridge waits for may need a cooperative thread. The
/// work runs in a task whose executor preference is this event loop (child tasks inherit it);
/// postgres-nio's own work runs on its connections' event loops; nothing here starts a
/// `Task.detached` or awaits an actor on the default executor. Code added here must keep to it.
package final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    // Sendable: `loop` is immutable and an EventLoop is thread-safe.
    package let loop: any EventLoop

    package init(loop: any EventLoop) { self.loop = loop }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}

/// The first outcome of a ``Bridge/race(until:_:onExpiry:abort:)``, handed from whichever
/// side ends it to the thread that waits.
final class RaceSlot<T: Sendable>: Sendable {
    private let value = Mutex<DeadlineOutcome<T>?>(nil)
    let done = DispatchSemaphore(value: 0)

    /// Records `outcome` if none was yet, and wakes the waiting thread; whether it was the first.
    @discardableResult
    func finish(_ outcome: DeadlineOutcome<T>) -> Bool {
        let first = value.withLock { value in
            guard value == nil else { return false }
            value = outcome
            return true
        }
        if first { done.signal() }
        return first
    }

    var outcome: DeadlineOutcome<T>? { value.withLock { $0 } }
}

enum Bridge {
    /// One event loop thread, apart from postgres-nio's connections, that runs every store's
    /// async work.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    static let executor = EventLoopTaskExecutor(loop: group.next())

    /// Runs `work` as a task on the bridge's event loop while the calling thread waits, until it
    /// finishes, `abort`'s trigger fires or `deadline` passes, whichever is first: the
    /// synchronous ``Deadline/run(until:executor:_:onExpiry:late:abort:)``, whose waiting thread
    /// is its own timer. When the deadline passes first, the work is cancelled and `onExpiry`
    /// runs (it closes the call's connection); the work's later result is dropped.
    static func race<T: Sendable>(
        until deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () async throws -> T,
        onExpiry: @escaping @Sendable () -> Void, abort: ((@escaping @Sendable () -> Void) -> Void)? = nil
    ) -> DeadlineOutcome<T> {
        let slot = RaceSlot<T>()
        let task = Task(executorPreference: executor) {
            do {
                slot.finish(.finished(.success(try await work())))
            } catch {
                slot.finish(.finished(.failure(error)))
            }
        }
        abort?({
            if slot.finish(.aborted) { task.cancel() }
        })
        if slot.done.wait(timeout: .now() + ContinuousClock.now.duration(to: deadline).dispatchInterval) == .timedOut,
            slot.finish(.expired)
        {
            task.cancel()
            onExpiry()
        }
        return slot.outcome ?? .expired
    }

    /// Starts `work` on the bridge's event loop without waiting for it (a client's `run()`).
    static func start(_ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task(executorPreference: executor) { await work() }
    }
}

extension Duration {
    /// This duration in whole nanoseconds, at least 1 (for `Thread.sleep` and Dispatch).
    var dispatchNanoseconds: Int {
        guard case let .nanoseconds(nanoseconds) = dispatchInterval else { return Int.max / 4 }
        return nanoseconds
    }

    /// This duration for Dispatch, in nanoseconds (at least 1).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, nanoseconds.partialValue < Int64(Int.max) / 2 else { return .seconds(Int.max / 4) }
        return .nanoseconds(max(1, Int(nanoseconds.partialValue + attoseconds / 1_000_000_000)))
    }
}
#endif
