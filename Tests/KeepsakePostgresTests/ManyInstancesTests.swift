import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Migrations
import Testing

/// A child process whose output goes to a file, so that many can run at once.
struct Child {
    let process: Process
    let output: String

    init(_ binary: BuiltExecutable, _ arguments: [String], output: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary.path)
        process.arguments = arguments
        self.output = output
        guard FileManager.default.createFile(atPath: output, contents: nil) else {
            throw TestFailure("cannot create \(output)")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    func wait() throws -> (status: Int32, output: String) {
        process.waitUntilExit()
        return (process.terminationStatus, try String(contentsOfFile: output, encoding: .utf8))
    }
}

/// What keepsake-postgres-writer processes reported (Writer/main.swift): each save's token by
/// key, each update's tokens by key, and the failure lines; log lines in the output are skipped.
struct WriterTally {
    var saved: [String: String] = [:]
    var updated: [String: [String]] = [:]
    var failures: [String] = []

    /// Adds one writer's output.
    mutating func add(_ output: String) {
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard fields.count == 3, ["save", "update", "failed"].contains(fields[0]) else { continue }
            switch fields[0] {
            case "save": saved[fields[1]] = fields[2]
            case "update": updated[fields[1], default: []].append(fields[2])
            default: failures.append(line.count > 300 ? String(line.prefix(300)) : String(line))
            }
        }
    }

    /// How many updates were reported.
    var updates: Int { updated.values.map(\.count).reduce(0, +) }

    /// The writes that reported success and that `vault` does not hold: a save whose record's
    /// alias is not its token, an update whose token is not in its record's alias exactly once.
    func lost(in vault: Vault) throws -> Int {
        var lost = 0
        for (key, token) in saved where try vault.load(Person.chain, forKey: key)?.value.alias != token {
            lost += 1
        }
        for (key, tokens) in updated {
            let alias = try #require(try vault.load(Person.chain, forKey: key)?.value.alias)
            let present = alias.split(separator: ",").map(String.init)
            for token in tokens where present.filter({ $0 == token }).count != 1 { lost += 1 }
        }
        return lost
    }
}

extension PostgresServerTests {
    @Suite("Many instances on one PostgreSQL table")
    struct ManyInstancesTests {
        @Test("migrate run processes and Vault writers at once: no lost write, every record migrated, none torn")
        func migrateAndWritersAtOnce() throws {
            let table = newTable("many")
            let shared = 6
            try SQL.seedOldPeople(table: table, count: 2000)
            try SQL.seedOldPeople(table: table + "_x", count: shared, prefix: "shared-")
            try SQL.run("INSERT INTO \(table) SELECT * FROM \(table)_x; DROP TABLE \(table)_x")
            let store = storeURI(table: table)
            let directory =
                FileManager.default.temporaryDirectory.path + "/keepsake-pg-many-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only

            var children: [Child] = []
            for index in 0..<3 {
                children.append(
                    try Child(
                        migrateBinary, ["run", "--store", store, "--json"], output: "\(directory)/migrate-\(index)"))
            }
            var writers: [Child] = []
            for index in 0..<3 {
                writers.append(
                    try Child(
                        writerBinary,
                        [
                            "--store", store, "--process", "w\(index)", "--tasks", "3", "--operations", "40",
                            "--shared", "\(shared)"
                        ],
                        output: "\(directory)/writer-\(index)"))
            }
            // A record another run or a writer brought to the latest version meanwhile is reported
            // current (exit 0); exit 73 only for one still outdated after the run.
            var conflicted = 0
            for child in children {
                let (status, output) = try child.wait()
                #expect(status == 0 || status == 73, "migrate run: \(output.suffix(600))")
                if status == 73 { conflicted += 1 }
            }
            var tally = WriterTally()
            for writer in writers {
                let (status, output) = try writer.wait()
                #expect(status == 0, "writer: \(output.suffix(600))")
                tally.add(output)
            }
            #expect(tally.failures.isEmpty, "\(tally.failures)")
            #expect(tally.saved.count == 3 * 3 * 20 && tally.updates == 3 * 3 * 20)

            // Count against what the table holds, read through a Vault.
            let vault = Vault(store: try PostgresStore(configuration: PostgresConfiguration(parsing: store)))
            let lost = try tally.lost(in: vault)
            #expect(lost == 0, "lost successful writes: \(lost)")
            // Every seeded record is there, migrated by a run or by a writer's load (none absent or torn).
            let counts = try SQL.countMigrated(table: table)
            #expect(counts.rows == 2000 + shared + tally.saved.count)
            #expect(counts.migrated == counts.rows)
            print(
                "many instances: 3 migrate run + 3 writers × 3 tasks; \(tally.saved.count) saves, \(tally.updated.count) shared keys; runs that lost a race (exit 73): \(conflicted); lost \(lost)"
            )
        }

        @Test(
            "kill -9 of migrate run mid-batch leaves every record whole: each block's batch all or none",
            .timeLimit(.minutes(5)))
        func killLoop() throws {
            let table = newTable("kill")
            let count = 5000
            try SQL.seedOldPeople(table: table, count: count)
            let store = storeURI(table: table)
            let directory =
                FileManager.default.temporaryDirectory.path + "/keepsake-pg-kill-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            // A run on PostgreSQL commits each block of 2,048 records it reads as one batch
            // (StoreCapabilities.commitsRunInBlocks): a kill leaves whole blocks migrated.
            let block = 2_048
            var kills = 0
            var partial = 0
            var seen: [Int] = []
            for round in 0..<8 {
                let child = try Child(migrateBinary, ["run", "--store", store], output: "\(directory)/run-\(round)")
                usleep(UInt32(150_000 + round * 60_000))
                if child.process.isRunning {
                    kill(child.process.processIdentifier, SIGKILL)
                    kills += 1
                }
                _ = try child.wait()
                let counts = try SQL.countMigrated(table: table)
                #expect(counts.rows == count)
                seen.append(counts.migrated)
                if counts.migrated % block != 0 && counts.migrated != count { partial += 1 }
                if counts.migrated == count { break }
            }
            #expect(partial == 0, "a batch was applied in part: migrated after each round \(seen)")
            let final = try migrateBinary.run(["run", "--store", store])
            #expect(final.status == 0, "\(final.stderr)")
            #expect(try SQL.countMigrated(table: table).migrated == count)
            print(
                "kill loop: \(kills) kills of migrate run on \(count) records; migrated after each round \(seen); partial batches \(partial)"
            )
        }
    }
}
