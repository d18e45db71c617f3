import Foundation
import Keepsake
import Migrations

// What the store benchmarks (keepsake-bench-postgres, keepsake-bench-openbao) share: an internal
// target, not a product.

/// Prints `message` after the program's name on standard error and exits with status 1.
package func fail(_ message: String) -> Never {
    let name = (CommandLine.arguments.first as NSString?)?.lastPathComponent ?? "bench"
    FileHandle.standardError.write(Data("\(name): \(message)\n".utf8))
    exit(1)
}

/// The seconds since `start`.
package func seconds(since start: ContinuousClock.Instant) -> Double {
    let (whole, attoseconds) = (ContinuousClock.now - start).components
    return Double(whole) + Double(attoseconds) / 1e18
}

/// The key of the `index`th load of `records`: a fixed scattered order, the floors' too
/// (scripts/bench-postgres, scripts/bench-openbao).
package func loadKey(_ index: Int, records: Int) -> String { "p\((index &* 7919) % records + 1)" }

/// Times `run` (a `Migrator.run`) and prints `run SECONDS COUNT`; fails unless every record it
/// reports was migrated.
package func timeMigration(_ run: () throws(KeepsakeError) -> [RecordReport]) throws(KeepsakeError) {
    let start = ContinuousClock.now
    let reports = try run()
    let elapsed = seconds(since: start)
    let migrated = reports.filter { $0.state == .migrated }.count
    guard migrated == reports.count else { fail("\(reports.count - migrated) records not migrated") }
    print("run \(elapsed) \(migrated)")
}

/// Times `count` synchronous `Vault.load` calls of Person records, keys in ``loadKey(_:records:)``
/// order, and prints `load SECONDS COUNT`; fails when a record is absent.
package func timeLoads(_ vault: Vault, records: Int, count: Int) throws(KeepsakeError) {
    let start = ContinuousClock.now
    for index in 0..<count {
        guard try vault.load(Person.chain, forKey: loadKey(index, records: records)) != nil else {
            fail("no record \(loadKey(index, records: records))")
        }
    }
    print("load \(seconds(since: start)) \(count)")
}
