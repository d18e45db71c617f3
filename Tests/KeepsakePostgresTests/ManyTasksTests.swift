import Dispatch
import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Synchronization
import Testing

extension PostgresServerTests {
    /// PostgresStore's calls are synchronous and postgres-nio is async: the store's bridge runs
    /// the async work on an event loop of its own, so a call blocks only its caller's thread —
    /// even when every thread of Swift's cooperative pool is such a caller.
    @Suite("Synchronous store calls from many Swift tasks")
    struct ManyTasksTests {
        static let tasks = 64

        /// Runs `body` in `tasks` child tasks of one task group at once (far more tasks than the
        /// cooperative pool has threads, each blocking its thread in a store call); waits for
        /// them from this thread for at most `seconds`, so that a deadlock fails the test instead
        /// of hanging it. The calls' own deadline (the store's timeout) frees the threads
        /// afterwards even then.
        static func runInTasks(
            seconds: Int, _ body: @escaping @Sendable (Int) -> Result<Bool, KeepsakeError>
        ) -> (finished: Bool, results: [Result<Bool, KeepsakeError>]) {
            let results = Mutex<[Result<Bool, KeepsakeError>]>([])
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                await withTaskGroup(of: Result<Bool, KeepsakeError>.self) { group in
                    for index in 0..<tasks {
                        group.addTask { body(index) }
                    }
                    for await result in group {
                        results.withLock { $0.append(result) }
                    }
                }
                done.signal()
            }
            let finished = done.wait(timeout: .now() + .seconds(seconds)) == .success
            return (finished, results.withLock { $0 })
        }

        @Test("64 tasks each calling data(forKey:) directly all finish, well within the store's deadline")
        func readsFromManyTasks() throws {
            var configuration = try PostgresConfiguration(parsing: TestServer.uniqueURI(prefix: "tasks"))
            configuration.timeout = .seconds(20)
            let store = try PostgresStore(configuration: configuration)
            for index in 0..<8 {
                try store.setData(Data("value \(index)".utf8), forKey: "k\(index)")
            }
            let start = ContinuousClock.now
            let (finished, results) = Self.runInTasks(seconds: 60) { index in
                do throws(KeepsakeError) {
                    return .success(try store.data(forKey: "k\(index % 8)") == Data("value \(index % 8)".utf8))
                } catch {
                    return .failure(error)
                }
            }
            let elapsed = ContinuousClock.now - start
            #expect(finished, "the calls did not finish within 60 s: deadlocked")
            #expect(results.count == Self.tasks)
            let failures = results.compactMap { result -> KeepsakeError? in
                if case let .failure(error) = result { return error }
                return nil
            }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            #expect(results.allSatisfy { $0 == .success(true) }, "a read returned another value")
            // A call that had to wait for its deadline to free a thread would take 20 s.
            #expect(elapsed < .seconds(15), "64 reads took \(elapsed)")
            print("64 synchronous reads from 64 tasks at once: \(elapsed)")
        }

        @Test("64 tasks each opening a store, writing and reading through it directly all finish")
        func openAndWriteFromManyTasks() throws {
            let uri = TestServer.uniqueURI(prefix: "taskopen")
            // The table exists before the tasks start: this is about the bridge, not about 64
            // first writers racing to create it.
            try PostgresStore(configuration: PostgresConfiguration(parsing: uri)).setData(Data(), forKey: "created")
            let start = ContinuousClock.now
            let (finished, results) = Self.runInTasks(seconds: 90) { index in
                do throws(KeepsakeError) {
                    var configuration = try PostgresConfiguration(parsing: uri)
                    configuration.timeout = .seconds(30)
                    configuration.maximumConnections = 1
                    let store = try PostgresStore(configuration: configuration)
                    try store.setData(Data("\(index)".utf8), forKey: "k\(index)")
                    return .success(try store.data(forKey: "k\(index)") == Data("\(index)".utf8))
                } catch {
                    return .failure(error)
                }
            }
            let elapsed = ContinuousClock.now - start
            #expect(finished, "the calls did not finish within 90 s: deadlocked")
            let failures = results.compactMap { result -> KeepsakeError? in
                if case let .failure(error) = result { return error }
                return nil
            }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            #expect(results.count == Self.tasks && results.allSatisfy { $0 == .success(true) })
            print("64 stores opened, written and read from 64 tasks at once: \(elapsed)")
        }
    }
}
