import Dispatch
import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

private typealias TickV0 = ObservableStoreContract.Tick
private let tickChain = ObservableStoreContract.tickChain

/// The updates one consumer has seen so far (KeepsakeTesting's recorder), waited for
/// generously: a 2-core machine runs other builds and tests beside these.
private typealias Seen<Latest: ModelVersion> = UpdateRecorder<RecordUpdate<Latest>>

extension UpdateRecorder {
    fileprivate func wait(after: Int, for matches: (Element) -> Bool) async -> Bool {
        await wait(after: after, within: .seconds(60), for: matches)
    }
}

private func isAbsent<Latest>(_ update: RecordUpdate<Latest>) -> Bool {
    if case .absent = update { return true }
    return false
}

private func storedVersion<Latest>(_ update: RecordUpdate<Latest>) -> Int? {
    if case let .record(record) = update { return record.storedVersion }
    return nil
}

/// `Ada@0`, `absent`, `failed:unavailable`: for messages.
private func describe(_ update: RecordUpdate<PersonV3>) -> String {
    switch update {
    case let .record(record): return "\(record.value.alias)@\(record.storedVersion)"
    case .absent: return "absent"
    case let .unreadable(error): return "unreadable:\(error.code)"
    case let .locked(error): return "locked:\(error.code)"
    case let .failed(error): return "failed:\(error.code)"
    }
}

/// Runs `work` (a child process, psql) on a thread of its own (`Blocking`), so that waiting
/// for it holds no thread of a shared pool.
@discardableResult
private func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Blocking.start { continuation.resume(with: Result { try work() }) }
    }
}

/// What a child process printed, gathered as it arrives.
private final class Received: Sendable {
    let text = Mutex("")
}

/// Waits up to `bound` for `done`, without holding a thread of the shared pool.
private func settle(within bound: Duration = .seconds(30), _ done: @escaping @Sendable () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + bound
    while try await !offPool(done), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
}

/// The sessions of the test database that are a watch's listening connection, as the server
/// lists them (`pg_stat_activity`).
private func listeningSessions() throws -> Int {
    let text = try SQL.run(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'keepsake watch'"
    )
    guard let count = Int(text) else { throw TestFailure("unexpected psql output: \(text)") }
    return count
}

extension PostgresServerTests {
    /// `Vault.updates(for:)` on a PostgreSQL store: `LISTEN`/`NOTIFY` hints from the table's
    /// trigger, read again before anything is yielded.
    @Suite("updates(for:) on PostgreSQL")
    struct PostgresUpdatesTests {
        @Test(
            "another process's migrate put, run and delete, and psql's writes, are each seen",
            .timeLimit(.minutes(5)))
        func otherProcesses() async throws {
            let table = newTable("upd")
            let uri = storeURI(table: table)
            let store = try PostgresStore(configuration: try PostgresConfiguration(parsing: uri))
            let seen = Seen<PersonV3>()
            let consumer = seen.consume(Vault(store: store).updates(of: Person.chain, forKey: "person"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0, for: isAbsent), "absent first: \(seen.all.map(describe))")

            // The table does not exist yet: the put creates it, with its trigger.
            var count = seen.all.count
            var started = ContinuousClock.now
            let put = try await offPool {
                try migrateBinary.run(["put", "person", "--store", uri], stdin: #"{"name":"Ada","age":"36"}"#)
            }
            #expect(put.status == 0, "\(put.stderr)")
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Ada" && storedVersion($0) == 0 },
                "the put is seen as Ada at version 0: \(seen.all.map(describe))")
            print("PostgresUpdatesTests: put seen \(ContinuousClock.now - started) after it started")

            count = seen.all.count
            started = ContinuousClock.now
            let run = try await offPool { try migrateBinary.run(["run", "--store", uri, "--device-id", "test-device"]) }
            #expect(run.status == 0, "\(run.stderr)")
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Ada" && storedVersion($0) == 3 },
                "the run is seen as Ada at version 3: \(seen.all.map(describe))")
            print("PostgresUpdatesTests: run seen \(ContinuousClock.now - started) after it started")

