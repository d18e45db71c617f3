import Foundation
import Keepsake
import Testing

/// Two `migrate copy --move` processes from one source at once (issue 21): moves take turns on
/// their source's lock, so no record is copied by both.
@Suite("migrate copy --move: two moves from one source at once")
struct ConcurrentMoveCLITests {
    /// A directory with `source.json` holding `count` plain values `k0…`.
    func sourceSuite(count: Int) throws -> (directory: String, keys: Set<String>) {
        let suite = try Suite(
            "{" + (0..<count).map { #""k\#($0)": {"value": \#($0)}"# }.joined(separator: ", ") + "}")
        try FileManager.default.moveItem(atPath: suite.path, toPath: suite.directory + "/source.json")
        return (suite.directory, Set((0..<count).map { "k\($0)" }))
    }

    /// The keys of the suite at `path`; none when there is no file.
    func suiteKeys(ofSuite path: String) throws -> Set<String> {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let object = try #require(
            try decodeJSON(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self))
                as? [String: Any])
        return Set(object.keys)
    }

    /// Starts `binary` (`migrate`) with `arguments` (and `environment` added); `wait` it for the result.
    func start(_ arguments: [String], binary: String = migrateBinary, environment: [String: String] = [:]) throws
        -> Running
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return Running(process: process, output: output, errors: errors)
    }

    struct Running {
        let process: Process
        let output: Pipe
        let errors: Pipe

        func wait() -> CommandResult {
            // Both pipes are read at once, so that a full one never blocks the process.
            final class Box: @unchecked Sendable { var data = Data() }
            let err = Box()
            let done = DispatchGroup()
            let handle = errors.fileHandleForReading
            done.enter()
            Blocking.start {
                err.data = handle.readDataToEndOfFile()
                done.leave()
            }
            let out = output.fileHandleForReading.readDataToEndOfFile()
            done.wait()
            process.waitUntilExit()
            return CommandResult(
                stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err.data, as: UTF8.self),
                status: process.terminationStatus)
        }
    }

    @Test("two moves at once to two destinations: every record in exactly one, each report lists what it moved")
    func twoMoves() throws {
        for round in 0..<4 {
            let (directory, keys) = try sourceSuite(count: 60)
            let destinations = [directory + "/a.json", directory + "/b.json"]
            let running = try destinations.map { destination in
                try start([
                    "copy", "--from", "defaults:\(directory)/source.json", "--to", "defaults:\(destination)",
                    "--all", "--move", "--json"
                ])
            }
            let results = running.map { $0.wait() }
            var seen: [String: Int] = [:]
            for (result, destination) in zip(results, destinations) {
                #expect(result.status == 0, "round \(round): \(result.stdout) \(result.stderr)")
                let report = try #require(try decodeJSON(result.stdout) as? [String: Any])
                let records = try #require(report["records"] as? [[String: Any]])
                #expect(records.allSatisfy { $0["state"] as? String == "moved" }, "round \(round): \(result.stdout)")
                let held = try suiteKeys(ofSuite: destination)
                #expect(Set(records.compactMap { $0["key"] as? String }) == held, "round \(round)")
                for key in held { seen[key, default: 0] += 1 }
            }
            #expect(Set(seen.keys) == keys && seen.values.allSatisfy { $0 == 1 }, "round \(round)")
            #expect(try suiteKeys(ofSuite: directory + "/source.json") == [])
        }
    }

    @Test("a move waits for the one in progress; past --lock-timeout it exits 75 having copied nothing")
    func lockTimeout() throws {
        let (directory, keys) = try sourceSuite(count: 5)
        let resume = directory + "/resume"
        let first = try start(
            [
                "copy", "--from", "defaults:\(directory)/source.json", "--to", "defaults:\(directory)/a.json",
                "--all", "--move", "--json"
            ],
            // custom-migrate on the sample chains: the stock commands, with the pause points the
            // shipped `migrate` does not have.
            binary: customMigrateBinary,
            environment: [
                "CUSTOM_MIGRATE_SAMPLE_CHAINS": "1", "CUSTOM_MIGRATE_COPY_PAUSE": "written",
                "CUSTOM_MIGRATE_COPY_RESUME": resume
            ])
        // Whatever fails below, the first is let go (a paused process would hang the run).
        defer { _ = FileManager.default.createFile(atPath: resume, contents: nil) }
        // Wait until the first has written its copies (and holds the lock).
        let deadline = Date().addingTimeInterval(60)
        while try suiteKeys(ofSuite: directory + "/a.json").count < keys.count, Date() < deadline { usleep(20_000) }
        let second = [
            "copy", "--from", "defaults:\(directory)/source.json", "--to", "defaults:\(directory)/b.json",
            "--all", "--move", "--json"
        ]
        let waited = try start(second + ["--lock-timeout", "0.3"]).wait()
        #expect(waited.status == 75, "\(waited.stdout) \(waited.stderr)")
        let error = try errorObject((try decodeJSON(waited.stdout) as? [String: Any])?["error"])
        #expect(error["code"] as? String == "lockTimeout")
        #expect(!FileManager.default.fileExists(atPath: directory + "/b.json"))
        #expect(FileManager.default.createFile(atPath: resume, contents: nil))
        let finished = first.wait()
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(try suiteKeys(ofSuite: directory + "/a.json") == keys)
        // After it, the second finds nothing left to move.
        let after = try migrate(second)
        #expect(after.status == 0, "\(after.stderr)")
        let report = try #require(try decodeJSON(after.stdout) as? [String: Any])
        #expect((report["records"] as? [Any])?.isEmpty == true)
    }

    @Test("the shipped migrate has no pause points: the variables that stop custom-migrate change nothing")
    func noPauseInMigrate() throws {
        let (directory, keys) = try sourceSuite(count: 3)
        let running = try start(
            [
                "copy", "--from", "defaults:\(directory)/source.json", "--to", "defaults:\(directory)/a.json",
                "--all", "--move", "--json"
            ],
            environment: [
                "KEEPSAKE_TEST_COPY_PAUSE": "written", "CUSTOM_MIGRATE_COPY_PAUSE": "written",
                "CUSTOM_MIGRATE_SAMPLE_CHAINS": "1"
            ])
        // A paused process would never end: it is stopped after a minute.
        let deadline = Date().addingTimeInterval(60)
        while running.process.isRunning, Date() < deadline { usleep(20_000) }
        if running.process.isRunning { running.process.terminate() }
        let result = running.wait()
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(!result.stderr.contains("paused"))
        #expect(try suiteKeys(ofSuite: directory + "/a.json") == keys)
    }
}
