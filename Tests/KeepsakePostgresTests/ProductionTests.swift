import Dispatch
import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Migrations
import ServiceLifecycle
import Synchronization
import Testing

/// A counter record: what the update tests increment.
struct TallyV0: ModelVersion, Equatable {
    static let version = 0
    var count: Int
}

let tallyChain = ModelChain<TallyV0>(name: "Tally", defaultKeys: ["tally"])

extension PostgresServerTests {
    /// The store as operators run it: outages, contention, start-up without the server,
    /// shutdown, deadlines (issue 32, "Servers in production").
    @Suite("Servers in production")
    struct ProductionTests {
        static var control: String? { TestServer.environment["KEEPSAKE_TEST_POSTGRES_CTL"] }

        static func pgCtl(_ verb: String) throws {
            let control = try #require(control, "scripts/postgres sets KEEPSAKE_TEST_POSTGRES_CTL")
            let result = try Spawned.run(["/bin/sh", "-c", control + " " + verb])
            guard result.status == 0 else { throw TestFailure("pg_ctl \(verb) failed: \(result.output)") }
        }

        /// Runs `body` with the server stopped, and starts it again whatever happens.
        static func withServerStopped<T>(_ body: () async throws -> T) async throws -> T {
            try pgCtl("stop -m fast")
            do {
                let result = try await body()
                try pgCtl("start -w")
                return result
            } catch {
                try pgCtl("start -w")
                throw error
            }
        }

