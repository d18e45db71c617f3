import Foundation
import Keepsake
import KeepsakeOpenBao
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

/// What each writer thread saw: the writes the store reported applied, and the errors.
private final class Tally: Sendable {
    let applied = Mutex<[String: Data]>([:])
    let errors = Mutex<[KeepsakeError]>([])
    let updates = Mutex(0)
    /// Writes reported "may have been applied" (their answer lost with the connection).
    let perhaps = Mutex(0)
    /// What each watch saw, by key.
    let seen = Mutex<[String: [String]]>([:])
}

extension OpenBaoServerTests {
    @Suite("OpenBao outages, tokens and watches")
    struct ServerLife {
        @Test(
            "a sealed server is unavailable within connect_timeout, naming the store and key; after a restart every record is there"
        )
        func sealed() throws {
            let server = try OpenBaoTestServer(raft: true)
            let store = try server.store(extra: "&connect_timeout=1")
            try store.setData(Data(#""kept""#.utf8), forKey: "k")
            try server.bao(["operator", "seal"])
            let started = ContinuousClock.now
            let error = try keepsakeError { _ = try store.data(forKey: "k") }
            let waited = started.duration(to: .now)
            #expect(error.code == .unavailable)
            #expect(error.store == store.uri)
            #expect(error.key == "k")
            #expect(error.message.contains("sealed"), "\(error.message)")
            #expect(waited < .seconds(4), "a call on a sealed server took \(waited)")
            let write = try keepsakeError { try store.setData(Data(#""lost?""#.utf8), forKey: "k") }
            #expect(write.code == .unavailable)
            // Static auto-unseal opens it again at the next start.
            try server.restart()
            #expect(try store.data(forKey: "k") == Data(#""kept""#.utf8))
        }

        @Test(
            "the server killed and restarted under 3 writers: every write reported applied is stored, every update counted"
        )
        func restartMidWrites() throws {
            let server = try OpenBaoTestServer(raft: true)
            // Long enough to ride out the restart: the calls wait for the server, then go on.
            let uri = server.uri(extra: "&connect_timeout=20")
            let store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri))
            try store.setData(Data("0".utf8), forKey: "counter")
            let tally = Tally()
            let stop = Atomic(false)
            let group = DispatchGroup()
            for writer in 0..<3 {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    var round = 0
                    while !stop.load(ordering: .relaxed) {
                        round += 1
                        let key = "w\(writer)-\(round)"
                        let value = Data("\(round)".utf8)
                        do throws(KeepsakeError) {
                            try store.setData(value, forKey: key)
                            tally.applied.withLock { $0[key] = value }
                            // A counter increment as a guarded write, tried until it applies.
                            while true {
                                let current = try store.data(forKey: "counter")
                                let count = Int(String(decoding: current ?? Data(), as: UTF8.self)) ?? -1_000_000
                                let result = try store.commit([
                                    StoreWrite(
                                        key: "counter", value: Data("\(count + 1)".utf8),
                                        expectation: .unchanged(current))
                                ])
                                if result == [.applied] {
                                    tally.updates.withLock { $0 += 1 }
                                    break
                                }
                                // A write of a batch that failed is a result, not a throw: one
                                // that may have been applied must not be tried again as if not.
                                if case let .failed(error) = result.first { throw error }
                            }
                        } catch  where error.mayHaveBeenApplied {
                            // A write whose answer the restart took, whose bytes are there: it
                            // may be this one or another writer's (the counter's next value is
                            // the same for all) — never counted as applied.
                            tally.perhaps.withLock { $0 += 1 }
                        } catch {
                            #expect(!error.message.contains("may have been applied"), "not flagged: \(error)")
                            tally.errors.withLock { $0.append(error) }
                        }
                    }
                }
            }
            Thread.sleep(forTimeInterval: 1.5)
            server.kill()
            Thread.sleep(forTimeInterval: 1)
            try server.start()
            Thread.sleep(forTimeInterval: 1.5)
            stop.store(true, ordering: .relaxed)
            group.wait()

            let errors = tally.errors.withLock { $0 }
            #expect(errors.isEmpty, "\(errors.map(\.description))")
            let applied = tally.applied.withLock { $0 }
            #expect(applied.count > 6, "only \(applied.count) writes went through")
            for (key, value) in applied {
                #expect(try store.data(forKey: key) == value, "\(key)")
            }
            let counted = tally.updates.withLock { $0 }
            // Every increment reported applied is in the counter; one reported "may have been
            // applied" may be too, never more.
            let stored = try #require(
                try store.data(forKey: "counter").flatMap { Int(String(decoding: $0, as: UTF8.self)) })
            let perhaps = tally.perhaps.withLock { $0 }
            #expect(
                stored >= counted && stored <= counted + perhaps,
                "counter \(stored), \(counted) applied, \(perhaps) perhaps")
            print(
                "restart mid-writes: \(applied.count) writes and \(counted) counter updates applied, all stored; \(perhaps) reported perhaps applied"
            )
        }

