// Release-mode benchmark of the PostgreSQL store, run by scripts/bench-postgres beside a libpq
// floor doing the same statements in the same run (docs/PERFORMANCE.md):
//
//   keepsake-bench-postgres run URI             Migrator.run over the table's old Person records
//   keepsake-bench-postgres load URI N COUNT    COUNT Vault.load calls of keys p1…pN, sync then async
//   keepsake-bench-postgres nio SOCKET USER DATABASE TABLE N COUNT
//                                              the same reads through postgres-nio alone, on one
//                                              connection: what the driver itself costs
//
// URI is a store URI (postgresql://…?table=…). Each prints `WHAT SECONDS COUNT` lines; the
// store is opened (and its pool started) before the clock starts.
import BenchSupport
import Foundation
import Keepsake
import KeepsakePostgres
import Logging
import Migrations
import PostgresNIO

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: keepsake-bench-postgres run|load URI [N COUNT]") }

if arguments[1] == "nio" {
    // One connection, one `SELECT record … WHERE key = $1` per key, awaited in turn.
    guard arguments.count == 8, let records = Int(arguments[6]), let count = Int(arguments[7]) else {
        fail("usage: keepsake-bench-postgres nio SOCKET USER DATABASE TABLE N COUNT")
    }
    let table = arguments[5]
    guard table.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { fail("a plain table name, please") }
    let logger = Logger(label: "bench")
    do {
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                unixSocketPath: arguments[2], username: arguments[3], password: nil, database: arguments[4]),
            id: 1, logger: logger)
        // On the connection's own event loop, as Keepsake runs its work: the driver's best case.
        let onLoop = Task(executorPreference: EventLoopTaskExecutor(loop: connection.eventLoop)) {
            try await readEach(connection, table: table, records: records, count: count, logger: logger)
        }
        let elapsed = try await onLoop.value
        print("nio \(elapsed) \(count)")
        let closing: EventLoopFuture<Void> = connection.close()
        try await closing.get()
    } catch {
        fail("\(String(reflecting: error))")
    }
    exit(0)
}

/// `count` reads of single keys on `connection`, one after the other; the seconds they took.
func readEach(_ connection: PostgresConnection, table: String, records: Int, count: Int, logger: Logger) async throws
    -> Double
{
    let start = ContinuousClock.now
    for index in 0..<count {
        let key = loadKey(index, records: records)
        var found = 0
        for try await row in try await connection.query(
            "SELECT record FROM \(unescaped: table) WHERE key = \(key)", logger: logger)
        {
            _ = try row.decode(ByteBuffer.self)
            found += 1
        }
        guard found == 1 else { fail("no record \(key)") }
    }
    return seconds(since: start)
}

let store: PostgresStore
do {
    store = try PostgresStore(configuration: PostgresConfiguration(parsing: arguments[2]), requireExisting: true)
} catch {
    fail("\(error)")
}
let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "bench")

/// `count` loads through `Vault`'s async overload (top-level code would pick the synchronous one).
func loadAsync(_ vault: Vault, records: Int, count: Int) async throws(KeepsakeError) {
    for index in 0..<count {
        guard try await vault.load(Person.chain, forKey: loadKey(index, records: records)) != nil else {
            fail("no record \(loadKey(index, records: records))")
        }
    }
}

switch arguments[1] {
case "run":
    do {
        try timeMigration { () throws(KeepsakeError) in
            try Migrator(store: store, chains: [Person.chain.erased], context: context).run()
        }
    } catch {
        fail("\(error)")
    }
case "load":
    guard arguments.count == 5, let records = Int(arguments[3]), let count = Int(arguments[4]) else {
        fail("usage: keepsake-bench-postgres load URI N COUNT")
    }
    let vault = Vault(store: store, context: context)
    do {
        try timeLoads(vault, records: records, count: count)
        let asyncStart = ContinuousClock.now
        try await loadAsync(vault, records: records, count: count)
        print("load-async \(seconds(since: asyncStart)) \(count)")
    } catch {
        fail("\(error)")
    }
default:
    fail("unknown benchmark \(arguments[1]); run or load")
}
