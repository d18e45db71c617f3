import FileKit
import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Testing

private struct CounterV0: ModelVersion, Equatable {
    static let version = 0
    var count: Int
    var ids: [String]
}

private let counterChain = ModelChain<CounterV0>(name: "Counter", defaultKeys: ["counter"])

extension RecordKeys {
    fileprivate static let counter = RecordKey(chain: counterChain, default: CounterV0(count: 0, ids: []))
    fileprivate static let person = RecordKey(chain: Person.chain)
    fileprivate static let tally = RecordKey("tally", chain: counterChain)
}

@Suite("save and update under concurrent tasks")
struct VaultConcurrencyTests {
    private func stores() throws -> [any RecordStore] {
        [InMemoryStore(), DefaultsStore(path: try temporaryDirectory() + "/suite.json")]
    }

    @Test("32 tasks saving one key: every save succeeds and the key holds one of their values")
    func concurrentSaves() async throws {
        for store in try stores() {
            let vault = Vault(store: store)
            for round in 0..<5 {
                let values = (0..<32).map { PersonV3(alias: "r\(round)-t\($0)", email: "e\($0)") }
                let failures = await withTaskGroup(of: KeepsakeError?.self) { group in
                    for value in values {
                        group.addTask {
                            do throws(KeepsakeError) {
                                try await vault.save(value, for: .person)
                                return nil
                            } catch { return error }
                        }
                    }
                    var failures: [KeepsakeError] = []
                    for await failure in group { if let failure { failures.append(failure) } }
                    return failures
                }
                #expect(failures.isEmpty, "\(store.uri): \(failures)")
                let stored = try #require(try await vault.load(.person)).value
                #expect(values.contains(stored), "\(store.uri): \(stored)")
            }
        }
    }

    @Test("8 tasks × 25 updates of one counter: none is lost, each id recorded once")
    func concurrentUpdates() async throws {
        for store in try stores() {
            let vault = Vault(store: store)
            let succeeded = await withTaskGroup(of: [String].self) { group in
                for task in 0..<8 {
                    group.addTask {
                        var done: [String] = []
                        for step in 0..<25 {
                            let id = "t\(task)-\(step)"
                            do throws(KeepsakeError) {
                                try await vault.update(.counter, attempts: 1_000) { value in
                                    value.count += 1
                                    value.ids.append(id)
                                }
                                done.append(id)
                            } catch {
                                Issue.record("\(store.uri): update \(id) failed: \(error)")
                            }
                        }
                        return done
                    }
                }
                var all: [String] = []
                for await ids in group { all += ids }
                return all
            }
            let stored = try await vault.value(.counter)
            #expect(succeeded.count == 200)
            #expect(stored.count == succeeded.count, "\(store.uri)")
            #expect(Set(stored.ids) == Set(succeeded) && stored.ids.count == succeeded.count, "\(store.uri)")
        }
    }

