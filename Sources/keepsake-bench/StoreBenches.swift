// Store benchmarks, run by the scripts in `scripts/bench-*` beside their floors and peers:
//
//   keepsake-bench keyring SERVICE GETS SETS        (inside scripts/with-private-keyring)
//   keepsake-bench defaults-get RECORDS READS       (one key from a suite, beside reading its bytes)
//   keepsake-bench files RECORDS DIRECTORY          (encrypted file store: batched put, run, run --backup)
//   keepsake-bench defaults-run RECORDS DIRECTORY   (defaults suite: run, run --backup)
//   keepsake-bench front-door LOADS                 (Vault.load of a Person V0 with its write-back,
//                                                    in a loop of its own: for a profiler)
//
// Each prints `name value` lines that the scripts put in a table.
import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeKeyring
import KeepsakeMemory
import KeepsakeSodium
import Migrations

#if canImport(Glibc)
import Glibc
#endif

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
        Data(#"{"data":{"alias":"Bob","email":"bob@example.com"},"schema":"Person","version":3}"#.utf8)
    ]
    try store.setData(records[0], forKey: "bench")
    let set = try medianMilliseconds(sets) { index in try store.setData(records[(index + 1) % 2], forKey: "bench") }
    print(String(format: "set %.3f", set))
    let get = try medianMilliseconds(gets) { _ in
        guard try store.data(forKey: "bench") != nil else { throw BenchUsage("the item is missing") }
    }
    print(String(format: "get %.3f", get))
}

/// A suite of RECORDS Person V3 envelopes; READS reads of one key (a different one each time)
/// while the file was just written (the cache compares bytes), then once it has settled (the
/// cache checks the file's identity), and with a new store per read (no cache: a full parse),
/// each beside the floor measured in the same run: reading the file's bytes (open, read, close).
/// Then `Vault.save` of one record into the suite (a read and one durable write of the suite).
func defaultsGetBench(_ arguments: [String]) throws {
    guard arguments.count == 2, let records = Int(arguments[0]), let reads = Int(arguments[1]), records > 0 else {
        throw BenchUsage("usage: keepsake-bench defaults-get RECORDS READS")
    }
    let directory = FileManager.default.temporaryDirectory.path + "/keepsake-bench-defaults-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/suite.json"
    let store = DefaultsStore(path: path)
    let envelope = { (index: Int) in
        Data(
            #"{"data":{"alias":"person \#(index)","email":"p\#(index)@example.com"},"schema":"Person","version":3}"#
                .utf8)
    }
    _ = try store.commit((0..<records).map { StoreWrite(key: "person-\($0)", value: envelope($0)) })
    let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    var buffer = [UInt8](repeating: 0, count: size + 1)
    func readBytes() -> Int {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + total, $0.count - total) }
            if count <= 0 { return total }
            total += count
        }
    }
    func keyed(_ index: Int) -> String { "person-\((index &* 7919) % records)" }
    func microseconds(_ body: (Int) throws -> Void) rethrows -> Double {
        try body(0)  // warm
        return try medianMilliseconds(reads, body) * 1000
    }

    var rows: [(String, Double, Double)] = []
    let floorFresh = microseconds { _ in guard readBytes() == size else { fatalError("short read") } }
    let fresh = try microseconds { index in
        guard try store.data(forKey: keyed(index)) != nil else { fatalError("missing") }
    }
    rows.append(("just written (bytes compared)", fresh, floorFresh))
    Thread.sleep(forTimeInterval: 3.5)  // let the version settle
    let floorSettled = microseconds { _ in guard readBytes() == size else { fatalError("short read") } }
    let settled = try microseconds { index in
        guard try store.data(forKey: keyed(index)) != nil else { fatalError("missing") }
    }
    rows.append(("settled (identity checked)", settled, floorSettled))
    let uncached = try microseconds { index in
        guard try DefaultsStore(path: path).data(forKey: keyed(index)) != nil else { fatalError("missing") }
    }
    rows.append(("new store per read (full parse)", uncached, floorSettled))

    let vault = Vault(store: store)
    var saves: [Double] = []
    for index in 0..<21 {
        let value = PersonV3(alias: "saved \(index)", email: "s\(index)@example.com")
        saves.append(
            try medianMilliseconds(1) { _ in try vault.save(value, in: Person.chain, forKey: keyed(index)) } * 1000)
    }
    let save = saves.sorted()[saves.count / 2]

    print("defaults: one key from a suite of \(records) records (\(size) bytes), µs per read, median of \(reads)")
    print("read                               keepsake   floor: read the file's bytes   ratio")
    for (name, value, floor) in rows {
        print(
            name.padding(toLength: 34, withPad: " ", startingAt: 0)
                + String(format: " %8.1f   %8.1f                       %6.2fx", value, floor, value / floor))
    }
    print(
        String(format: "Vault.save of one record (read + one durable write of the suite): %.0f µs, median of 21", save))
}

/// Seconds of one call of `body`.
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let (whole, attoseconds) = (clock.now - start).components
    return Double(whole) + Double(attoseconds) / 1e18
}

