import Foundation
import KeepsakeTesting
import Testing

/// The built `keepsake-stress` binary (Tests/Stress), beside the test bundle (or `$KEEPSAKE_STRESS_BINARY`).
let stressBinary = BuiltExecutable(named: "keepsake-stress", overriddenBy: "KEEPSAKE_STRESS_BINARY")

/// What `keepsake-stress check` prints (Tests/Stress/Check.swift).
struct StressVerdict: Decodable {
    var processes: Int
    var tasks: Int
    var operations: Int
    var successful: [String: Int]
    var counted: Int
    var failed: [String: Int]
    var lost: Int
    var reads: Int
    var migratorRuns: Int
    var moveRuns: Int
    var moved: Int
    var migratedByRuns: Int
    var problems: [String]
    var summary: String

    /// Operations of `op` the ledgers hold: those that succeeded and those that failed.
    func attempted(_ op: String) -> Int {
        (successful[op] ?? 0) + failed.filter { $0.key.hasPrefix(op + " ") }.values.reduce(0, +)
    }
}

/// How many of each operation a run of `processes` × `tasks` × `operations` makes
/// (Tests/Stress/Workload.swift: operation `seq` of task `t` is `(seq + t) % 4`: a save to the
/// shared key and one to the task's own, an update, reads, and — task 0 — a Migrator run and a
/// move or — the other tasks — a seeded V0 record and a record staged for moves).
func plannedOperations(processes: Int, tasks: Int, operations: Int) -> [String: Int] {
    var planned: [String: Int] = [:]
    for task in 0..<tasks {
        for seq in 0..<operations {
            switch (seq + task) % 4 {
            case 0: planned["save", default: 0] += 2
            case 1: planned["update", default: 0] += 1
            case 2: break
            default:
                for op in task == 0 ? ["migrate", "move"] : ["seed", "stage"] { planned[op, default: 0] += 1 }
            }
        }
    }
    return planned.mapValues { $0 * processes }
}

/// Runs `processes` × `tasks` × `operations` of keepsake-stress at once against `store`, then one
/// final Migrator run, then the check of every ledger against what the stores hold.
///
/// - Parameters:
///   - storeArguments: `--store URI`, `--moves-from URI --moves-to URI` (the two stores
///     records are staged in and moved between) and, for `file:` stores, `--key-file PATH`.
///   - runArguments: More options of `keepsake-stress run` (`--workload updates`, `--attempts 1`).
func runManyWriters(
    _ storeArguments: [String], processes: Int, tasks: Int, operations: Int, in directory: String,
    runArguments: [String] = []
) throws -> StressVerdict {
    let barrier = directory + "/barrier"
    try FileManager.default.createDirectory(atPath: barrier, withIntermediateDirectories: true)
    var running: [(process: Process, errors: String)] = []
    for index in 0..<processes {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: stressBinary.path)
        process.arguments =
            ["run"] + storeArguments + [
                "--process", "\(index)", "--tasks", "\(tasks)", "--operations", "\(operations)",
                "--barrier", barrier, "--processes", "\(processes)"
            ] + runArguments
        let ledger = directory + "/ledger.\(index).json", errors = directory + "/stderr.\(index).txt"
        for path in [ledger, errors] { try #require(FileManager.default.createFile(atPath: path, contents: nil)) }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: ledger))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        running.append((process, errors))
    }
    for (process, errors) in running {
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        try #require(process.terminationStatus == 0, "a keepsake-stress process failed: \(text.suffix(2000))")
    }

    // What `migrate run` does once the writers are done: every seeded V0 record at the latest.
    let final = try stressBinary.run(["migrate"] + storeArguments)
    try #require(final.status == 0, "\(final.stderr)")
    let states = try #require(try JSONSerialization.jsonObject(with: Data(final.stdout.utf8)) as? [String: String])
    for (key, state) in states {
        #expect(state == "current" || (state == "migrated" && key.hasPrefix("legacy.")), "\(key): \(state)")
    }

    let checked = try stressBinary.run(["check"] + storeArguments + ["--ledgers", directory])
    try #require(checked.status == 0, "\(checked.stderr)")
    return try JSONDecoder().decode(StressVerdict.self, from: Data(checked.stdout.utf8))
}

/// The verdict's values: every planned operation is in the ledgers, every write that reported
/// success is what is stored, nothing else differs.
func expectNoLoss(_ verdict: StressVerdict, processes: Int, tasks: Int, operations: Int) {
    #expect(verdict.processes == processes)
    #expect(verdict.tasks == tasks)
    #expect(verdict.operations == operations)
    let planned = plannedOperations(processes: processes, tasks: tasks, operations: operations)
    for op in ["save", "update", "seed", "stage"] {
        #expect(verdict.attempted(op) == planned[op], "\(op)")
    }
    #expect(verdict.migratorRuns == planned["migrate"])
    #expect(verdict.moveRuns == planned["move"])
    #expect(verdict.moved > 0)
    #expect(verdict.counted == verdict.successful.values.reduce(0, +))
    // Most writes succeed: a failure is a typed error the ledger keeps, never the whole run.
    #expect(verdict.counted * 2 > planned["save", default: 0] + planned["update", default: 0])
    #expect(verdict.lost == 0)
    #expect(verdict.problems == [], "\(verdict.problems.joined(separator: "\n"))")
}

