import Foundation
import Keepsake
import KeepsakeOpenBao
import KeepsakeTesting
import TestSupport
import Testing

let migrateBinary = BuiltExecutable(named: "migrate", overriddenBy: "MIGRATE_BINARY")

/// The `totals` of a `status`/`run --json` report.
func totals(_ output: String) throws -> [String: Int] {
    let object = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
    return try #require(object["totals"] as? [String: Int])
}

extension OpenBaoServerTests {
    @Suite("migrate on an OpenBao store")
    struct CLI {
        @Test("migrate run migrates the entries an older release wrote with bao kv put: fields, and record=")
        func runOnOldEntries() throws {
            let server = try SharedServer.get()
            let folder = "old\(UUID().uuidString.prefix(6).lowercased())"
            let uri = server.uri(folder: folder)
            // The first release kept a Person's fields as the entry's data; a later one the
            // record's JSON in `record`.
            try server.bao(["kv", "put", "secret/apps/\(folder)/person", "name=Ada", "age=36"])
            try server.bao(["kv", "put", "secret/apps/\(folder)/person-2", #"record={"name":"Bo","age":"7"}"#])
            let model = ["--model", "person=Person", "--model", "person-*=Person"]

            let status = try migrateBinary.run(["status", "--store", uri, "--json"] + model)
            #expect(status.status == 0, "\(status.stderr)")
            #expect(try totals(status.stdout)["outdated"] == 2, "\(status.stdout)")

            let run = try migrateBinary.run(["run", "--store", uri, "--json"] + model)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try totals(run.stdout)["migrated"] == 2, "\(run.stdout)")

            // What the server holds now: each entry's next version, the record in an envelope.
            let stored = try server.bao(["kv", "get", "-field=record", "secret/apps/\(folder)/person"])
            #expect(stored.contains(#""schema":"Person""#) && stored.contains(#""version":3"#), "\(stored)")
            let version = try server.bao(["kv", "metadata", "get", "-format=json", "secret/apps/\(folder)/person-2"])
            #expect(version.contains(#""current_version": 2"#))
            let get = try migrateBinary.run(["get", "person-2", "--store", uri])
            #expect(get.status == 0 && get.stdout.contains("Bo"), "\(get.stdout)\(get.stderr)")

            let again = try migrateBinary.run(["run", "--store", uri, "--json"] + model)
            #expect(try totals(again.stdout)["current"] == 2)
            #expect(try totals(again.stdout)["migrated"] == 0)
        }

        @Test("migrate doctor names the server, the mount and the token's policies; a URI holding a token is refused")
        func doctor() throws {
            let server = try SharedServer.get()
            // Doctor checks the keyring too, which this test has none of (exit 69 for that): its
            // line for the OpenBao store is what is checked here.
            let doctor = try migrateBinary.run(["doctor", "--store", server.uri()])
            let line = try #require(
                doctor.stdout.split(separator: "\n").first { $0.hasPrefix("openbao://") }, "\(doctor.stdout)")
            #expect(line.contains("yes") && line.contains("usable"), "\(line)")
            #expect(line.contains("OpenBao 2.") && line.contains("unsealed"), "\(line)")
            #expect(line.contains("mount secret: KV version 2"), "\(line)")
            #expect(line.contains("token policies: default, keepsake-app"), "\(line)")
            let token = try String(contentsOfFile: server.appTokenFile, encoding: .utf8)
            let refused = try migrateBinary.run([
                "status", "--store", "openbao://127.0.0.1:\(server.port)/secret/apps/x?token=\(token)"
            ])
            #expect(refused.status == 64, "\(refused.stderr)")
            #expect(refused.stderr.contains("token_file"))
            #expect(!refused.stderr.contains(token) && !refused.stdout.contains(token))
        }