        @Test("migrate run across a server restart: it waits for the server, then migrates every record once")
        func restartMidRun() throws {
            let server = try OpenBaoTestServer(raft: true)
            let folder = "run"
            let uri = server.uri(folder: folder, extra: "&connect_timeout=20")
            let store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri))
            let count = 300
            for start in stride(from: 0, to: count, by: 100) {
                let writes = (start..<start + 100).map {
                    StoreWrite(key: "person-\($0)", value: Data(#"{"name":"n\#($0)","age":"\#($0 % 90)"}"#.utf8))
                }
                #expect(try store.commit(writes).allSatisfy { $0 == .applied })
            }
            let run = Process()
            run.executableURL = URL(fileURLWithPath: migrateBinary.path)
            run.arguments = ["run", "--store", uri, "--model", "person-*=Person", "--json"]
            let output = Pipe()
            run.standardOutput = output
            run.standardError = FileHandle.nullDevice
            try run.run()
            Thread.sleep(forTimeInterval: 0.4)
            #expect(run.isRunning, "the run ended before the server was killed: seed more records")
            server.kill()
            Thread.sleep(forTimeInterval: 1)
            try server.start()
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            run.waitUntilExit()
            // A write whose answer the kill took is reported "may have been applied" (never
            // "migrated"), and the run exits non-zero for it; every other record is migrated.
            let report = try #require(try JSONSerialization.jsonObject(with: printed) as? [String: Any])
            let records = try #require(report["records"] as? [[String: Any]])
            let unsure = records.filter { ($0["error"] as? [String: Any])?["message"] as? String != nil }
            for record in unsure {
                let message = (record["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.contains("may have been applied"), "\(record["key"] ?? ""): \(message)")
                #expect((record["error"] as? [String: Any])?["mayHaveBeenApplied"] as? Bool == true, "\(record)")
            }
            #expect((run.terminationStatus == 0) == unsure.isEmpty, "exit \(run.terminationStatus)")
            #expect(try totals(String(decoding: printed, as: UTF8.self))["migrated"] == count - unsure.count)
            // A second run finds each of those either migrated already or migrates it.
            let again = try migrateBinary.run(["run", "--store", uri, "--model", "person-*=Person", "--json"])
            #expect(again.status == 0, "\(again.stderr)")
            let counts = try totals(again.stdout)
            #expect((counts["current"] ?? 0) == count - (counts["migrated"] ?? 0), "\(counts)")
            #expect((counts["migrated"] ?? 0) <= unsure.count)
            print("migrate run across a restart: \(count - unsure.count) migrated, \(unsure.count) perhaps applied")
            for index in [0, 150, 299] {
                let text = String(decoding: try #require(try store.data(forKey: "person-\(index)")), as: UTF8.self)
                #expect(text.contains(#""version":3"#), "\(text)")
            }
        }

        @Test("AppRole tokens that live 2 s are renewed, then replaced by a new login: 7 s of calls, none refused")
        func shortLivedTokens() throws {
            let server = try OpenBaoTestServer(tokenTTL: 2)
            let store = try server.store(appRole: true)
            let started = ContinuousClock.now
            var calls = 0
            while started.duration(to: .now) < .seconds(7) {
                try store.setData(Data("\(calls)".utf8), forKey: "k")
                #expect(try store.data(forKey: "k") == Data("\(calls)".utf8))
                calls += 1
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(calls > 20)
            // The server saw more than one login: the first token reached its 6 s maximum.
            let logins = try server.bao(["list", "-format=json", "auth/approle/role/keepsake/secret-id"])
            #expect(!logins.isEmpty)
        }

        @Test("watches poll one listing per interval for the whole store, and see a change bao kv put makes")
        func watches() async throws {
            let server = try OpenBaoTestServer(audit: true)
            let folder = "watch"
            let store = try OpenBaoStore(
                configuration: OpenBaoConfiguration(parsing: server.uri(folder: folder, extra: "&poll_interval=0.5")))
            let vault = Vault(store: store)
            try await vault.save(PersonV3(alias: "Ada", email: "ada@example.com"), in: Person.chain, forKey: "p0")
            let seen = Tally()
            var tasks: [Task<Void, Never>] = []
            for index in 0..<5 {
                let key = "p\(index)"
                let stream = vault.updates(of: Person.chain, forKey: key)
                tasks.append(
                    Task {
                        for await update in stream {
                            let text: String
                            switch update {
                            case let .record(record): text = record.value.alias
                            case .absent: text = "absent"
                            default: text = "\(update)"
                            }
                            seen.seen.withLock { $0[key, default: []].append(text) }
                        }
                    })
            }
            try await Task.sleep(for: .seconds(1))
            let auditBefore = try Self.listings(in: "\(server.directory)/audit.log")
            try await Task.sleep(for: .seconds(3))
            let auditAfter = try Self.listings(in: "\(server.directory)/audit.log")
            // 3 s at 0.5 s: about 6 listings for the five watches together, not 6 per watch.
            #expect((4...8).contains(auditAfter - auditBefore), "\(auditAfter - auditBefore) listings in 3 s")

            // An operator's write, the way an older release stored a Person: its fields.
            try server.bao(["kv", "put", "secret/apps/\(folder)/p3", "name=Grace", "age=85"])
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, seen.seen.withLock({ $0["p3"]?.contains("Grace") }) != true {
                try await Task.sleep(for: .milliseconds(50))
            }
            for task in tasks { task.cancel() }
            let all = seen.seen.withLock { $0 }
            #expect(all["p0"]?.first == "Ada")
            #expect(all["p3"] == ["absent", "Grace"], "\(all)")
            #expect(all["p1"] == ["absent"])
        }

        /// How many `detailed-metadata` listings the audit log holds (requests only).
        static func listings(in path: String) throws -> Int {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            return text.split(separator: "\n").filter {
                $0.contains(#""type":"request""#) && $0.contains("detailed-metadata")
            }.count
        }
    }
}
