import Foundation

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
