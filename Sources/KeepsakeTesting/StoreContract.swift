import Foundation
import Keepsake
import Synchronization

/// The contract every `RecordStore` keeps, as checks any test framework can run.
///
/// Run each check on a new, empty store of the backend under test:
///
/// ```swift
/// import Testing
/// import KeepsakeTesting
///
/// @Test("MyStore keeps the store contract", arguments: StoreContract.checks)
/// func contract(_ check: StoreContract.Check) throws {
///     try check.run(on: MyStore(temporary: true))
/// }
/// ```
///
/// A check throws ``ContractViolation`` naming what the store did wrong.
public enum StoreContract {
    /// One named check of the contract.
    public struct Check: Sendable, CustomStringConvertible {
        /// What the check checks, in a sentence.
        public let name: String
        let body: @Sendable (any RecordStore) throws -> Void

        /// Runs the check on `store`, which must be empty.
        public func run(on store: any RecordStore) throws {
            try body(store)
        }

        public var description: String { name }
    }

    /// Every check of the contract.
    public static let checks: [Check] = [
        Check(name: "a new store is empty and an absent key reads as nil") { store in
            let keys = try store.keys()
            try expect(keys.isEmpty, "a new store lists keys \(keys)")
            try expect(try store.data(forKey: "missing") == nil, "an absent key did not read as nil")
            try expect(try store.allData().isEmpty, "a new store's allData is not empty")
        },
        Check(name: "stored bytes read back exactly") { store in
            let bytes = Data(#"{"text":"Grüße 👋","n":[1,2.5,-3e2],"ok":true,"nothing":null}"#.utf8)
            try store.setData(bytes, forKey: "note")
            try expectEqual(try store.data(forKey: "note"), bytes, "read-back bytes")
            try expectEqual(try store.keys(), ["note"], "keys after one write")
        },
        Check(name: "a write replaces the previous value in place") { store in
            try store.setData(Data(#""first""#.utf8), forKey: "k")
            try store.setData(Data(#""second""#.utf8), forKey: "k")
            try expectEqual(try store.data(forKey: "k"), Data(#""second""#.utf8), "value after replace")
            try expectEqual(try store.keys(), ["k"], "keys after replace")
        },
        Check(name: "remove deletes exactly one key, and removing an absent key is not an error") { store in
            try store.setData(Data("1".utf8), forKey: "a")
            try store.setData(Data("2".utf8), forKey: "b")
            try store.removeData(forKey: "a")
            try expect(try store.data(forKey: "a") == nil, "removed key still reads")
            try expectEqual(try store.data(forKey: "b"), Data("2".utf8), "other key after remove")
            try store.removeData(forKey: "a")
            try expectEqual(try store.keys(), ["b"], "keys after removes")
        },
        Check(name: "keys are listed sorted by UTF-8 bytes and allData matches them") { store in
            let values = ["zeta": "1", "alpha": "2", "Mid.key-1": "3", "ünïcode": "4"]
            for (key, value) in values { try store.setData(Data(value.utf8), forKey: key) }
            let sorted = values.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            try expectEqual(try store.keys(), sorted, "listed keys")
            let all = try store.allData()
            try expectEqual(all.map(\.key), sorted, "allData keys")
            for entry in all {
                try expectEqual(entry.data, Data(values[entry.key]!.utf8), "allData value of \(entry.key)")
            }
        },
        Check(name: "allRecords lists every readable record, sorted, as allData does") { store in
            try expect(try store.allRecords().isEmpty, "a new store's allRecords is not empty")
            let values = ["zeta": "1", "alpha": "2", "Mid.key-1": "3"]
            for (key, value) in values { try store.setData(Data(value.utf8), forKey: key) }
            let records = try store.allRecords()
            try expectEqual(
                records.map(\.key), values.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) },
                "allRecords keys")
            for record in records {
                guard case let .success(data) = record.result else {
                    throw ContractViolation("allRecords reports a healthy record '\(record.key)' as failed")
                }
                try expectEqual(data, Data(values[record.key]!.utf8), "allRecords value of \(record.key)")
            }
        },
        Check(name: "keys are exact strings: the composed and decomposed forms of café are two keys") { store in
            let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
            func bytes(_ keys: [String]) -> [[UInt8]] { keys.map { Array($0.utf8) } }
            try store.setData(Data("1".utf8), forKey: composed)
            try expect(try store.data(forKey: decomposed) == nil, "the decomposed key read the composed key's value")
            try store.setData(Data("2".utf8), forKey: decomposed)
            try expectEqual(
                try store.data(forKey: composed), Data("1".utf8), "composed key after writing the decomposed one")
            try expectEqual(try store.data(forKey: decomposed), Data("2".utf8), "decomposed key")
            // Sorted by UTF-8 bytes: "cafe" + U+0301 (65 CC 81) before "caf" + U+00E9 (C3 A9).
            try expectEqual(bytes(try store.keys()), bytes([decomposed, composed]), "keys, as UTF-8 bytes")
            let all = try store.allData()
            try expectEqual(bytes(all.map(\.key)), bytes([decomposed, composed]), "allData keys, as UTF-8 bytes")
            try expectEqual(all.map(\.data), [Data("2".utf8), Data("1".utf8)], "allData values")
            try expectEqual(bytes(try store.allRecords().map(\.key)), bytes([decomposed, composed]), "allRecords keys")
            let results = try store.commit([
                StoreWrite(
                    key: decomposed, value: Data("3".utf8),
                    expectation: .unchanged(Data("2".utf8)))
            ])
            try expectEqual(results, [.applied], "a guarded write to the decomposed key")
            try store.removeData(forKey: composed)
            try expectEqual(bytes(try store.keys()), bytes([decomposed]), "keys after removing the composed key")
            try expectEqual(
                try store.data(forKey: decomposed), Data("3".utf8), "decomposed key after removing the other")
        },
        Check(name: "a write expecting the current bytes applies; one expecting other bytes is a conflict") { store in
            let old = Data(#"{"v":1}"#.utf8)
            let new = Data(#"{"v":2}"#.utf8)
            try store.setData(old, forKey: "k")
            let results = try store.commit([
                StoreWrite(key: "k", value: Data(#"{"v":3}"#.utf8), expectation: .unchanged(new)),
                StoreWrite(key: "fresh", value: old, expectation: .unchanged(nil)),
                StoreWrite(key: "k", value: new, expectation: .unchanged(old))
            ])
            try expectEqual(results, [.conflict, .applied, .applied], "batch results")
            try expectEqual(try store.data(forKey: "k"), new, "value after guarded write")
            try expectEqual(try store.data(forKey: "fresh"), old, "value written when expected absent")
            let again = try store.commit([StoreWrite(key: "fresh", value: new, expectation: .unchanged(nil))])
            try expectEqual(again, [.conflict], "write expecting absence on a present key")
            try expectEqual(try store.data(forKey: "fresh"), old, "value after refused write")
        },
        Check(name: "an empty key is rejected with an error naming the store") { store in
            do {
                _ = try store.data(forKey: "")
                throw ContractViolation("reading an empty key did not throw")
            } catch let error as KeepsakeError {
                try expectEqual(error.code, .invalidArgument, "error code for an empty key")
                try expectEqual(error.store, store.uri, "store named in the error")
            }
            do {
                try store.setData(Data("1".utf8), forKey: "")
                throw ContractViolation("writing an empty key did not throw")
            } catch let error as KeepsakeError {
                try expectEqual(error.code, .invalidArgument, "error code for writing an empty key")
            }
            try expect(try store.keys().isEmpty, "a refused write left a key behind")
        },
        Check(name: "a 64 KiB value round-trips") { store in
            let text = String(repeating: "abcdefghijklmnopqrstuvwxyz012345", count: 2048)
            let bytes = Data(("\"" + text + "\"").utf8)
            try store.setData(bytes, forKey: "big")
            try expectEqual(try store.data(forKey: "big"), bytes, "64 KiB value")
        },
        Check(name: "an old record is migrated, written back once, then read as current") { store in
            let created = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
            try store.setData(Data(#"{"text":"hello","created":700000000.25}"#.utf8), forKey: "note")
            let context = MigrationContext.fixed(now: created, deviceIdentity: "contract")
            let vault = Vault(store: store, context: context)
            let first = try vault.load(ContractNote.chain)
            let expected = ContractNoteV1(text: "hello", created: created, tags: [])
            try expectEqual(first?.value, expected, "first load")
            try expectEqual(first?.storedVersion, 0, "stored version of the first load")
            try expectEqual(first?.writeBack, .written, "write-back of the first load")
            let stored = try store.data(forKey: "note")
            try expectEqual(
                stored,
                Data(
                    #"{"data":{"created":"2023-03-08T20:26:40.250Z","tags":[],"text":"hello"},"schema":"ContractNote","version":1}"#
                        .utf8),
                "written-back envelope")
            let second = try vault.load(ContractNote.chain)
            try expectEqual(second?.value, expected, "second load")
            try expectEqual(second?.storedVersion, 1, "stored version of the second load")
            try expectEqual(second?.writeBack, .notNeeded, "write-back of the second load")
            try expectEqual(try store.data(forKey: "note"), stored, "bytes after a load of a current record")
        },
        Check(name: "a record from a newer release is reported and never overwritten") { store in
            let newer = Data(
                #"{"data":{"text":"x","created":0,"tags":[],"color":"red"},"schema":"ContractNote","version":7}"#.utf8)
            try store.setData(newer, forKey: "note")
            let context = MigrationContext.fixed(now: Date(), deviceIdentity: "contract")
            let vault = Vault(store: store, context: context)
            try expectError(.newerVersion, store: store, key: "note") {
                _ = try vault.load(ContractNote.chain)
            }
            try expectError(.newerVersion, store: store, key: "note") {
                try vault.save(ContractNoteV1(text: "y", created: Date(), tags: []), in: ContractNote.chain)
            }
            try expectEqual(try store.data(forKey: "note"), newer, "newer record after load and save")
        },
        Check(name: "a corrupt record is an error and stays as it was") { store in
            let corrupt = Data(#"{"text": 12, "created": "yesterday"}"#.utf8)
            try store.setData(corrupt, forKey: "note")
            let context = MigrationContext.fixed(now: Date(), deviceIdentity: "contract")
            try expectError(.corruptRecord, store: store, key: "note") {
                _ = try Vault(store: store, context: context).load(ContractNote.chain)
            }
            try expectEqual(try store.data(forKey: "note"), corrupt, "corrupt record after a load")
        },
        Check(name: "saving a record stores the latest version in an envelope") { store in
            let note = ContractNoteV1(text: "saved", created: Date(timeIntervalSince1970: 1_700_000_000), tags: ["a"])
            let vault = Vault(store: store, context: .fixed(now: Date()))
            try vault.save(note, in: ContractNote.chain)
            try expectEqual(
                try store.data(forKey: "note"),
                Data(
                    #"{"data":{"created":"2023-11-14T22:13:20.000Z","tags":["a"],"text":"saved"},"schema":"ContractNote","version":1}"#
                        .utf8),
                "saved envelope")
            try expectEqual(try vault.load(ContractNote.chain)?.value, note, "load after save")
        },
        Check(name: "an exclusive update stores its change's result; one that throws writes nothing") { store in
            // Only for a store that offers it (an ExclusiveUpdateStore); any other store passes.
            guard let holding = store as? any ExclusiveUpdateStore else { return }
            var given: [Data?] = []
            try holding.exclusiveUpdate(forKey: "k") { current in
                given.append(current)
                return Data(#""first""#.utf8)
            }
            try holding.exclusiveUpdate(forKey: "k") { current in
                given.append(current)
                return Data(#""second""#.utf8)
            }
            try expectEqual(given, [nil, Data(#""first""#.utf8)], "what the changes were given")
            try expectEqual(try store.data(forKey: "k"), Data(#""second""#.utf8), "value after two updates")
            for key in ["k", "absent"] {
                do {
                    try holding.exclusiveUpdate(forKey: key) { _ throws(KeepsakeError) -> Data in
                        throw KeepsakeError(.updateFailed, "the contract's change refuses")
                    }
                    throw ContractViolation("an exclusive update whose change threw did not throw")
                } catch let error as KeepsakeError {
                    try expectEqual(error.code, .updateFailed, "error of an update whose change threw")
                }
            }
            try expectEqual(try store.data(forKey: "k"), Data(#""second""#.utf8), "value after a change threw")
            try expect(try store.data(forKey: "absent") == nil, "a change that threw left a value behind")
            // The store was released: another update and a batch go through (a store still held
            // would make them wait until its deadline, then throw).
            try holding.exclusiveUpdate(forKey: "k") { _ in Data(#""third""#.utf8) }
            try store.setData(Data("1".utf8), forKey: "other")
            try expectEqual(try store.data(forKey: "k"), Data(#""third""#.utf8), "value after the next update")
            try expectEqual(try store.keys(), ["k", "other"], "keys after the updates")
        },
        Check(name: "4 threads × 10 Vault updates with 1 attempt each: all applied, none a conflict") { store in
            // Only for a store that offers it (an ExclusiveUpdateStore): on any other store, an
            // update with one attempt may lose a race, which is a conflict.
            guard store is any ExclusiveUpdateStore else { return }
            let created = Date(timeIntervalSince1970: 1_700_000_000)
            let vault = Vault(store: store, context: .fixed(now: created))
            try vault.save(ContractNoteV1(text: "count", created: created, tags: []), in: ContractNote.chain)
            let (threads, updates) = (4, 10)
            let failures = Failures()
            let group = DispatchGroup()
            for thread in 0..<threads {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    for update in 0..<updates {
                        do {
                            try vault.update(ContractNote.chain, attempts: 1) { note in
                                guard let note else { throw ContractViolation("the record read as absent") }
                                // A change that takes a while: other writers come meanwhile, and
                                // wait for their turn.
                                usleep(1_000)
                                return ContractNoteV1(
                                    text: note.text, created: note.created, tags: note.tags + ["t\(thread).\(update)"])
                            }
                        } catch {
                            failures.append("update t\(thread).\(update): \(error)")
                        }
                    }
                }
            }
            group.wait()
            try expectEqual(failures.all, [], "updates that failed")
            let tags = try vault.load(ContractNote.chain)?.value.tags ?? []
            try expectEqual(tags.count, threads * updates, "tags added by the updates")
            try expectEqual(Set(tags).count, tags.count, "distinct tags")
        }
    ]
}

/// What the threads of a check reported, in the order they did.
private final class Failures: Sendable {
    private let list = Mutex<[String]>([])

    func append(_ failure: String) { list.withLock { $0.append(failure) } }

    var all: [String] { list.withLock { $0 } }
}

/// What a store did against the contract.
public struct ContractViolation: Error, CustomStringConvertible {
    public let description: String
    /// A violation, described for a person.
    public init(_ description: String) { self.description = description }
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ContractViolation(message()) }
}

func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: String) throws {
    guard actual == expected else {
        throw ContractViolation("\(what): expected \(describe(expected)), got \(describe(actual))")
    }
}

private func describe<T>(_ value: T) -> String {
    if let data = value as? Data { return String(decoding: data, as: UTF8.self) }
    if let data = value as? Data? { return data.map { String(decoding: $0, as: UTF8.self) } ?? "nil" }
    return String(describing: value)
}

func expectError(
    _ code: KeepsakeError.Code, store: any RecordStore, key: String, _ body: () throws -> Void
) throws {
    do {
        try body()
    } catch let error as KeepsakeError {
        try expectEqual(error.code, code, "error code")
        try expectEqual(error.store, store.uri, "store named in the error")
        try expectEqual(error.key, key, "key named in the error")
        return
    }
    throw ContractViolation("expected \(withArticle(code.rawValue)) error, but nothing was thrown")
}
