import Foundation
import Synchronization
import Testing

/// What a child process printed, gathered as it arrives.
private final class Received: Sendable {
    let text = Mutex("")
}

@Suite("migrate watch")
struct WatchCLITests {
    @Test("watch --json prints the record now, then another process's put, run and delete, one JSON line each")
    func watchesAnotherProcess() async throws {
        let suite = try Suite("{}")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: migrateBinary)
        process.arguments = ["watch", "person", "--store", suite.store, "--json", "--count", "4", "--device-id", "d"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let received = Received()
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            received.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            output.fileHandleForReading.readabilityHandler = nil
        }

        /// The complete lines printed so far, parsed.
        var parsed: [[String: Any]] {
            received.text.withLock { $0 }.split(separator: "\n", omittingEmptySubsequences: true).compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        // Waits without holding a thread of the shared pool (other tests' tasks need it).
        func waitFor(_ count: Int) async {
            let deadline = Date().addingTimeInterval(60)
            while parsed.count < count, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        }
        await waitFor(1)
        #expect(
            try migrate(["put", "person", "--store", suite.store], stdin: #"{"name":"Ada","age":"36"}"#).status == 0)
        await waitFor(2)
        #expect(try suite.run("run").status == 0)
        await waitFor(3)
        #expect(try migrate(["delete", "person", "--store", suite.store]).status == 0)
        await waitFor(4)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        #expect(!process.isRunning && process.terminationStatus == 0, "--count 4 ends the watch")

        let seen = parsed
        #expect(seen.map { $0["state"] as? String } == ["absent", "outdated", "current", "absent"], "\(seen)")
        #expect(seen[1]["storedVersion"] as? Int == 0 && seen[1]["latestVersion"] as? Int == 3)
        #expect(seen[2]["storedVersion"] as? Int == 3)
        let record = seen[1]["record"] as? [String: Any]
        #expect((record?["data"] as? [String: Any])?["alias"] as? String == "Ada", "migrated in memory")
        #expect(seen.allSatisfy { $0["key"] as? String == "person" && $0["store"] as? String == suite.store })
    }

    @Test(
        "watch 'tenant-*' prints every matching record now, then each one added, migrated or removed, and nothing else")
    func watchesPattern() async throws {
        let suite = try Suite(#"{"tenant-1":{"name":"Ada","age":"36"},"other":1}"#)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: migrateBinary)
        process.arguments = [
            "watch", "tenant-*", "--store", suite.store, "--json", "--count", "5", "--device-id", "d", "--model",
            "tenant-*=Person"
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let received = Received()
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            received.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            output.fileHandleForReading.readabilityHandler = nil
        }
        var parsed: [[String: Any]] {
            received.text.withLock { $0 }.split(separator: "\n", omittingEmptySubsequences: true).compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        func waitFor(_ count: Int) async {
            let deadline = Date().addingTimeInterval(60)
            while parsed.count < count, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        }
        await waitFor(1)
        #expect(try migrate(["put", "other", "--store", suite.store], stdin: "2").status == 0)
        #expect(
            try migrate(["put", "tenant-2", "--store", suite.store], stdin: #"{"name":"Bo","age":"7"}"#).status == 0)
        await waitFor(2)
        #expect(try suite.run("run", ["--model", "tenant-*=Person"]).status == 0)
        await waitFor(4)
        #expect(try migrate(["delete", "tenant-1", "--store", suite.store]).status == 0)
        await waitFor(5)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        #expect(!process.isRunning && process.terminationStatus == 0, "--count 5 ends the watch")

        let seen = parsed.map { "\($0["key"] as? String ?? "?") \($0["state"] as? String ?? "?")" }
        #expect(
            seen == [
                "tenant-1 outdated", "tenant-2 outdated", "tenant-1 current", "tenant-2 current", "tenant-1 absent"
            ], "\(seen)")
        let migrated = parsed.count > 3 ? parsed[3]["record"] as? [String: Any] : nil
        #expect((migrated?["data"] as? [String: Any])?["alias"] as? String == "Bo")
    }
}
