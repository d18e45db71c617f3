import Foundation
import KeepsakeTesting
import TestSupport
import Testing

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
