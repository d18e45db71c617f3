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
        let store = InMemoryStore()
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
}
