// Release-mode benchmark of the OpenBao store, run by scripts/bench-openbao beside a libcurl floor
// sending the same HTTP requests over one kept-alive connection, in the same run
// (docs/PERFORMANCE.md):
//
//   keepsake-bench-openbao seed URI N           N old Person records p1…pN (bare V0), not timed
//   keepsake-bench-openbao run URI              Migrator.run over the folder's records
//   keepsake-bench-openbao load URI N COUNT     COUNT Vault.load calls of keys p1…pN
//
// URI is a store URI (openbao://…). Each timed command prints a `WHAT SECONDS COUNT` line; the
// store is opened and has logged in before the clock starts.
import BenchSupport
import Foundation
import Keepsake
import KeepsakeOpenBao
import Migrations

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: keepsake-bench-openbao seed|run|load URI [N [COUNT]]") }
let store: OpenBaoStore
do {
    store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: arguments[2]))
    _ = try store.data(forKey: "warm-up")  // logs in and opens the connection
} catch {
    fail("\(error)")
}

do {
    switch arguments[1] {
    case "seed":
        guard arguments.count == 4, let count = Int(arguments[3]) else { fail("usage: seed URI N") }
        for start in stride(from: 1, through: count, by: 500) {
            let writes = (start..<min(start + 500, count + 1)).map { index in
                StoreWrite(
                    key: "p\(index)", value: Data(#"{"age":"\#(index % 90)","name":"n\#(index)"}"#.utf8),
                    expectation: .unchanged(nil))
            }
            let results = try store.commit(writes)
            guard results.allSatisfy({ $0 == .applied }) else { fail("seeding failed: \(results)") }
        }
    case "run":
        let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "bench")
        let migrator = Migrator(
            store: store, chains: [Person.chain.erased], context: context, patternModels: [KeyPattern("p*"): "Person"])
        try timeMigration { () throws(KeepsakeError) in try migrator.run() }
    case "load":
        guard arguments.count == 5, let records = Int(arguments[3]), let count = Int(arguments[4]) else {
            fail("usage: load URI N COUNT")
        }
        try timeLoads(Vault(store: store), records: records, count: count)
    default:
        fail("unknown command \(arguments[1])")
    }
} catch {
    fail("\(error)")
}