        @Test("migrate copy moves records from a defaults suite to OpenBao and back")
        func copy() throws {
            let server = try SharedServer.get()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bao-copy-\(UUID())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }  // scratch files only
            let suite = "defaults:\(directory)/from.json", back = "defaults:\(directory)/back.json"
            #expect(
                try migrateBinary.run(["put", "person", "--store", suite], stdin: #"{"name":"Cy","age":"9"}"#).status
                    == 0)
            let uri = server.uri()
            let copy = try migrateBinary.run(["copy", "--from", suite, "--to", uri, "--move"])
            #expect(copy.status == 0, "\(copy.stderr)")
            let store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri))
            #expect(try store.keys() == ["person"])
            let copyBack = try migrateBinary.run(["copy", "--from", uri, "--to", back, "--allow-plaintext"])
            #expect(copyBack.status == 0, "\(copyBack.stderr)")
            let get = try migrateBinary.run(["get", "person", "--store", back])
            #expect(get.stdout.contains("Cy"), "\(get.stdout)")
        }

        @Test("migrate watch prints the record, then the change bao kv put makes")
        func watch() throws {
            let server = try SharedServer.get()
            let folder = "watch\(UUID().uuidString.prefix(6).lowercased())"
            let uri = server.uri(folder: folder, extra: "&poll_interval=0.2")
            try server.bao(["kv", "put", "secret/apps/\(folder)/person", "name=Ada", "age=36"])
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: migrateBinary.path)
            watch.arguments = ["watch", "person", "--store", uri, "--json", "--count", "2"]
            let output = Pipe()
            watch.standardOutput = output
            watch.standardError = FileHandle.nullDevice
            try watch.run()
            // The first state is printed at once; the change comes within a few polls.
            Thread.sleep(forTimeInterval: 1.5)
            try server.bao(["kv", "put", "secret/apps/\(folder)/person", "name=Grace", "age=85"])
            let done = DispatchSemaphore(value: 0)
            Blocking.start {
                watch.waitUntilExit()
                done.signal()
            }
            if done.wait(timeout: .now() + 30) == .timedOut {
                watch.terminate()
                Issue.record("migrate watch did not print the change within 30 s")
            }
            let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .split(separator: "\n")
            #expect(lines.count == 2, "\(lines)")
            #expect(lines.first?.contains("Ada") == true)
            #expect(lines.last?.contains("Grace") == true)
        }

        @Test(
            "kill -9 of migrate run at random moments, 12 times: every record is its old bytes or migrated, never lost")
        func killLoop() throws {
            let server = try SharedServer.get()
            let folder = "kill\(UUID().uuidString.prefix(6).lowercased())"
            let uri = server.uri(folder: folder)
            let store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri))
            let count = 40
            var old: [String: Data] = [:]
            for index in 0..<count {
                let bytes = Data(#"{"name":"n\#(index)","age":"\#(index)"}"#.utf8)
                try store.setData(bytes, forKey: "person-\(index)")
                old["person-\(index)"] = bytes
            }
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<12 {
                let run = Process()
                run.executableURL = URL(fileURLWithPath: migrateBinary.path)
                run.arguments = ["run", "--store", uri, "--model", "person-*=Person", "--quiet"]
                run.standardOutput = FileHandle.nullDevice
                run.standardError = FileHandle.nullDevice
                try run.run()
                Thread.sleep(forTimeInterval: Double(UInt64.random(in: 50...400, using: &generator)) / 1000)
                kill(run.processIdentifier, SIGKILL)
                run.waitUntilExit()
                for (key, bytes) in old {
                    let now = try #require(try store.data(forKey: key), "\(key) was lost")
                    let text = String(decoding: now, as: UTF8.self)
                    #expect(
                        now == bytes || (text.contains(#""schema":"Person""#) && text.contains(#""version":3"#)),
                        "\(key): \(text)")
                }
            }
            let finish = try migrateBinary.run(["run", "--store", uri, "--model", "person-*=Person", "--json"])
            #expect(finish.status == 0, "\(finish.stderr)")
            let counts = try totals(finish.stdout)
            #expect((counts["current"] ?? 0) + (counts["migrated"] ?? 0) == count, "\(counts)")
            #expect(try store.keys().count == count)
        }
    }
}

