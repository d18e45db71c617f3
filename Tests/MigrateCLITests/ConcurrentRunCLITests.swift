import Foundation
import Testing

/// A Person record at `version` in an envelope, as the suite holds it.
private func envelope(version: Int, _ data: String) -> String {
    #"{"data":\#(data),"schema":"Person","version":\#(version)}"#
}

/// Four Person V0 records, `a` to `d`.
private let fourRecords = """
    {
      "a": \(envelope(version: 0, #"{"age":"30","name":"A"}"#)),
      "b": \(envelope(version: 0, #"{"age":"31","name":"B"}"#)),
      "c": \(envelope(version: 0, #"{"age":"32","name":"C"}"#)),
      "d": \(envelope(version: 0, #"{"age":"33","name":"D"}"#))
    }
    """

/// What an app instance stores for `a` meanwhile: the latest version.
private let theirs = envelope(version: 3, #"{"alias":"Theirs","email":"t@x"}"#)

/// `migrate run ARGS` on `suite` through `held-defaults:` (Tests/CustomMigrate/HeldCommit.swift):
/// the stock commands, on the sample chains, whose every batch of writes waits until
/// `otherWriter(batch)` has written to the suite, as another process would. Returns the run's
/// result and how many batches it committed.
private func runRacing(
    _ suite: Suite, _ arguments: [String], otherWriter: (_ batch: Int) throws -> Void
) throws -> (result: CommandResult, batches: Int) {
    let resume = suite.directory + "/resume"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: customMigrateBinary)
    process.arguments = ["run", "--store", "held-defaults:" + suite.path, "--device-id", "test-device"] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging([
        "CUSTOM_MIGRATE_SAMPLE_CHAINS": "1", "CUSTOM_MIGRATE_HOLD_COMMIT": resume
    ]) { $1 }
    // Files, not pipes: the test reads standard error while the process runs.
    let outPath = suite.directory + "/stdout", errPath = suite.directory + "/stderr"
    for path in [outPath, errPath] { try #require(FileManager.default.createFile(atPath: path, contents: nil)) }
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    process.standardInput = FileHandle.nullDevice
    try process.run()
    var batch = 1
    let deadline = ContinuousClock.now + .seconds(240)
    while process.isRunning {
        let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        if errors.contains("holding commit \(batch)\n") {
            try otherWriter(batch)
            try #require(FileManager.default.createFile(atPath: resume + ".\(batch)", contents: nil))
            batch += 1
        } else if ContinuousClock.now > deadline {
            process.terminate()
            Issue.record("migrate run did not finish: \(errors)")
            break
        } else {
            usleep(10_000)
        }
    }
    process.waitUntilExit()
    let result = CommandResult(
        stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "", status: process.terminationStatus)
    return (result, batch - 1)
}

/// Another writer: the stock `migrate` binary, a process of its own, putting `value` under `key`.
private func put(_ suite: Suite, _ key: String, _ value: String) throws {
    let result = try suite.run("put", [key], stdin: value)
    try #require(result.status == 0, "put \(key): \(result.stderr)")
}

/// The records of the suite file, by key, as JSON objects.
private func stored(_ suite: Suite) throws -> [String: Any] {
    try #require(try decodeJSON(suite.contents) as? [String: Any])
}

@Suite("migrate run while another writer writes the store")
struct ConcurrentRunCLITests {
    static let broughtCurrent = "brought to the latest version by another writer while it was being migrated"
    static let migratedAgain =
        "changed by another writer while it was being migrated; migrated again from what that writer stored"
    static let removed = "removed by another writer while it was being migrated"

    @Test(
        "--json: a record another writer brought to the latest version meanwhile is current with a note; exit 0")
    func json() throws {
        let suite = try Suite(fourRecords)
        // While the run holds its batch: `a` brought to the latest version, `b` stored again at
        // V0 (an older release), `c` deleted; `d` left alone. Then the run's second batch (`b`
        // migrated again) goes through untouched.
        let (result, batches) = try runRacing(suite, ["--json"]) { batch in
            guard batch == 1 else { return }
            try put(suite, "a", theirs)
            try put(suite, "b", envelope(version: 0, #"{"age":"41","name":"Bea"}"#))
            let deleted = try suite.run("delete", ["c"])
            try #require(deleted.status == 0, "\(deleted.stderr)")
        }
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(batches == 2)
        let object = try #require(try decodeJSON(result.stdout) as? [String: Any])
        #expect(object["exitCode"] as? Int == 0)
        #expect(object["store"] as? String == suite.store)
        let totals = try #require(object["totals"] as? [String: Int])
        #expect(totals["current"] == 1)
        #expect(totals["migrated"] == 2)
        #expect(totals["removed"] == 1)
        #expect(totals["outdated"] == 0)
        #expect(totals["records"] == 4)

        let records = try decodeRecords(result.stdout)
        #expect(records.map { $0["key"] as? String } == ["a", "b", "c", "d"])
        #expect(records.map { $0["state"] as? String } == ["current", "migrated", "removed", "migrated"])
        #expect(records[0]["note"] as? String == Self.broughtCurrent)
        #expect(records[0]["storedVersion"] as? Int == 3)
        #expect(records[0]["latestVersion"] as? Int == 3)
        #expect(records[0]["error"] is NSNull)
        #expect(records[1]["note"] as? String == Self.migratedAgain)
        #expect(records[1]["error"] is NSNull)
        #expect(records[2]["note"] as? String == Self.removed)
        #expect(records[2]["storedVersion"] is NSNull)
        #expect(records[3]["note"] is NSNull)
        #expect(records.allSatisfy { $0["error"] is NSNull })

        // The other writer's record is as it stored it; the others are at the latest version.
        let after = try stored(suite)
        #expect(after.keys.sorted() == ["a", "b", "d"])
        #expect(after["a"] as? NSDictionary == (try decodeJSON(theirs) as? NSDictionary))
        let b = try #require(after["b"] as? [String: Any])
        #expect(b["version"] as? Int == 3)
        #expect(b["data"] as? NSDictionary == ["alias": "Bea", "email": "---"] as NSDictionary)
        #expect((after["d"] as? [String: Any])?["version"] as? Int == 3)
    }

    @Test("the table shows the note, the summary counts the record current, and the run exits 0")
    func table() throws {
        let suite = try Suite(fourRecords)
        let (result, _) = try runRacing(suite, []) { batch in
            if batch == 1 { try put(suite, "a", theirs) }
        }
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let a = try #require(lines.first { $0.hasPrefix("a ") }, "\(result.stdout)")
        #expect(a.contains(" current "), "\(a)")
        #expect(a.hasSuffix(Self.broughtCurrent), "\(a)")
        #expect(!result.stdout.contains("outdated"), "\(result.stdout)")
        #expect(lines.last == "1 current, 3 migrated", "\(result.stdout)")
    }

    @Test("a record another writer keeps storing outdated is still outdated after the run: exit 73, conflict")
    func stillOutdated() throws {
        let suite = try Suite(fourRecords)
        let (result, batches) = try runRacing(suite, ["--json"]) { batch in
            try put(suite, "a", envelope(version: 0, #"{"age":"50","name":"Old\#(batch)"}"#))
        }
        #expect(result.status == 73, "\(result.stdout)\n\(result.stderr)")
        #expect(batches == 3)
        let object = try #require(try decodeJSON(result.stdout) as? [String: Any])
        #expect(object["exitCode"] as? Int == 73)
        let records = try decodeRecords(result.stdout)
        #expect(records.map { $0["state"] as? String } == ["outdated", "migrated", "migrated", "migrated"])
        #expect(records[0]["note"] is NSNull)
        let error = try errorObject(records[0]["error"])
        #expect(error["code"] as? String == "conflict")
        #expect(error["exitCode"] as? Int == 73)
        #expect(
            error["message"] as? String
                == "the record changed while it was being migrated, 3 times; it was left as the other writer stored it, still outdated"
        )
        // The last other writer's bytes, never written over.
        let a = try #require(try stored(suite)["a"] as? [String: Any])
        #expect(a["data"] as? NSDictionary == ["age": "50", "name": "Old3"] as NSDictionary)
    }
}