/// The verdict of a run of updates only (`--workload updates --attempts 1`) on a store that holds
/// a record while an update's change runs: every update applied, exactly once, none a conflict.
func expectHeldUpdates(_ verdict: StressVerdict, processes: Int, tasks: Int, operations: Int) {
    #expect(verdict.processes == processes)
    #expect(verdict.tasks == tasks)
    #expect(verdict.operations == operations)
    #expect(verdict.successful == ["update": processes * tasks * operations])
    #expect(verdict.failed["update conflict"] == nil)
    #expect(verdict.failed == [:])
    #expect(verdict.counted == processes * tasks * operations)
    #expect(verdict.migratorRuns == 0 && verdict.moveRuns == 0)
    #expect(verdict.lost == 0)
    #expect(verdict.problems == [], "\(verdict.problems.joined(separator: "\n"))")
}

@Suite("Many writers: processes × tasks saving, updating and migrating one store at once", .serialized)
struct ManyWritersTests {
    /// Operations per task: 25, or `$KEEPSAKE_STRESS_OPERATIONS` for a longer run.
    let operations = ProcessInfo.processInfo.environment["KEEPSAKE_STRESS_OPERATIONS"].flatMap(Int.init) ?? 25

    /// A new directory for the store, its key and the ledgers.
    func workspace(_ function: String = #function) throws -> String {
        try Suite(function: function).directory
    }

    @Test("defaults: 4 processes × 4 tasks at once, every successful write is what is stored")
    func defaultsStore() throws {
        let directory = try workspace()
        let (processes, tasks) = (4, 4)
        let stores = [
            "--store", "defaults:\(directory)/suite.json", "--moves-from", "defaults:\(directory)/from.json",
            "--moves-to", "defaults:\(directory)/to.json"
        ]
        let verdict = try runManyWriters(
            stores, processes: processes, tasks: tasks, operations: operations, in: directory)
        print(verdict.summary)
        expectNoLoss(verdict, processes: processes, tasks: tasks, operations: operations)
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test("encrypted files: 4 processes × 4 tasks at once, every successful write is what is stored")
    func fileStore() throws {
        let directory = try workspace()
        let key = ["--key-file", directory + "/records.key"]
        for name in ["records", "from", "to"] {
            let created = try migrate(["init", "--store", "file:\(directory)/\(name)"] + key)
            try #require(created.status == 0, "\(created.stderr)")
        }
        let store =
            [
                "--store", "file:\(directory)/records", "--moves-from", "file:\(directory)/from", "--moves-to",
                "file:\(directory)/to"
            ] + key
        let (processes, tasks) = (4, 4)
        let verdict = try runManyWriters(
            store, processes: processes, tasks: tasks, operations: operations, in: directory)
        print(verdict.summary)
        expectNoLoss(verdict, processes: processes, tasks: tasks, operations: operations)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Updates per task in the runs of updates only: 15, or `$KEEPSAKE_STRESS_OPERATIONS`.
    let updates = ProcessInfo.processInfo.environment["KEEPSAKE_STRESS_OPERATIONS"].flatMap(Int.init) ?? 15

    @Test("defaults: 4 processes × 4 tasks updating one record with 1 attempt each: all applied, none a conflict")
    func defaultsHeldUpdates() throws {
        let directory = try workspace()
        let (processes, tasks) = (4, 4)
        let verdict = try runManyWriters(
            ["--store", "defaults:\(directory)/suite.json"], processes: processes, tasks: tasks, operations: updates,
            in: directory, runArguments: ["--workload", "updates", "--attempts", "1"])
        print(verdict.summary)
        expectHeldUpdates(verdict, processes: processes, tasks: tasks, operations: updates)
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test("encrypted files: 4 processes × 4 tasks updating one record with 1 attempt each: all applied, no conflict")
    func fileHeldUpdates() throws {
        let directory = try workspace()
        let key = ["--key-file", directory + "/records.key"]
        let created = try migrate(["init", "--store", "file:\(directory)/records"] + key)
        try #require(created.status == 0, "\(created.stderr)")
        let (processes, tasks) = (4, 4)
        let verdict = try runManyWriters(
            ["--store", "file:\(directory)/records"] + key, processes: processes, tasks: tasks, operations: updates,
            in: directory, runArguments: ["--workload", "updates", "--attempts", "1"])
        print(verdict.summary)
        expectHeldUpdates(verdict, processes: processes, tasks: tasks, operations: updates)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
