import FileKit
import Foundation
import Keepsake
import Testing

@testable import KeepsakeSodium

private struct TallyV0: ModelVersion, Equatable {
    static let version = 0
    var count: Int
    var ids: [String]
}

private let tallyChain = ModelChain<TallyV0>(name: "Tally", defaultKeys: ["tally"])

extension RecordKeys {
    fileprivate static let tally = RecordKey(chain: tallyChain, default: TallyV0(count: 0, ids: []))
}

/// `Vault.update` on the encrypted file store: read, change and write under the store's lock.
@Suite("SodiumFileStore: updates held under the store's lock")
struct SodiumExclusiveUpdateTests {
    @Test("8 tasks × 25 updates with 1 attempt each: all 200 applied, none a conflict")
    func tasksTakeTurns() async throws {
        let directory = NSTemporaryDirectory() + "keepsake-sodium-held-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = try makeKeyFileStore(in: directory)
        let vault = Vault(store: store)
        let (succeeded, failures) = await withTaskGroup(of: ([String], [String]).self) { group in
            for task in 0..<8 {
                group.addTask {
                    var done: [String] = []
                    var failures: [String] = []
                    for step in 0..<25 {
                        let id = "t\(task)-\(step)"
                        do throws(KeepsakeError) {
                            // One attempt: on compare-and-swap, any race lost is a conflict.
                            try await vault.update(.tally, attempts: 1) { value in
                                value.count += 1
                                value.ids.append(id)
                            }
                            done.append(id)
                        } catch {
                            failures.append("\(id): \(error.code.rawValue): \(error)")
                        }
                    }
                    return (done, failures)
                }
            }
            var all: ([String], [String]) = ([], [])
            for await (done, failed) in group {
                all.0 += done
                all.1 += failed
            }
            return all
        }
        #expect(failures == [])
        #expect(succeeded.count == 200)
        let stored = try await vault.value(.tally)
        #expect(stored.count == 200)
        #expect(stored.ids.count == 200 && Set(stored.ids) == Set(succeeded))
        // A second instance of the store (as another process would open it) reads the same.
        #expect(try await Vault(store: try reopen(directory)).value(.tally) == stored)
    }

    @Test("a change that throws leaves every file exactly as it was and releases the lock")
    func throwingChange() throws {
        struct Refused: Error, Equatable {}
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            let vault = Vault(store: store)
            try vault.save(TallyV0(count: 1, ids: ["a"]), for: .tally)
            try store.setData(Data("other".utf8), forKey: "other")
            let storeDirectory = directory + "/store"
            func files() throws -> [String: [UInt8]] {
                var files: [String: [UInt8]] = [:]
                for name in try listing(storeDirectory) { files[name] = try readBytes(storeDirectory + "/" + name) }
                return files
            }
            let before = try files()
            do throws(KeepsakeError) {
                try vault.update(.tally) { value in
                    value.count = 99
                    throw Refused()
                }
                Issue.record("expected updateFailed")
            } catch {
                #expect(error.code == .updateFailed && error.underlying(as: Refused.self) == Refused(), "\(error)")
            }
            do throws(KeepsakeError) {
                try store.exclusiveUpdate(forKey: "absent") { _ throws(KeepsakeError) -> Data in
                    throw KeepsakeError(.invalidArgument, "refused")
                }
                Issue.record("expected invalidArgument")
            } catch {
                #expect(error.code == .invalidArgument, "\(error)")
            }
            #expect(try files() == before)
            // No one holds the store's lock, and the next update goes through.
            let lock = try StoreLock.acquire(storeDirectory + "/keepsake.lock", timeout: .zero)
            #expect(lock != nil)
            lock?.unlock()
            #expect(try vault.update(.tally) { $0.count += 1 } == TallyV0(count: 2, ids: ["a"]))
            #expect(try reopen(directory).data(forKey: "other") == Data("other".utf8))
        }
    }

    @Test("a write from inside a held update's change waits for the lock, then fails; nothing is written")
    func writeInsideChange() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            let store = try SodiumFileStore(
                directory: directory + "/store", key: .keyFile(path: directory + "/store.key"),
                lockTimeout: .milliseconds(200))
            let vault = Vault(store: store)
            try vault.save(TallyV0(count: 1, ids: []), for: .tally)
            let before = try store.data(forKey: "tally")
            var read: Data?
            do throws(KeepsakeError) {
                try vault.update(.tally) { value in
                    read = try store.data(forKey: "tally")  // reads take no lock
                    try store.setData(Data("1".utf8), forKey: "elsewhere")
                    value.count = 5
                }
                Issue.record("expected lockTimeout")
            } catch {
                #expect(error.code == .lockTimeout, "\(error)")
            }
            #expect(read == before)
            #expect(try store.keys() == ["tally"])
            #expect(try store.data(forKey: "tally") == before)
        }
    }
}