func personV0(_ index: Int) -> Data {
    Data(#"{"data":{"age":"\#(20 + index % 60)","name":"Person \#(index)"},"schema":"Person","version":0}"#.utf8)
}

/// An encrypted file store of RECORDS records in DIRECTORY (which must not exist; left for the
/// caller to remove: deleting thousands of small files makes the file system's next inode
/// allocations slower for a minute or more, which the next phase measured would pay): a batched
/// put of RECORDS Person V0 records into the empty store, a `Migrator.run` over them (a run with
/// a backup directory is refused on a store that encrypts: backups would hold plaintext), then a
/// rotation of the store's data key (`beginDataKeyRotation` and `reseal` in batches of 512: every record
/// file read, opened, sealed again and replaced, then the header rewritten).
///
/// Each run starts once its records are settled (`settleSeconds` after they were written, not
/// timed), as the records of a real migration are: the store then checks a record's
/// expectation under the lock by the file's identity instead of reading it again, which it
/// may only do for versions whose ctime is more than 2 whole seconds before they were read
/// (`SeenRecords` in Sources/KeepsakeSodium/SeenRecords.swift).
func filesBench(_ arguments: [String]) throws {
    // More than 3 s: a version stamped in second T is settled once read in second T + 3.
    let settleSeconds = 3.2
    guard arguments.count == 2, let records = Int(arguments[0]), records > 0 else {
        throw BenchUsage("usage: keepsake-bench files RECORDS DIRECTORY")
    }
    let directory = arguments[1]
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    let store = try SodiumFileStore.create(
        directory: directory + "/store", key: .keyFile(path: directory + "/store.key"))
    let seed = (0..<records).map { StoreWrite(key: "person-\($0)", value: personV0($0)) }
    let migrator = Migrator(
        store: store, chains: SampleModels.all,
        context: .fixed(now: Date(timeIntervalSince1970: 0), deviceIdentity: "bench"))
    var put = 0.0, run = 0.0
    put = try seconds { guard try store.commit(seed).allSatisfy({ $0 == .applied }) else { fatalError("put failed") } }
    Thread.sleep(forTimeInterval: settleSeconds)
    run = try seconds {
        guard try migrator.run().allSatisfy({ $0.state == .migrated }) else { fatalError("run failed") }
    }
    let rotate = try seconds {
        try store.beginDataKeyRotation()
        guard try store.reseal(batchSize: 512, progress: nil).isComplete else { fatalError("rotation failed") }
    }
    print(String(format: "put %.4f\nrun %.4f\nrotate %.4f", put, run, rotate))
}

/// A defaults suite of RECORDS Person V0 records in DIRECTORY (which must not exist; removed at
/// the end): a `Migrator.run`, then — on the same old suite again — a run with a backup directory.
func defaultsRunBench(_ arguments: [String]) throws {
    guard arguments.count == 2, let records = Int(arguments[0]), records > 0 else {
        throw BenchUsage("usage: keepsake-bench defaults-run RECORDS DIRECTORY")
    }
    let directory = arguments[1]
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = DefaultsStore(path: directory + "/suite.json")
    let seed = (0..<records).map { StoreWrite(key: "person-\($0)", value: personV0($0)) }
    let migrator = Migrator(
        store: store, chains: SampleModels.all,
        context: .fixed(now: Date(timeIntervalSince1970: 0), deviceIdentity: "bench"))
    _ = try store.commit(seed)
    let run = try seconds {
        guard try migrator.run().allSatisfy({ $0.state == .migrated }) else { fatalError("run failed") }
    }
    _ = try store.commit(seed)
    let backup = try BackupDirectory.create(in: directory + "/backups")
    let backedUp = try seconds {
        guard try migrator.run(backup: backup).allSatisfy({ $0.state == .migrated }) else { fatalError("run failed") }
    }
    print(String(format: "run %.4f\nrun-backup %.4f", run, backedUp))
}

/// `front-door LOADS`: `Vault.load` of a bare Person V0 from an in-memory store, migrated and
/// written back, LOADS times (the store put back to V0 before each) — the codec benchmark's
/// front-door row alone, for `perf record`. Prints the mean µs per call, reset included.
func frontDoorBench(_ arguments: [String]) throws {
    guard arguments.count == 1, let loads = Int(arguments[0]), loads > 0 else {
        throw BenchUsage("usage: keepsake-bench front-door LOADS")
    }
    let store = InMemoryStore(name: "bench")
    let vault = Vault(
        store: store, context: .fixed(now: Date(timeIntervalSince1970: 0), deviceIdentity: "bench"))
    let storedV0 = Data(#"{"age":"36","name":"Ada"}"#.utf8)
    let elapsed = try seconds {
        for _ in 0..<loads {
            try store.setData(storedV0, forKey: "person")
            guard case .written = try vault.load(Person.chain)?.writeBack else { fatalError("no write-back") }
        }
    }
    print(String(format: "front-door %.3f", elapsed / Double(loads) * 1e6))
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
    let benches: [String: ([String]) throws -> Void] = [
        "keyring": keyringBench, "defaults-get": defaultsGetBench, "files": filesBench,
        "defaults-run": defaultsRunBench, "front-door": frontDoorBench
    ]
    guard let bench = benches[name] else {
        FileHandle.standardError.write(
            Data(
                "keepsake-bench: unknown benchmark '\(name)' (\(benches.keys.sorted().joined(separator: ", ")))\n".utf8)
        )
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