            count = seen.all.count
            let delete = try await offPool { try migrateBinary.run(["delete", "person", "--store", uri]) }
            #expect(delete.status == 0, "\(delete.stderr)")
            #expect(
                await seen.wait(after: count, for: isAbsent), "the delete is seen as absent: \(seen.all.map(describe))")

            // Writers that know nothing of Keepsake: the trigger notifies for them too.
            count = seen.all.count
            try await offPool {
                try SQL.run(
                    """
                    INSERT INTO \(table) (key, record, version)
                    VALUES ('person', convert_to('{"name":"Bea","age":"7"}', 'UTF8'), 1)
                    """)
            }
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Bea" && storedVersion($0) == 0 },
                "psql's insert is seen: \(seen.all.map(describe))")
            count = seen.all.count
            try await offPool { try SQL.run("TRUNCATE \(table)") }
            #expect(await seen.wait(after: count, for: isAbsent), "psql's TRUNCATE is seen: \(seen.all.map(describe))")
        }

        @Test(
            "a table psql made (no trigger) gets its trigger from the watch; psql's update is then seen",
            .timeLimit(.minutes(3)))
        func tableWithoutTrigger() async throws {
            let table = newTable("updpsql")
            try await offPool { try SQL.seedOldPeople(table: table, count: 3) }
            #expect(try SQL.run("SELECT count(*) FROM pg_trigger WHERE tgrelid = '\(table)'::regclass") == "0")
            let store = try PostgresStore(configuration: try PostgresConfiguration(parsing: storeURI(table: table)))
            let seen = Seen<PersonV3>()
            let consumer = seen.consume(Vault(store: store).updates(of: Person.chain, forKey: "p2"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0) { $0.value?.alias == "n2" }, "\(seen.all.map(describe))")
            try await settle {
                try SQL.run("SELECT count(*) FROM pg_trigger WHERE tgrelid = '\(table)'::regclass") == "2"
            }
            #expect(
                try SQL.run("SELECT count(*) FROM pg_trigger WHERE tgrelid = '\(table)'::regclass") == "2",
                "the watch installed the row and TRUNCATE triggers")

            let count = seen.all.count
            try await offPool {
                try SQL.run(
                    """
                    UPDATE \(table) SET record = convert_to('{"data":{"age":"2","name":"Zed"},"schema":"Person","version":0}', 'UTF8'),
                        version = version + 1 WHERE key = 'p2'
                    """)
            }
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Zed" },
                "psql's update is seen: \(seen.all.map(describe))")
        }

        @Test("another instance's writes are seen: a second store on the same table", .timeLimit(.minutes(3)))
        func anotherInstance() async throws {
            let uri = storeURI(table: newTable("updinst"))
            let watched = try PostgresStore(configuration: try PostgresConfiguration(parsing: uri))
            let writer = Vault(store: try PostgresStore(configuration: try PostgresConfiguration(parsing: uri)))
            let seen = Seen<TickV0>()
            let consumer = seen.consume(Vault(store: watched).updates(of: tickChain, forKey: "tick"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0, for: isAbsent))
            try await writer.save(TickV0(tick: 1), in: tickChain, forKey: "tick")
            #expect(await seen.wait(after: 0) { $0.value?.tick == 1 }, "\(seen.all.map(\.value))")
            let count = seen.all.count
            try await writer.save(TickV0(tick: 1), in: tickChain, forKey: "other")
            try await writer.remove(forKey: "tick")
            #expect(await seen.wait(after: count, for: isAbsent), "\(seen.all.map(\.value))")
            try await Task.sleep(for: .milliseconds(300))
            #expect(
                seen.all.map { $0.value?.tick } == [nil, 1, nil],
                "absent, 1, absent — a write to another key yields nothing: \(seen.all.map(\.value))")
        }

        @Test(
            "a burst of 1,000 writes by another instance ends with the last value, never an older one after a newer",
            .timeLimit(.minutes(5)))
        func burst() async throws {
            let uri = storeURI(table: newTable("updburst"))
            let watched = try PostgresStore(configuration: try PostgresConfiguration(parsing: uri))
            let writer = Vault(store: try PostgresStore(configuration: try PostgresConfiguration(parsing: uri)))
            let seen = Seen<TickV0>()
            let consumer = seen.consume(Vault(store: watched).updates(of: tickChain, forKey: "tick"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0, for: isAbsent))

            let started = ContinuousClock.now
            for tick in 1...1_000 { try await writer.save(TickV0(tick: tick), in: tickChain, forKey: "tick") }
            let written = ContinuousClock.now
            #expect(
                await seen.wait(after: 0) { $0.value?.tick == 1_000 },
                "the last write is seen: \(seen.all.compactMap(\.value?.tick).suffix(10))")
            print(
                "PostgresUpdatesTests: 1,000 writes in \(written - started), the last seen \(ContinuousClock.now - written) after; \(seen.all.count) updates"
            )
            try await Task.sleep(for: .milliseconds(500))
            let ticks = seen.all.compactMap(\.value?.tick)
            #expect(ticks.last == 1_000, "\(ticks.suffix(10))")
            #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $0 < $1 }, "values in order: \(ticks)")
            #expect(seen.all.allSatisfy { $0.value != nil || isAbsent($0) }, "nothing but values")
        }

        @Test(
            "when the consumer stops, the listening connection is closed: none left in this process or on the server",
            .timeLimit(.minutes(3)))
        func release() async throws {
            try await settle { try WatchCount.open == 0 && listeningSessions() == 0 }
            let before = WatchCount.open
            #expect(try listeningSessions() == 0, "no earlier watch left a listening session")

            let store = try TestServer.store(prefix: "updrel")
            #expect(store.notificationChannel == "keepsake:\(store.configuration.table)")
            let seen = Seen<PersonV3>()
            let consumer = seen.consume(Vault(store: store).updates(of: Person.chain, forKey: "person"))
            #expect(await seen.wait(after: 0, for: isAbsent))
            #expect(WatchCount.open == before + 1, "a watch is open while observed")
            try await settle { try listeningSessions() == 1 }
            #expect(try listeningSessions() == 1, "the server shows the watch's session")
            consumer.cancel()
            _ = await consumer.value
            try await settle { try WatchCount.open == before && listeningSessions() == 0 }
            #expect(WatchCount.open == before, "the watch's task ended")
            #expect(try listeningSessions() == 0, "the server holds no session of the watch")
        }

        @Test(
            "after a server restart the watch reconnects, and a write made meanwhile is seen",
            .timeLimit(.minutes(5)), .enabled(if: ServerRestartTests.control != nil, "needs pg_ctl"))
        func reconnects() async throws {
            let uri = storeURI(table: newTable("updrestart"))
            let watched = try PostgresStore(configuration: try PostgresConfiguration(parsing: uri))
            let seen = Seen<TickV0>()
            let consumer = seen.consume(Vault(store: watched).updates(of: tickChain, forKey: "tick"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0, for: isAbsent))
            try await settle { try listeningSessions() == 1 }

            try await offPool { try ServerRestartTests.restartImmediately() }
            // Written as soon as the server is back, likely before the watch listens again: the
            // "read everything" hint after reconnecting covers it.
            let writer = Vault(store: try PostgresStore(configuration: try PostgresConfiguration(parsing: uri)))
            try await writer.save(TickV0(tick: 7), in: tickChain, forKey: "tick")
            #expect(
                await seen.wait(after: 0) { $0.value?.tick == 7 },
                "the write after the restart is seen: \(seen.all.map { $0.value?.tick ?? -1 })")
            try await settle { try listeningSessions() == 1 }
            #expect(try listeningSessions() == 1, "listening again")
            let count = seen.all.count
            try await writer.save(TickV0(tick: 8), in: tickChain, forKey: "tick")
            #expect(await seen.wait(after: count) { $0.value?.tick == 8 }, "and a later write is notified")
        }

        @Test(
            "migrate watch --json prints the record now, then another process's put, run and delete, one line each",
            .timeLimit(.minutes(5)))
        func watchCommand() async throws {
            let uri = storeURI(table: newTable("updcli"))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: migrateBinary.path)
            process.arguments = ["watch", "person", "--store", uri, "--json", "--count", "4", "--device-id", "d"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            let receivedBox = Received()
            output.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                receivedBox.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
            try process.run()
            defer {
                if process.isRunning { process.terminate() }
                output.fileHandleForReading.readabilityHandler = nil
            }
            /// The complete lines printed so far, parsed.
            var parsed: [[String: Any]] {
                receivedBox.text.withLock { $0 }.split(separator: "\n").compactMap { line in
                    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
                }
            }
            func waitFor(_ count: Int) async {
                let deadline = ContinuousClock.now + .seconds(60)
                while parsed.count < count, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            await waitFor(1)
            // A put before the watch listens is still read: the watch reads again once listening.
            let put = try await offPool {
                try migrateBinary.run(["put", "person", "--store", uri], stdin: #"{"name":"Ada","age":"36"}"#)
            }
            #expect(put.status == 0, "\(put.stderr)")
            await waitFor(2)
            let run = try await offPool { try migrateBinary.run(["run", "--store", uri, "--device-id", "d"]) }
            #expect(run.status == 0, "\(run.stderr)")
            await waitFor(3)
            let delete = try await offPool { try migrateBinary.run(["delete", "person", "--store", uri]) }
            #expect(delete.status == 0, "\(delete.stderr)")
            await waitFor(4)
            let deadline = ContinuousClock.now + .seconds(30)
            while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!process.isRunning && process.terminationStatus == 0, "--count 4 ends the watch")

            let seen = parsed
            #expect(seen.map { $0["state"] as? String } == ["absent", "outdated", "current", "absent"], "\(seen)")
            #expect(seen.count == 4)
            guard seen.count == 4 else { return }
            #expect(seen[1]["storedVersion"] as? Int == 0 && seen[1]["latestVersion"] as? Int == 3)
            #expect(seen[2]["storedVersion"] as? Int == 3)
            let record = seen[1]["record"] as? [String: Any]
            #expect((record?["data"] as? [String: Any])?["alias"] as? String == "Ada", "migrated in memory")
            let shown = try PostgresConfiguration(parsing: uri).uri
            #expect(seen.allSatisfy { $0["key"] as? String == "person" && $0["store"] as? String == shown }, "\(seen)")
        }

        @Test(
            "migrate watch 'tenant-*' prints the matching rows now, then each one psql inserts or deletes, and no other",
            .timeLimit(.minutes(5)))
        func watchPattern() async throws {
            let table = newTable("updpat")
            let uri = storeURI(table: table)
            let first = try await offPool {
                try migrateBinary.run(["put", "tenant-1", "--store", uri], stdin: #"{"name":"Ada","age":"36"}"#)
            }
            #expect(first.status == 0, "\(first.stderr)")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: migrateBinary.path)
            process.arguments = [
                "watch", "tenant-*", "--store", uri, "--json", "--count", "3", "--device-id", "d", "--model",
                "tenant-*=Person"
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            let receivedBox = Received()
            output.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                receivedBox.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
            try process.run()
            defer {
                if process.isRunning { process.terminate() }
                output.fileHandleForReading.readabilityHandler = nil
            }
            var parsed: [[String: Any]] {
                receivedBox.text.withLock { $0 }.split(separator: "\n").compactMap { line in
                    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
                }
            }
            func waitFor(_ count: Int) async {
                let deadline = ContinuousClock.now + .seconds(60)
                while parsed.count < count, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            await waitFor(1)
            try await offPool {
                try SQL.run(
                    """
                    INSERT INTO \(table) (key, record, version) VALUES
                        ('other', convert_to('{"name":"X","age":"1"}', 'UTF8'), 1),
                        ('tenant-2', convert_to('{"name":"Bo","age":"7"}', 'UTF8'), 1)
                    """)
            }
            await waitFor(2)
            try await offPool { try SQL.run("DELETE FROM \(table) WHERE key = 'tenant-1'") }
            await waitFor(3)
            let deadline = ContinuousClock.now + .seconds(30)
            while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!process.isRunning && process.terminationStatus == 0, "--count 3 ends the watch")
            let seen = parsed.map { "\($0["key"] as? String ?? "?") \($0["state"] as? String ?? "?")" }
            #expect(seen == ["tenant-1 outdated", "tenant-2 outdated", "tenant-1 absent"], "\(seen)")
        }
    }
}
