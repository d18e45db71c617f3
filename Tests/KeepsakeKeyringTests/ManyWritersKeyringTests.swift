import Foundation
import KeepsakeTesting
import TestSupport
import Testing

// The many-writers stress test (docs/RELIABILITY.md) on the keyring: keepsake-stress processes at once
// on one service of the private keyring, run by scripts/test-providers against gnome-keyring,
// KeePassXC and KWallet. The same binary and check as MigrateCLITests/ManyWritersTests.swift.

/// Runs `processes` × `tasks` × `operations` of keepsake-stress at once on `store` (in this
/// process's private keyring, which each process inherits and is registered with), then one final
/// Migrator run, then the check of every ledger (Tests/TestSupport).
private func runStress(
    _ store: [String], processes: Int, tasks: Int, operations: Int, runArguments: [String] = []
) throws -> StressVerdict {
    let directory = PrivateKeyring.scratch.appendingPathComponent("stress-\(UUID().uuidString.prefix(8))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let verdict = try runManyWriters(
        store, processes: processes, tasks: tasks, operations: operations, in: directory, runArguments: runArguments,
        started: { try PrivateKeyring.register($0) })
    print("\(verdict.summary) [\(PrivateKeyring.runningProvider.displayName)]")
    return verdict
}

extension KeyringTests {
    @Suite("Many writers on one keyring service")
    struct ManyWriters {
        @Test("3 processes × 3 tasks at once: every successful write is what the keyring holds")
        func stress() throws {
            // Operations per task: 12, or `$KEEPSAKE_STRESS_OPERATIONS` for a longer run.
            let operations = ProcessInfo.processInfo.environment["KEEPSAKE_STRESS_OPERATIONS"].flatMap(Int.init) ?? 12
            let (processes, tasks) = (3, 3)
            // The store every process writes, and two more that records are staged in and moved between.
            let store = [
                "--store", "keyring:" + PrivateKeyring.uniqueService("stress"),
                "--moves-from", "keyring:" + PrivateKeyring.uniqueService("stress-from"),
                "--moves-to", "keyring:" + PrivateKeyring.uniqueService("stress-to")
            ]
            let verdict = try runStress(store, processes: processes, tasks: tasks, operations: operations)

            #expect(verdict.processes == processes)
            #expect(verdict.tasks == tasks)
            #expect(verdict.operations == operations)
            // Operation `seq` of task `t` is `(seq + t) % 4`: two saves, an update, reads, and a
            // Migrator run and a move (task 0) or a seeded V0 record and a staged one (the other tasks).
            let perProcess = (0..<tasks).flatMap { task in (0..<operations).map { (task, ($0 + task) % 4) } }
            #expect(verdict.attempted("save") == processes * 2 * perProcess.filter { $0.1 == 0 }.count)
            #expect(verdict.attempted("update") == processes * perProcess.filter { $0.1 == 1 }.count)
            #expect(verdict.attempted("seed") == processes * perProcess.filter { $0.0 != 0 && $0.1 == 3 }.count)
            #expect(verdict.attempted("stage") == verdict.attempted("seed"))
            #expect(verdict.migratorRuns == processes * perProcess.filter { $0.0 == 0 && $0.1 == 3 }.count)
            #expect(verdict.moveRuns == verdict.migratorRuns)
            #expect(verdict.moved > 0)
            #expect(verdict.counted == verdict.successful.values.reduce(0, +))
            #expect(verdict.counted * 2 > verdict.attempted("save") + verdict.attempted("update"))
            #expect(verdict.lost == 0)
            #expect(verdict.problems == [], "\(verdict.problems.joined(separator: "\n"))")
        }

        @Test("3 processes × 3 tasks updating one record with 1 attempt each: all applied, none a conflict")
        func heldUpdates() throws {
            // Updates per task: 8, or `$KEEPSAKE_STRESS_OPERATIONS` for a longer run.
            let updates = ProcessInfo.processInfo.environment["KEEPSAKE_STRESS_OPERATIONS"].flatMap(Int.init) ?? 8
            let (processes, tasks) = (3, 3)
            let verdict = try runStress(
                ["--store", "keyring:" + PrivateKeyring.uniqueService("stress-updates")], processes: processes,
                tasks: tasks, operations: updates, runArguments: ["--workload", "updates", "--attempts", "1"])
            #expect(verdict.processes == processes)
            #expect(verdict.successful == ["update": processes * tasks * updates])
            #expect(verdict.failed == [:])
            #expect(verdict.counted == processes * tasks * updates)
            #expect(verdict.lost == 0)
            #expect(verdict.problems == [], "\(verdict.problems.joined(separator: "\n"))")
        }
    }
}
