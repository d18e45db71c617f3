// Store benchmarks, run by the scripts in `scripts/bench-*` beside their floors and peers:
//
//   keepsake-bench keyring SERVICE GETS SETS        (inside scripts/with-private-keyring)
//
// Each prints `name value` lines that the scripts put in a table.
import Foundation
import Keepsake
import KeepsakeKeyring

/// Median milliseconds of `count` timed calls of `body` (0 when `count` is 0).
func medianMilliseconds(_ count: Int, _ body: (Int) throws -> Void) rethrows -> Double {
    var samples: [Double] = []
    samples.reserveCapacity(count)
    let clock = ContinuousClock()
    for index in 0..<count {
        let start = clock.now
        try body(index)
        let (seconds, attoseconds) = (clock.now - start).components
        samples.append(Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
    }
    return samples.isEmpty ? 0 : samples.sorted()[samples.count / 2]
}

/// One item written, then SETS replacements and GETS reads of it through one KeyringStore:
/// the store's connection and session are opened by the first write, before timing starts.
func keyringBench(_ arguments: [String]) throws {
    guard arguments.count == 3, let gets = Int(arguments[1]), let sets = Int(arguments[2]) else {
        throw BenchUsage("usage: keepsake-bench keyring SERVICE GETS SETS")
    }
    let store = try KeyringStore(service: arguments[0])
    let records = [
        Data(#"{"data":{"alias":"Ada","email":"ada@example.com"},"schema":"Person","version":3}"#.utf8),
        Data(#"{"data":{"alias":"Bob","email":"bob@example.com"},"schema":"Person","version":3}"#.utf8),
    ]
    try store.setData(records[0], forKey: "bench")
    let set = try medianMilliseconds(sets) { index in try store.setData(records[(index + 1) % 2], forKey: "bench") }
    print(String(format: "set %.3f", set))
    let get = try medianMilliseconds(gets) { _ in
        guard try store.data(forKey: "bench") != nil else { throw BenchUsage("the item is missing") }
    }
    print(String(format: "get %.3f", get))
}

struct BenchUsage: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs the store benchmark named by the first argument; `false` when there is none (the codec
/// benchmark runs then).
func runStoreBench() -> Bool {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first else { return false }
    let benches: [String: ([String]) throws -> Void] = ["keyring": keyringBench]
    guard let bench = benches[name] else {
        FileHandle.standardError.write(Data("keepsake-bench: unknown benchmark '\(name)' (\(benches.keys.sorted().joined(separator: ", ")))\n".utf8))
        exit(64)
    }
    do {
        try bench(Array(arguments.dropFirst()))
    } catch {
        FileHandle.standardError.write(Data("keepsake-bench \(name): \(error)\n".utf8))
        exit(1)
    }
    return true
}
