import Dispatch
import Foundation
import Keepsake
import KeepsakeOpenBao
import KeepsakeStores

// keepsake-stress: one process of a many-writers stress test (docs/RELIABILITY.md), run N at once
// against one store by the ManyWriters tests.
//
//   keepsake-stress run --store URI [--key-file PATH] --process P --tasks M --operations K
//                       [--barrier DIR --processes N] [--moves-from URI --moves-to URI]
//                       [--workload mixed|updates] [--attempts A]
//       M concurrent tasks, each K operations (save, update, read, seed a V0 record or run the
//       Migrator) through Vault's async API; prints the ledger (Ledger.swift) as JSON.
//       With --barrier, waits until N processes have reached the start before the first operation.
//       With --moves-from/--moves-to, each seed also stages a record in the first store, and each
//       Migrator run is followed by a StoreTransfer move of every record from the first to the
//       second (a file: store of either uses --key-file too).
//       With --workload updates, every operation is an update of the shared counter (default
//       mixed: the operations above, in turn). --attempts: each update's attempts (default
//       Vault.defaultUpdateAttempts); with 1, an update that loses a race on a store that cannot
//       hold the record is a conflict.
//   keepsake-stress migrate --store URI [--key-file PATH]
//       one Migrator run over the store; prints each record's key and state.
//   keepsake-stress dump --store URI [--key-file PATH]
//       every record of the store as stored (decrypted for file:), as one JSON object.
//   keepsake-stress check --store URI [--key-file PATH] --ledgers DIR [--moves-from URI --moves-to URI]
//       the ledgers DIR/ledger.*.json counted against what the store holds (Check.swift); prints
//       the verdict: counts, every difference found, and a summary line.
//
// Exit status: 0 when the command ran (failed operations are in the ledger), 1 when the store
// could not be opened or the ledger written, 2 for a usage error.

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data(("keepsake-stress: " + message + "\n").utf8))
    exit(status)
}

/// `--NAME VALUE` pairs, by name.
func parseOptions(_ arguments: ArraySlice<String>) -> [String: String] {
    var arguments = arguments
    var options: [String: String] = [:]
    while !arguments.isEmpty {
        let name = arguments.removeFirst()
        guard name.hasPrefix("--"), !arguments.isEmpty else { fail("unexpected argument \(name)", status: 2) }
        options[String(name.dropFirst(2))] = arguments.removeFirst()
    }
    return options
}

let command = CommandLine.arguments.dropFirst().first ?? ""
let options = parseOptions(CommandLine.arguments.dropFirst(2))

func integer(_ name: String, default value: Int? = nil) -> Int {
    guard let text = options[name] else {
        guard let value else { fail("--\(name) is required", status: 2) }
        return value
    }
    guard let number = Int(text), number >= 0 else { fail("--\(name) takes a count, not \(text)", status: 2) }
    return number
}

/// The store `uriText` names, opened with `--key-file` for a `file:` store.
func openStore(_ uriText: String) -> any RecordStore {
    do throws(KeepsakeError) {
        let openOptions = StoreOpenOptions(
            masterKey: uriText.hasPrefix("file:") ? options["key-file"].map { .keyFile(path: $0) } : nil,
            keyringTimeout: .seconds(20))
        // The standard stores, and OpenBao's (the OpenBao tests run the same stress).
        return try StoreBackends.standard.adding(contentsOf: OpenBaoBackend.all).open(uriText, options: openOptions)
    } catch {
        fail("cannot open \(uriText): \(error)")
    }
}

guard let uriText = options["store"] else { fail("--store URI is required", status: 2) }
let store = openStore(uriText)
/// With `--moves-from A --moves-to B`: the two stores records are staged in and moved between.
let moves: (from: any RecordStore, to: any RecordStore)? = {
    switch (options["moves-from"], options["moves-to"]) {
    case let (from?, to?): return (openStore(from), openStore(to))
    case (nil, nil): return nil
    default: fail("--moves-from and --moves-to go together", status: 2)
    }
}()

func printJSON(_ value: some Encodable) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    do {
        FileHandle.standardOutput.write(try encoder.encode(value) + Data("\n".utf8))
    } catch {
        fail("cannot encode the output: \(error)")
    }
}

switch command {
case "run":
    let process = integer("process")
    let tasks = integer("tasks")
    let operations = integer("operations")
    let attempts = integer("attempts", default: Vault.defaultUpdateAttempts)
    guard attempts >= 1 else { fail("--attempts takes at least 1", status: 2) }
    let updatesOnly: Bool
    switch options["workload"] ?? "mixed" {
    case "mixed": updatesOnly = false
    case "updates": updatesOnly = true
    case let other: fail("--workload takes mixed or updates, not \(other)", status: 2)
    }
    if let barrier = options["barrier"] { waitAtBarrier(barrier, process: process, processes: integer("processes")) }
    let start = ContinuousClock.now
    let workload = Workload(
        store: store, moves: moves, process: process, updateAttempts: attempts, updatesOnly: updatesOnly)
    let entries = await workload.run(tasks: tasks, operations: operations)
    let elapsed = ContinuousClock.now - start
    printJSON(
        Ledger(
            process: process, tasks: tasks, operations: operations, store: store.uri,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            entries: entries))
case "migrate":
    do throws(KeepsakeError) {
        let reports = try Migrator(store: store, chains: stressChains, context: .live()).run()
        printJSON(Dictionary(reports.map { ($0.key, $0.state.rawValue) }) { first, _ in first })
    } catch {
        fail("migrate failed: \(error)")
    }
case "dump":
    printJSON(storedRecords(store))
case "check":
    guard let directory = options["ledgers"] else { fail("--ledgers DIR is required", status: 2) }
    var ledgers: [Ledger] = []
    do {
        for name in try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        where name.hasPrefix("ledger.") && name.hasSuffix(".json") {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
            ledgers.append(try JSONDecoder().decode(Ledger.self, from: data))
        }
    } catch {
        fail("cannot read the ledgers: \(error)")
    }
    printJSON(
        check(
            ledgers: ledgers, records: storedRecords(store),
            moves: moves.map { (storedRecords($0.from), storedRecords($0.to)) }, store: store.uri))
default:
    fail("unknown command '\(command)'; use run, migrate, dump or check", status: 2)
}

/// Marks this process ready in `directory`, then waits (up to a minute) until `processes`
/// processes are: every process starts its first operation at about the same moment.
func waitAtBarrier(_ directory: String, process: Int, processes: Int) {
    let ready = directory + "/ready.\(process)"
    guard FileManager.default.createFile(atPath: ready, contents: nil) else { fail("cannot create \(ready)") }
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        if names.filter({ $0.hasPrefix("ready.") }).count >= processes { return }
        usleep(5_000)
    }
    fail("only some of the \(processes) processes reached the start barrier within a minute")
}

/// Every record of `store`, as stored, by key.
func storedRecords(_ store: any RecordStore) -> [String: String] {
    var records: [String: String] = [:]
    do throws(KeepsakeError) {
        for (key, result) in try store.allRecords() {
            switch result {
            case let .success(bytes): records[key] = String(decoding: bytes, as: UTF8.self)
            case let .failure(error): fail("cannot read \(key): \(error)")
            }
        }
    } catch {
        fail("cannot list the store: \(error)")
    }
    return records
}
