import Dispatch
import Foundation
import Keepsake
internal import PostgresNIO

/// Runs postgres-nio's async work for the synchronous ``RecordStore`` calls.
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
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    // Sendable: `loop` is immutable and an EventLoop is thread-safe.
    let loop: any EventLoop

    init(loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}

/// A result handed from the task that computes it to the thread that waits for it.
final class ResultSlot<T: Sendable>: @unchecked Sendable {
    // Sendable: every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Result<T, any Error>?
    let done = DispatchSemaphore(value: 0)

    func fill(_ result: Result<T, any Error>) {
        lock.withLock { value = result }
        done.signal()
    }

    var result: Result<T, any Error>? { lock.withLock { value } }
}

/// How a blocking call ended.
enum BridgeOutcome<T: Sendable> {
    /// The work finished, with its result.
    case finished(Result<T, any Error>)
    /// The deadline passed and the work did not finish within the grace period after it was
    /// cancelled: its outcome is unknown.
    case timedOut
}

enum Bridge {
    /// One event loop thread, apart from postgres-nio's connections, that runs every store's
    /// async work.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    static let executor = EventLoopTaskExecutor(loop: group.next())

    /// Runs `work` on the bridge's event loop and waits for it for at most `deadline`; then
    /// cancels it and waits `grace` more for it to settle.
    static func wait<T: Sendable>(
        deadline: Duration, grace: Duration = .seconds(2), _ work: @escaping @Sendable () async throws -> T
    ) -> BridgeOutcome<T> {
        let slot = ResultSlot<T>()
        let task = Task(executorPreference: executor) {
            do {
                slot.fill(.success(try await work()))
            } catch {
                slot.fill(.failure(error))
            }
        }
        if slot.done.wait(timeout: .now() + deadline.dispatchInterval) == .success, let result = slot.result {
            return .finished(result)
        }
        task.cancel()
        if slot.done.wait(timeout: .now() + grace.dispatchInterval) == .success, let result = slot.result {
            return .finished(result)
        }
        return .timedOut
    }

    /// Starts `work` on the bridge's event loop without waiting for it (a client's `run()`).
    static func start(_ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task(executorPreference: executor) { await work() }
    }
}

extension Duration {
    /// This duration for Dispatch, in nanoseconds (at least 1).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, nanoseconds.partialValue < Int64(Int.max) / 2 else { return .seconds(Int.max / 4) }
        return .nanoseconds(max(1, Int(nanoseconds.partialValue + attoseconds / 1_000_000_000)))
    }
}
