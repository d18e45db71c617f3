import Foundation
import Testing

extension KeyringTests {
    @Suite("migrate watch on keyring")
    struct KeyringWatchCLITests {
        let service = PrivateKeyring.uniqueService("watch-flood")
        var store: String { "keyring:" + service }

        /// Sends `org.keepsake.Keyring.RecordChanged(service, key)` as fast as one connection can
        /// for the seconds given, as any process on the session bus may, and prints how many.
        static let flooder = """
            import struct, sys, time
            from jeepney import DBusAddress, new_signal
            from jeepney.io.blocking import open_dbus_connection
            service, key, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
            connection = open_dbus_connection(bus="SESSION")
            emitter = DBusAddress("/org/keepsake/Keyring", interface="org.keepsake.Keyring")
            # One signal serialised once; a batch of copies written at once, each with a serial
            # of its own (bytes 8-11 of the header, little-endian).
            message = new_signal(emitter, "RecordChanged", "ss", (service, key)).serialise(serial=1)
            batch, sent, serial = bytearray(message * 500), 0, 1
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for index in range(500):
                    serial += 1
                    struct.pack_into("<I", batch, index * len(message) + 8, serial)
                connection.sock.sendall(batch)
                sent += 500
            print(sent)
            """

        @Test(
            "a flood of spoofed RecordChanged signals: a real change is printed within 2 s, no state the store did not have, idle right after",
            .enabled(if: PythonKeyring.isAvailable))
        func spoofedFlood() async throws {
            try put(#"{"name":"Ada","age":"36"}"#)
            let output = PrivateKeyring.scratch.appendingPathComponent("watch-\(UUID().uuidString).jsonl")
            try Data().write(to: output)
            defer { try? FileManager.default.removeItem(at: output) }
            let handle = try FileHandle(forWritingTo: output)
            defer { try? handle.close() }
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: migrateExecutable)
            watch.arguments = ["watch", "person", "--store", store, "--json", "--device-id", "d"]
            watch.standardOutput = handle
            watch.standardError = FileHandle.nullDevice
            try watch.run()
            // SIGKILL: a process started from a test thread inherits its blocked signal mask.
            defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }

            /// The complete lines printed so far.
            func lines() throws -> [[String: Any]] {
                let text = String(decoding: try Data(contentsOf: output), as: UTF8.self)
                return try text.split(separator: "\n").map {
                    try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)")
                }
            }
            func alias(_ line: [String: Any]) -> String? {
                ((line["record"] as? [String: Any])?["data"] as? [String: Any])?["alias"] as? String
            }
            /// Waits without holding a thread of the shared pool, up to `seconds`.
            func waitFor(seconds: Double, _ done: () throws -> Bool) async throws -> Bool {
                let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
                while ContinuousClock.now < deadline {
                    if try done() { return true }
                    try await Task.sleep(for: .milliseconds(20))
                }
                return try done()
            }
            #expect(try await waitFor(seconds: 30) { try lines().contains { alias($0) == "Ada" } }, "the record now")

            let flood = Process()
            flood.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            flood.arguments = ["python3", "-c", Self.flooder, service, "person", "6"]
            var environment = ProcessInfo.processInfo.environment
            environment["PYTHONPATH"] = PythonKeyring.path
            flood.environment = environment
            let sentFile = PrivateKeyring.scratch.appendingPathComponent("flood-\(UUID().uuidString)")
            try Data().write(to: sentFile)
            defer { try? FileManager.default.removeItem(at: sentFile) }
            let sentHandle = try FileHandle(forWritingTo: sentFile)
            defer { try? sentHandle.close() }
            flood.standardOutput = sentHandle
            flood.standardError = sentHandle
            try flood.run()
            defer { if flood.isRunning { kill(flood.processIdentifier, SIGKILL) } }

            // A real change in the middle of the flood.
            try await Task.sleep(for: .seconds(2))
            try put(#"{"name":"Bea","age":"40"}"#)
            let written = ContinuousClock.now
            let seenBea = try await waitFor(seconds: 2) { try lines().contains { alias($0) == "Bea" } }
            let latency = ContinuousClock.now - written
            #expect(seenBea, "the put during the flood is printed within 2 s (waited \(latency))")

            #expect(try await waitFor(seconds: 30) { !flood.isRunning }, "the flood ends")
            let sentText = String(decoding: try Data(contentsOf: sentFile), as: UTF8.self)
            let sent = Int(sentText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(sent >= 20000, "the flood sent signals: \(sentText)")

            // After the flood the watch is idle: no backlog of hints to work through.
            try await Task.sleep(for: .seconds(1))
            let before = try Self.cpuSeconds(watch.processIdentifier)
            try await Task.sleep(for: .seconds(2))
            let busy = try Self.cpuSeconds(watch.processIdentifier) - before
            #expect(busy < 0.3, "the watch used \(busy) s of CPU in the 2 s after a flood of \(sent) signals")

            // And a change after the flood is still printed.
            try put(#"{"name":"Cy","age":"50"}"#)
            #expect(
                try await waitFor(seconds: 10) { try lines().contains { alias($0) == "Cy" } },
                "a put after the flood is printed")

            let seen = try lines()
            let states = seen.map { $0["state"] as? String ?? "?" }
            #expect(states.allSatisfy { $0 == "outdated" }, "only states the store had: \(states)")
            #expect(seen.map(alias) == ["Ada", "Bea", "Cy"], "each value once, in order: \(seen.map(alias))")
        }

        /// `migrate put person` of `json` into this test's service.
        func put(_ json: String) throws {
            let result = try Shell.run(
                [migrateExecutable, "put", "person", "--store", store], stdin: Data(json.utf8))
            try #require(result.status == 0, "put: \(result.stderr)")
        }

        /// User and system CPU time the process has used so far (`/proc/PID/stat`).
        static func cpuSeconds(_ pid: Int32) throws -> Double {
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            // Fields after the command name, which is in parentheses and may hold spaces.
            let afterName = try #require(stat.range(of: ")", options: .backwards)).upperBound
            let fields = stat[afterName...].split(separator: " ")
            // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
            let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
            return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
}