        @Test("N tasks updating one row take turns: every increment is there, none conflicts", .timeLimit(.minutes(2)))
        func tasksTakeTurns() async throws {
            let store = try TestServer.store(prefix: "turns")
            let vault = Vault(store: store)
            let tasks = 8
            let each = 40
            let failures = await withTaskGroup(of: [String].self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        var failures: [String] = []
                        for index in 0..<each {
                            do {
                                // Half through the async API, half through the blocking one.
                                // The blocking callers on threads of their own, as an app's are: a
                                // blocking call on Swift's small cooperative pool would take the
                                // thread an async writer holding the row needs to finish.
                                if task % 2 == 0 {
                                    try await vault.update(tallyChain, forKey: "tally", attempts: 1) { current in
                                        TallyV0(count: (current?.count ?? 0) + 1)
                                    }
                                } else {
                                    try await onThread { () throws(KeepsakeError) in try incrementSynchronously(vault) }
                                }
                            } catch {
                                failures.append("\(task)/\(index): \(error)")
                            }
                        }
                        return failures
                    }
                }
                var all: [String] = []
                for await failures in group { all += failures }
                return all
            }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            #expect(try await vault.load(tallyChain, forKey: "tally")?.value.count == tasks * each)
        }

        @Test("a change that throws writes nothing and lets go of the row", .timeLimit(.minutes(1)))
        func throwingChangeLetsGo() async throws {
            struct Refused: Error {}
            let store = try TestServer.store(prefix: "letgo")
            let vault = Vault(store: store)
            try await vault.save(TallyV0(count: 5), in: tallyChain)
            let before = try await store.data(forKey: "tally")
            await #expect(throws: KeepsakeError.self) {
                try await vault.update(tallyChain, forKey: "tally") { _ in throw Refused() }
            }
            #expect(try await store.data(forKey: "tally") == before)
            // Not held any more: another update goes through at once.
            let started = ContinuousClock.now
            try await vault.update(tallyChain, forKey: "tally") { TallyV0(count: ($0?.count ?? 0) + 1) }
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(try await vault.load(tallyChain, forKey: "tally")?.value.count == 6)
        }

        @Test(
            "4 processes × 200 updates of one row through a server restart: 0 lost, 0 conflict",
            .timeLimit(.minutes(4)))
        func processesThroughRestart() throws {
            let table = newTable("restartupd")
            let store = storeURI(table: table)
            let directory =
                FileManager.default.temporaryDirectory.path + "/keepsake-pg-upd-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            let processes = 4
            let operations = 200
            var writers: [Spawned] = []
            for index in 0..<processes {
                writers.append(
                    try Spawned(
                        [
                            writerBinary.path, "--store", store, "--process", "w\(index)", "--tasks", "1",
                            "--operations", "\(operations)", "--shared", "1", "--updates-only"
                        ] + (index % 2 == 1 ? ["--sync"] : []),
                        output: "\(directory)/writer-\(index)"))
            }
            // Restart once the writers are well under way.
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                let exists = try SQL.run("SELECT to_regclass('\(table)') IS NOT NULL") == "t"
                if exists, Int(try SQL.run("SELECT coalesce(max(version), 0) FROM \(table)")) ?? 0 >= 100 { break }
                usleep(20_000)
            }
            try ServerRestartTests.restartImmediately()
            var tokens: [String] = []
            var failures: [String] = []
            for writer in writers {
                let (status, output) = try writer.wait()
                #expect(status == 0, "writer: \(output.suffix(600))")
                for line in output.split(separator: "\n") {
                    let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
                    if fields.first == "update", fields.count == 3 { tokens.append(fields[2]) }
                    if fields.first == "failed" { failures.append(String(line)) }
                }
            }
            let vault = Vault(store: try PostgresStore(configuration: PostgresConfiguration(parsing: store)))
            let alias = try #require(try vault.load(Person.chain, forKey: "shared-1")?.value.alias)
            let present = alias.split(separator: ",").map(String.init)
            let lost = tokens.filter { token in present.filter { $0 == token }.count != 1 }
            let conflicts = failures.filter { $0.contains(" conflict ") }
            #expect(lost.isEmpty, "successful updates missing from the row: \(lost.prefix(5))")
            #expect(conflicts.isEmpty, "\(conflicts.prefix(3))")
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            #expect(tokens.count + failures.count == processes * operations)
            print(
                "updates through a restart: \(processes) processes × \(operations) updates of one row; succeeded \(tokens.count), failed \(failures.count) (conflict \(conflicts.count)), lost \(lost.count)"
            )
        }

        @Test("with the server stopped every call fails unavailable within the connect timeout plus a second")
        func stoppedServerFailsFast() async throws {
            var configuration = try PostgresConfiguration(parsing: TestServer.uniqueURI(prefix: "stopped"))
            configuration.connectTimeout = .seconds(2)
            let store = try PostgresStore(configuration: configuration)
            try store.setData(Data("kept".utf8), forKey: "k")
            let vault = Vault(store: store)
            let timings = try await Self.withServerStopped {
                () async throws -> [(String, Duration, KeepsakeError.Code?)] in
                var timings: [(String, Duration, KeepsakeError.Code?)] = []
                func time(_ name: String, _ body: () async throws(KeepsakeError) -> Void) async {
                    let start = ContinuousClock.now
                    do throws(KeepsakeError) {
                        try await body()
                        timings.append((name, ContinuousClock.now - start, nil))
                    } catch {
                        timings.append((name, ContinuousClock.now - start, error.code))
                    }
                }
                func timeBlocking(_ name: String, _ body: () throws(KeepsakeError) -> Void) {
                    let start = ContinuousClock.now
                    do throws(KeepsakeError) {
                        try body()
                        timings.append((name, ContinuousClock.now - start, nil))
                    } catch {
                        timings.append((name, ContinuousClock.now - start, error.code))
                    }
                }
                timeBlocking("data (sync)", { () throws(KeepsakeError) in _ = try readSynchronously(store, "k") })
                await time("data (async)") { () async throws(KeepsakeError) in _ = try await store.data(forKey: "k") }
                timeBlocking("commit", { () throws(KeepsakeError) in try store.setData(Data("x".utf8), forKey: "k") })
                timeBlocking("keys", { () throws(KeepsakeError) in _ = try store.keys() })
                await time("update") { () async throws(KeepsakeError) in
                    try await vault.update(tallyChain, forKey: "tally") { TallyV0(count: ($0?.count ?? 0) + 1) }
                }
                await time("ready") { () async throws(KeepsakeError) in try await store.ready() }
                return timings
            }
            for (name, elapsed, code) in timings {
                #expect(code == .unavailable, "\(name): \(String(describing: code))")
                #expect(elapsed < .seconds(3), "\(name) took \(elapsed)")
            }
            // Back up: the same store carries on, and the failed writes wrote nothing.
            #expect(try await store.data(forKey: "k") == Data("kept".utf8))
            print("server stopped, connect_timeout=2: " + timings.map { "\($0.0) \($0.1)" }.joined(separator: ", "))
        }

        @Test("an app opens its store and serves while PostgreSQL is down, and uses it once it is up")
        func bootsWithoutItsDatabase() async throws {
            let uri = TestServer.uniqueURI(prefix: "boot")
            let (store, readiness) = try await Self.withServerStopped {
                () async throws -> (PostgresStore, KeepsakeError?) in
                let started = ContinuousClock.now
                let store = try PostgresStore(configuration: PostgresConfiguration(parsing: uri))
                #expect(ContinuousClock.now - started < .milliseconds(500), "opening waited for the server")
                // A request that does not touch the database is served.
                #expect(try await webhookHealth(store: store) == "serving")
                do throws(KeepsakeError) {
                    try await store.ready(timeout: .seconds(1))
                    return (store, nil)
                } catch {
                    return (store, error)
                }
            }
            #expect(readiness?.code == .unavailable, "\(String(describing: readiness))")
            try await store.ready()
            let vault = Vault(store: store)
            try await vault.save(TallyV0(count: 1), in: tallyChain)
            #expect(try await vault.load(tallyChain)?.value.count == 1)
        }

        @Test("a refused login is reported at once, as the server said it, and never tried again")
        func refusedLogin() throws {
            let tcp = try #require(TestServer.environment["KEEPSAKE_TEST_POSTGRES_TCP_URI"])
            let configuration = try PostgresConfiguration(
                parsing: tcp + "&table=" + newTable("auth"), environment: ["PGPASSWORD": "not-the-password"])
            let store = try PostgresStore(configuration: configuration)
            let started = ContinuousClock.now
            let error = #expect(throws: KeepsakeError.self) { try store.data(forKey: "k") }
            #expect(ContinuousClock.now - started < .seconds(2))
            #expect(error?.code == .permissionDenied)
            #expect(error?.message.contains("password authentication failed") == true, "\(String(describing: error))")
            #expect(error?.message.contains("role keepsake_pw, database keepsake") == true)
            #expect(error?.message.contains("not-the-password") == false)
            #expect(error?.message.contains("ConnectionPool") == false)
        }

        @Test(
            "a call never outlives its deadline by more than a second when the server dies under it",
            .timeLimit(.minutes(3)))
        func deadlineWhenTheServerDies() throws {
            var configuration = try PostgresConfiguration(parsing: TestServer.uniqueURI(prefix: "dies"))
            configuration.timeout = .seconds(3)
            configuration.connectTimeout = .seconds(2)
            let store = try PostgresStore(configuration: configuration)
            try store.setData(Data("x".utf8), forKey: "first")
            var elapsed: [Duration] = []
            for round in 0..<3 {
                let writes = (0..<30_000).map { StoreWrite(key: "k\(round)-\($0)", value: Data("v".utf8)) }
                let finished = Mutex<(Duration, KeepsakeError?)?>(nil)
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    let start = ContinuousClock.now
                    do throws(KeepsakeError) {
                        _ = try store.commit(writes)
                        finished.withLock { $0 = (ContinuousClock.now - start, nil) }
                    } catch {
                        finished.withLock { $0 = (ContinuousClock.now - start, error) }
                    }
                    done.signal()
                }
                usleep(UInt32(30_000 + round * 80_000))
                try Self.pgCtl("stop -m immediate")
                let ended = done.wait(timeout: .now() + 30)
                try Self.pgCtl("start -w")
                #expect(ended == .success, "round \(round): the commit did not end")
                let (duration, error) = try #require(finished.withLock { $0 })
                elapsed.append(duration)
                #expect(duration < .seconds(4), "round \(round): \(duration), \(String(describing: error))")
                if let error { #expect([.unavailable, .timeout].contains(error.code), "\(error)") }
                let rows = Int(try SQL.run("SELECT count(*) FROM \(configuration.table) WHERE key LIKE 'k\(round)-%'"))
                #expect(rows == 0 || rows == writes.count, "a batch was applied in part: \(String(describing: rows))")
                if error == nil { #expect(rows == writes.count) }
            }
            print("server killed under a batch, timeout=3: calls ended after \(elapsed)")
        }

        @Test("graceful shutdown through a ServiceGroup closes the store; later calls fail typed")
        func serviceGroupShutdown() async throws {
            let store = try TestServer.store(prefix: "service")
            let vault = Vault(store: store)
            let app = ExampleApp(vault: vault)
            let group = makeServices(vault: vault, store: store, app: app)
            let running = Task { try await group.run() }
            try await app.served.first()
            await group.triggerGracefulShutdown()
            try await running.value
            let error = await #expect(throws: KeepsakeError.self) { try await vault.load(tallyChain) }
            #expect(error?.code == .unavailable)
            #expect(error?.message.contains("shut down") == true, "\(String(describing: error))")
        }
    }
}