    @Test("update: conflict after its attempts, the change's error kept, notFound without a default; nothing written")
    func updateErrors() throws {
        struct Refused: Error, Equatable {}
        // A store that cannot hold a record (an app's own): update's compare-and-swap loop.
        let store = CompareAndSwapStore()
        let vault = Vault(store: store)
        do throws(KeepsakeError) {
            try vault.update(.tally) { $0.count += 1 }
            Issue.record("expected notFound")
        } catch { #expect(error.code == .notFound && error.key == "tally") }
        #expect(try store.data(forKey: "tally") == nil)

        try vault.save(CounterV0(count: 1, ids: []), for: .tally)
        let before = try store.data(forKey: "tally")
        do throws(KeepsakeError) {
            try vault.update(.tally) { _ in throw Refused() }
            Issue.record("expected updateFailed")
        } catch {
            #expect(error.code == .updateFailed)
            #expect(error.underlying(as: Refused.self) == Refused())
        }
        #expect(try store.data(forKey: "tally") == before)

        // Another writer changes the record during every attempt.
        var writes = 0
        do throws(KeepsakeError) {
            try vault.update(.tally, attempts: 3) { value in
                writes += 1
                try store.setData(Data(#"{"count":\#(100 + writes),"ids":[]}"#.utf8), forKey: "tally")
                value.count = -1
            }
            Issue.record("expected conflict")
        } catch {
            #expect(error.code == .conflict && error.message.contains("3 attempts"), "\(error)")
        }
        #expect(writes == 3)
        #expect(try store.data(forKey: "tally") == Data(#"{"count":103,"ids":[]}"#.utf8))

        // An update that wins starts from what the other writer stored.
        let updated = try vault.update(.tally) { $0.count += 1 }
        #expect(updated == CounterV0(count: 104, ids: []))
        #expect(try vault.load(.tally)?.value == updated)
    }

    @Test("8 tasks × 25 updates with 1 attempt each on stores that hold the record: all 200 applied, none a conflict")
    func heldUpdates() async throws {
        for store in try stores() {
            #expect(store is any ExclusiveUpdateStore, "\(store.uri)")
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
                                try await vault.update(.counter, attempts: 1) { value in
                                    // A change that takes a while: the other tasks' updates come meanwhile.
                                    usleep(200)
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
            #expect(failures == [], "\(store.uri)")
            #expect(succeeded.count == 200, "\(store.uri)")
            let stored = try await vault.value(.counter)
            #expect(stored.count == 200, "\(store.uri)")
            #expect(stored.ids.count == 200 && Set(stored.ids) == Set(succeeded), "\(store.uri)")
        }
    }

    @Test("a held update whose change throws leaves the stored bytes exactly as they were and releases the store")
    func heldUpdateThrows() throws {
        struct Refused: Error, Equatable {}
        let path = try temporaryDirectory() + "/suite.json"
        let stores: [any RecordStore] = [
            InMemoryStore(), DefaultsStore(path: path, lockTimeout: .milliseconds(500))
        ]
        for store in stores {
            let vault = Vault(store: store)
            try vault.save(CounterV0(count: 1, ids: ["a"]), for: .tally)
            try store.setData(Data(#"{"b":1,"z":[true]}"#.utf8), forKey: "other")
            let before = try store.allData()
            do throws(KeepsakeError) {
                try vault.update(.tally) { value in
                    value.count = 99
                    throw Refused()
                }
                Issue.record("\(store.uri): expected updateFailed")
            } catch {
                #expect(error.code == .updateFailed && error.underlying(as: Refused.self) == Refused(), "\(error)")
            }
            // The store's own error from inside the change, too.
            do throws(KeepsakeError) {
                try vault.update(.tally) { _ in throw KeepsakeError(.invalidArgument, "refused") }
                Issue.record("\(store.uri): expected invalidArgument")
            } catch {
                #expect(error.code == .invalidArgument && error.key == "tally", "\(error)")
            }
            let after = try store.allData()
            #expect(after.map(\.key) == before.map(\.key) && after.map(\.data) == before.map(\.data), "\(store.uri)")
            if store is DefaultsStore {
                // No one holds the suite's lock.
                let lock = try StoreLock.acquire(path + ".lock", timeout: .zero)
                #expect(lock != nil)
                lock?.unlock()
            }
            // The next update goes through (a suite still locked would be a lockTimeout).
            #expect(try vault.update(.tally) { $0.count += 1 } == CounterV0(count: 2, ids: ["a"]))
            #expect(try vault.load(.tally)?.value == CounterV0(count: 2, ids: ["a"]))
        }
    }

    @Test("the in-memory store: a write from inside a held update's change throws at once; a read sees the record")
    func memoryWriteInsideChange() throws {
        let store = InMemoryStore()
        let vault = Vault(store: store)
        try vault.save(CounterV0(count: 1, ids: []), for: .tally)
        let before = try store.data(forKey: "tally")
        var read: Data?
        do throws(KeepsakeError) {
            try vault.update(.tally) { value in
                read = try store.data(forKey: "tally")
                try store.setData(Data("1".utf8), forKey: "elsewhere")
                value.count = 5
            }
            Issue.record("expected invalidArgument")
        } catch {
            #expect(error.code == .invalidArgument && error.message.contains("inside the change"), "\(error)")
        }
        #expect(read == before)
        #expect(try store.keys() == ["tally"])
        #expect(try store.data(forKey: "tally") == before)
        // Outside an update, the same write goes through.
        try store.setData(Data("1".utf8), forKey: "elsewhere")
        #expect(try store.keys() == ["elsewhere", "tally"])
    }

    @Test("a defaults suite: a write from inside a held update's change waits for the lock, then fails")
    func defaultsWriteInsideChange() throws {
        let store = DefaultsStore(path: try temporaryDirectory() + "/suite.json", lockTimeout: .milliseconds(200))
        let vault = Vault(store: store)
        try vault.save(CounterV0(count: 1, ids: []), for: .tally)
        let before = try store.data(forKey: "tally")
        do throws(KeepsakeError) {
            try vault.update(.tally) { value in
                try store.setData(Data("1".utf8), forKey: "elsewhere")
                value.count = 5
            }
            Issue.record("expected lockTimeout")
        } catch {
            #expect(error.code == .lockTimeout, "\(error)")
        }
        #expect(try store.keys() == ["tally"])
        #expect(try store.data(forKey: "tally") == before)
    }
}

/// A store that offers no way to hold a record: an app's own, on which `Vault.update` reads,
/// changes and writes under compare-and-swap, up to its attempts.
private final class CompareAndSwapStore: RecordStore {
    private let base = InMemoryStore(name: "compare-and-swap")
    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { try base.commit(writes) }
}