extension OpenBaoServerTests {
    @Suite("Many writers on one OpenBao folder")
    struct ManyWriters {
        func workspace() throws -> String {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bao-stress-\(UUID())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return directory
        }

        @Test("3 processes × 3 tasks saving, updating and migrating at once: every successful write is what is stored")
        func stress() throws {
            let server = try SharedServer.get()
            let directory = try workspace()
            defer { try? FileManager.default.removeItem(atPath: directory) }  // scratch files only
            let operations = ProcessInfo.processInfo.environment["KEEPSAKE_STRESS_OPERATIONS"].flatMap(Int.init) ?? 12
            let (processes, tasks) = (3, 3)
            let stores = ["--store", server.uri(), "--moves-from", server.uri(), "--moves-to", server.uri()]
            let verdict = try runManyWriters(
                stores, processes: processes, tasks: tasks, operations: operations, in: directory)
            print("\(verdict.summary) [OpenBao]")
            expectNoLoss(verdict, processes: processes, tasks: tasks, operations: operations)
        }

        @Test("3 processes × 3 tasks updating one record: every update applied exactly once")
        func updates() throws {
            let server = try SharedServer.get()
            let directory = try workspace()
            defer { try? FileManager.default.removeItem(atPath: directory) }  // scratch files only
            let (processes, tasks, updates) = (3, 3, 8)
            // Each update is read, changed and written at the version read; one that meets a
            // newer version is tried again (the default attempts), so none is lost.
            let verdict = try runManyWriters(
                ["--store", server.uri()], processes: processes, tasks: tasks, operations: updates, in: directory,
                runArguments: ["--workload", "updates", "--attempts", "50"])
            print("\(verdict.summary) [OpenBao]")
            #expect(verdict.successful == ["update": processes * tasks * updates])
            #expect(verdict.failed == [:])
            #expect(verdict.counted == processes * tasks * updates)
            #expect(verdict.lost == 0)
            #expect(verdict.problems == [], "\(verdict.problems.joined(separator: "\n"))")
        }
    }
}

extension OpenBaoServerTests {
    @Suite("The README's OpenBao commands")
    struct ReadmeCommandsOnOpenBao {
        @Test("status and run from the README work verbatim on a folder an older release wrote with bao kv put")
        func readmeCommands() throws {
            let commands = try ReadmeCommands.serverApps().filter { $0.contains { $0.hasPrefix("openbao://") } }
            let readmeURI =
                "openbao://bao.internal:8200/secret/myapp?cacert=/etc/myapp/bao-ca.pem&token_file=/run/secrets/bao-token"
            #expect(
                commands.map { $0.prefix(2).joined(separator: " ") } == ["migrate status", "migrate run"], "\(commands)"
            )
            #expect(commands.allSatisfy { $0.contains(readmeURI) })
            let server = try SharedServer.get()
            let folder = "readme\(UUID().uuidString.prefix(6).lowercased())"
            for index in 1...3 {
                try server.bao(["kv", "put", "secret/apps/\(folder)/person-\(index)", "name=n\(index)", "age=\(index)"])
            }
            let uri = server.uri(folder: folder)
            var outputs: [String] = []
            for command in commands {
                let arguments = command.dropFirst().map { $0 == readmeURI ? uri : $0 } + ["--json"]
                let result = try migrateBinary.run(Array(arguments))
                #expect(result.status == 0, "\(command): \(result.stderr)")
                outputs.append(result.stdout)
            }
            // Without --model no chain owns person-*: status shows them unmanaged, run migrates them.
            #expect(try totals(outputs[0])["unmanaged"] == 3, "\(outputs[0])")
            #expect(try totals(outputs[1])["migrated"] == 3, "\(outputs[1])")
        }
    }
}