/// The blocking read (in an async context the async overload would be chosen).
func readSynchronously(_ store: PostgresStore, _ key: String) throws(KeepsakeError) -> Data? {
    try store.data(forKey: key)
}

/// Runs blocking `body` on a thread of its own (not one of Swift's cooperative pool) and waits.
func onThread(_ body: @escaping @Sendable () throws(KeepsakeError) -> Void) async throws(KeepsakeError) {
    let result: Result<Void, KeepsakeError> = await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            do throws(KeepsakeError) {
                try body()
                continuation.resume(returning: .success(()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    try result.get()
}

/// The blocking `update` (in an async context the async overload would be chosen).
func incrementSynchronously(_ vault: Vault) throws(KeepsakeError) {
    try vault.update(tallyChain, forKey: "tally", attempts: 1) { current in TallyV0(count: (current?.count ?? 0) + 1) }
}

/// A request the example app serves without its database.
func webhookHealth(store: PostgresStore) async throws -> String { "serving" }

/// An app service that serves one request through the store, then waits for shutdown.
struct ExampleApp: Service {
    let vault: Vault
    let served = AsyncSignal()

    func run() async throws {
        try await vault.save(TallyV0(count: 1), in: tallyChain)
        served.fire()
        try await gracefulShutdown()
    }
}

/// A one-shot signal tasks can wait for.
final class AsyncSignal: Sendable {
    private let state = Mutex<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func fire() {
        let waiters = state.withLock { state in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func first() async throws {
        await withCheckedContinuation { continuation in
            let fired = state.withLock { state in
                if !state.fired { state.waiters.append(continuation) }
                return state.fired
            }
            if fired { continuation.resume() }
        }
    }
}
