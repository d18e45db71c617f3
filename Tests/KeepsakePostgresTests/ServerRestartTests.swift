import Dispatch
import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Synchronization
import Testing

extension PostgresServerTests {
    /// `pg_ctl restart -m immediate` (the server's processes killed, then crash recovery) while a
    /// batch is in flight: the batch is applied whole or not at all, and the store carries on.
    @Suite("A server restart mid-run")
    struct ServerRestartTests {
        /// The pg_ctl command line scripts/postgres gives for the cluster.
        static var control: String? { TestServer.environment["KEEPSAKE_TEST_POSTGRES_CTL"] }

        /// Restarts the server at once, as a crash would (no checkpoint, recovery from the WAL).
        static func restartImmediately() throws {
            let control = try #require(control, "scripts/postgres sets KEEPSAKE_TEST_POSTGRES_CTL")
            let result = try Spawned.run(["/bin/sh", "-c", control + " restart -m immediate"])
            guard result.status == 0 else { throw TestFailure("pg_ctl restart failed: \(result.output)") }
        }

        /// Waits until a transaction that locked rows of `table` for a batch (`SELECT … FOR
        /// UPDATE`, then the `unnest` statement) is open on the server; false after `seconds`.
        static func waitForBatch(table: String, seconds: Double) throws -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                let result = try Spawned.run([
                    "/usr/bin/psql", "-X", "-q", "-t", "-A", SQL.psqlURI, "-c",
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE application_name = 'keepsake' AND state IN ('active', 'idle in transaction')
                        AND (query LIKE '%FOR UPDATE%' OR query LIKE '%unnest%') AND query LIKE '%\(table)%'
                    """
                ])
                if result.status == 0 && result.output.trimmingCharacters(in: .whitespacesAndNewlines) != "0" {
                    return true
                }
                usleep(5_000)
            }
            return false
        }

        @Test(
            "migrate run through a restart: the batch is applied whole or not at all; a second run finishes",
            .timeLimit(.minutes(3)))
        func migrateRunThroughRestart() throws {
            let directory =
                FileManager.default.temporaryDirectory.path + "/keepsake-pg-restart-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            let count = 20_000
            var midBatch = 0
            var statuses: [Int32] = []
            var failedRuns = 0
            for round in 0..<3 {
                let table = newTable("restart")
                try SQL.seedOldPeople(table: table, count: count)
                let store = storeURI(table: table)
                // A 10 s deadline per call: a run the restart fails ends sooner than with the
                // default 30 s (the pool waits for a connection until the deadline).
                let child = try Spawned(
                    [migrateBinary.path, "run", "--store", store + "&timeout=10"],
                    output: "\(directory)/run-\(round)")
                // Round 0 restarts while the records are being read; the others while the batch's
                // transaction is open.
                if round == 0 {
                    usleep(100_000)
                } else if try Self.waitForBatch(table: table, seconds: 60) {
                    midBatch += 1
                }
                try Self.restartImmediately()
                let (status, output) = try child.wait()
                // Finished through a transparent retry, or a typed error naming the store:
                // unavailable (69) or timeout (75); never a crash.
                #expect(
                    [0, 69, 75].contains(status),
                    "migrate run ended with \(status): \(output.suffix(800))")
                statuses.append(status)
                if status != 0 {
                    failedRuns += 1
                    #expect(output.contains(table), "the error names the store: \(output.suffix(800))")
                }
                let counts = try SQL.countMigrated(table: table)
                #expect(counts.rows == count)
                if status == 0 {
                    #expect(counts.migrated == count, "a run that reported success left records unmigrated")
                } else {
                    #expect(counts.migrated == 0 || counts.migrated == count, "a batch was applied in part")
                }
                let again = try migrateBinary.run(["run", "--store", store])
                #expect(again.status == 0, "the second run: \(again.stderr.suffix(800))")
                #expect(try SQL.countMigrated(table: table).migrated == count)
            }
            print(
                "server restart: 3 restarts during migrate run of \(count) records (\(midBatch) with the batch's transaction open); exit statuses \(statuses) (\(failedRuns) typed errors), no partial batch"
            )
        }

        @Test(
            "A store's batch through a restart is whole or absent, and the same store works afterwards",
            .timeLimit(.minutes(2)))
        func storeThroughRestart() throws {
            let count = 20_000
            var configuration = try PostgresConfiguration(parsing: TestServer.uniqueURI(prefix: "restartstore"))
            configuration.timeout = .seconds(10)
            let store = try PostgresStore(configuration: configuration)
            let table = store.configuration.table
            try store.setData(Data("before".utf8), forKey: "before")
            let writes = (0..<count).map { index in
                StoreWrite(key: "k\(index)", value: Data("value \(index)".utf8), expectation: .unchanged(nil))
            }
            let outcome = Mutex<Result<[StoreWriteResult], KeepsakeError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                do throws(KeepsakeError) {
                    let results = try store.commit(writes)
                    outcome.withLock { $0 = .success(results) }
                } catch {
                    outcome.withLock { $0 = .failure(error) }
                }
                done.signal()
            }
            let seen = try Self.waitForBatch(table: table, seconds: 60)
            try Self.restartImmediately()
            #expect(done.wait(timeout: .now() + 90) == .success, "the commit did not end within its deadline")
            let rows = Int(try SQL.run("SELECT count(*) FROM \(table) WHERE key LIKE 'k%'")) ?? -1
            switch try #require(outcome.withLock { $0 }) {
            case let .success(results):
                #expect(results.allSatisfy { $0 == .applied })
                #expect(rows == count, "a commit that reported success is not all there")
            case let .failure(error):
                #expect([.unavailable, .timeout].contains(error.code), "\(error)")
                #expect(rows == 0 || rows == count, "a batch was applied in part: \(rows) rows of \(count)")
                // A failure that does not say the batch may have been applied left nothing.
                #expect(
                    error.mayHaveBeenApplied || rows == 0,
                    "the batch was applied, the error does not say it may have been: \(error)")
                #expect(error.mayHaveBeenApplied == error.message.contains("may have been applied"), "\(error)")
            }
            // The pool reconnects: the store opened before the restart reads and writes again.
            #expect(try store.data(forKey: "before") == Data("before".utf8))
            try store.setData(Data("after".utf8), forKey: "after")
            #expect(try store.data(forKey: "after") == Data("after".utf8))
            print("server restart under a store's batch of \(count) writes: batch seen in flight \(seen), rows \(rows)")
        }
    }
}

/// A child process started with `posix_spawn` and waited for with `waitpid` on its own pid,
/// its standard output and error going to a file. The restart tests run processes while
/// others are running; Foundation's `Process` there once missed a child's exit (left a zombie
/// and waited forever), so these tests do not use it.
struct Spawned {
    let pid: pid_t
    let output: String

    /// Starts `arguments[0]` (an absolute path) with the rest as its arguments and this
    /// process's environment.
    init(_ arguments: [String], output: String) throws {
        self.output = output
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard status == 0 else { throw TestFailure("cannot start \(arguments[0]): errno \(status)") }
        self.pid = pid
    }

    /// Waits for the process: its exit status (or 128 + the signal that ended it) and output.
    func wait() throws -> (status: Int32, output: String) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw TestFailure("waitpid failed: errno \(errno)") }
        }
        let exited = status & 0x7f == 0
        let code = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, try String(contentsOfFile: output, encoding: .utf8))
    }

    /// Runs `arguments` to the end.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let output = FileManager.default.temporaryDirectory.path + "/keepsake-pg-spawn-" + UUID().uuidString
        defer { _ = try? FileManager.default.removeItem(atPath: output) }  // cleanup only
        return try Spawned(arguments, output: output).wait()
    }
}
