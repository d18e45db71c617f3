import Foundation
import KeepsakeTesting
import Testing

// The many-writers stress test's driver (docs/RELIABILITY.md), shared by every test target that runs
// it on a store of its own kind: MigrateCLITests (defaults suites, encrypted files),
// KeepsakeKeyringTests (each Secret Service provider) and KeepsakeOpenBaoTests.

/// The built `keepsake-stress` binary (Tests/Stress), beside the test bundle (or `$KEEPSAKE_STRESS_BINARY`).
public let stressBinary = BuiltExecutable(named: "keepsake-stress", overriddenBy: "KEEPSAKE_STRESS_BINARY")

/// What `keepsake-stress check` prints (Tests/Stress/Check.swift).
public struct StressVerdict: Decodable, Sendable {
    public var processes: Int
    public var tasks: Int
    public var operations: Int
    public var successful: [String: Int]
    public var counted: Int
    public var failed: [String: Int]
    public var lost: Int
    public var reads: Int
    public var migratorRuns: Int
    public var moveRuns: Int
    public var moved: Int
    public var migratedByRuns: Int
    public var problems: [String]
    public var summary: String

    /// Operations of `op` the ledgers hold: those that succeeded and those that failed.
    public func attempted(_ op: String) -> Int {
        (successful[op] ?? 0) + failed.filter { $0.key.hasPrefix(op + " ") }.values.reduce(0, +)
    }
}

/// How many of each operation a run of `processes` × `tasks` × `operations` makes
/// (Tests/Stress/Workload.swift: operation `seq` of task `t` is `(seq + t) % 4`: a save to the
/// shared key and one to the task's own, an update, reads, and — task 0 — a Migrator run and a
/// move or — the other tasks — a seeded V0 record and a record staged for moves).
public func plannedOperations(processes: Int, tasks: Int, operations: Int) -> [String: Int] {
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
///   - started: Called with each process once it runs (the keyring tests register it with the
///     private keyring, which ends it should the test stop first).
public func runManyWriters(
    _ storeArguments: [String], processes: Int, tasks: Int, operations: Int, in directory: String,
    runArguments: [String] = [], started: (Process) throws -> Void = { _ in }
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
        try started(process)
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
public func expectNoLoss(_ verdict: StressVerdict, processes: Int, tasks: Int, operations: Int) {
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
public func expectHeldUpdates(_ verdict: StressVerdict, processes: Int, tasks: Int, operations: Int) {
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
