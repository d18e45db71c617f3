import Foundation
import Keepsake
import KeepsakeTrial
import Synchronization
import Testing

@testable import KeepsakeKeyring

/// Runs `body(0..<count)` on `count` threads of their own, started together, and waits for all:
/// real parallel writers (the cooperative pool has as many threads as cores, two here).
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            start.wait()
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
}

extension KeyringTests {
    /// The Secret Service has no transactions, so Keepsake serialises its own writers
    /// — threads of a process and processes — and a read-back that finds another writer's bytes
    /// is not "the provider altered it". Every test counts the writes that reported success
    /// against what is stored.
    @Suite("Many writers on one key")
    struct Concurrency {
        /// What the threads of one round did: each success's value, and each failure.
        struct Round: Sendable {
            var successes: [Data] = []
            var failures: [KeepsakeError] = []
        }

        @Test("8 threads × 20 rounds save one key: the key holds one of each round's successful writes, none undone")
        func threadsSaveOneKey() throws {
            let store = try PrivateKeyring.freshStore("many-savers")
            let key = "shared"
            var allFailures: [KeepsakeError] = []
            var successes = 0
            for round in 0..<20 {
                // Every other round starts with no item, so the writers race to create it.
                if round % 2 == 0 { try store.removeData(forKey: key) }
                let outcome = Mutex(Round())
                onThreads(8) { writer in
                    let value = Data(#"{"round":\#(round),"writer":\#(writer)}"#.utf8)
                    do throws(KeepsakeError) {
                        try store.setData(value, forKey: key)
                        outcome.withLock { $0.successes.append(value) }
                    } catch {
                        outcome.withLock { $0.failures.append(error) }
                    }
                }
                let result = outcome.withLock { $0 }
                allFailures += result.failures
                successes += result.successes.count
                let stored = try store.data(forKey: key)
                #expect(
                    stored.map(result.successes.contains) == true,
                    "round \(round): stored \(stored.map { String(decoding: $0, as: UTF8.self) } ?? "nothing"), successes \(result.successes.count)"
                )
                #expect(
                    try PrivateKeyring.secretToolSearch(service: store.service).count == 1, "round \(round): one item")
            }
            #expect(!allFailures.contains { $0.code == .verificationFailed }, "\(allFailures)")
            #expect(allFailures.isEmpty, "\(allFailures.map { "\($0.code.rawValue): \($0.message)" })")
            #expect(successes == 160)
        }

        @Test("8 threads create one key if absent, 10 times: exactly one is applied, and it is stored")
        func threadsCreateIfAbsent() throws {
            let store = try PrivateKeyring.freshStore("create-if-absent")
            for round in 0..<10 {
                let key = "round-\(round)"
                let results = Mutex<[Int: StoreWriteResult]>([:])
                let failures = Mutex<[KeepsakeError]>([])
                onThreads(8) { writer in
                    let write = StoreWrite(
                        key: key, value: Data(#"{"writer":\#(writer)}"#.utf8), expectation: .unchanged(nil))
                    do throws(KeepsakeError) {
                        let result = try store.commit([write])
                        results.withLock { $0[writer] = result.first }
                    } catch {
                        failures.withLock { $0.append(error) }
                    }
                }
                let applied = results.withLock { $0 }.filter { $0.value == .applied }.map(\.key)
                #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
                #expect(applied.count == 1, "round \(round): applied by \(applied)")
                #expect(results.withLock { $0 }.values.filter { $0 == .conflict }.count == 7)
                if let winner = applied.first {
                    #expect(try store.data(forKey: key) == Data(#"{"writer":\#(winner)}"#.utf8))
                }
            }
        }

        @Test("a reader beside a writer that creates and deletes the key sees a record or none, never an error")
        func readerBesideDeletes() throws {
            let store = try PrivateKeyring.freshStore("vanishing")
            let record = Data(#"{"data":{"alias":"Ada"},"schema":"Person","version":3}"#.utf8)
            let readerErrors = Mutex<[KeepsakeError]>([])
            let writerErrors = Mutex<[KeepsakeError]>([])
            let done = Atomic(false)
            let reads = Atomic(0)
            onThreads(2) { role in
                if role == 0 {
                    defer { done.store(true, ordering: .sequentiallyConsistent) }
                    for _ in 0..<40 {
                        do throws(KeepsakeError) {
                            try store.setData(record, forKey: "k")
                            try store.removeData(forKey: "k")
                        } catch {
                            writerErrors.withLock { $0.append(error) }
                        }
                    }
                } else {
                    while !done.load(ordering: .sequentiallyConsistent) {
                        do throws(KeepsakeError) {
                            let read = try store.data(forKey: "k")
                            #expect(read == nil || read == record)
                            _ = try store.keys()
                            reads.add(1, ordering: .relaxed)
                        } catch {
                            readerErrors.withLock { $0.append(error) }
                        }
                    }
                }
            }
            #expect(writerErrors.withLock { $0 }.isEmpty, "\(writerErrors.withLock { $0 })")
            let errors = readerErrors.withLock { $0 }
            #expect(
                errors.isEmpty, "\(errors.map { "\($0.code.rawValue): \($0.message) \(String(describing: $0.cause))" })"
            )
            #expect(reads.load(ordering: .relaxed) > 0)
        }

        @Test("4 migrate processes × 3 rounds put one key: the key holds one of each round's successful puts")
        func processesPutOneKey() throws {
            let service = PrivateKeyring.uniqueService("many-puts")
            let store = try KeyringStore(service: service, timeout: .seconds(10))
            for round in 0..<3 {
                let exits = Mutex<[Int: Shell.Result]>([:])
                onThreads(4) { writer in
                    let value = Data(#"{"round":\#(round),"writer":\#(writer)}"#.utf8)
                    let result: Shell.Result
                    do {
                        result = try Shell.run(
                            [migrateExecutable, "put", "shared", "--store", "keyring:" + service], stdin: value)
                    } catch {
                        result = Shell.Result(status: -1, stdout: "", stderr: "\(error)")
                    }
                    exits.withLock { $0[writer] = result }
                }
                let results = exits.withLock { $0 }
                let succeeded = results.filter { $0.value.status == 0 }.map { writer, _ in
                    Data(#"{"round":\#(round),"writer":\#(writer)}"#.utf8)
                }
                for (writer, result) in results where result.status != 0 {
                    Issue.record("round \(round), writer \(writer) exited \(result.status): \(result.stderr)")
                }
                let stored = try store.data(forKey: "shared")
                #expect(
                    stored.map(succeeded.contains) == true,
                    "round \(round): stored \(stored.map { String(decoding: $0, as: UTF8.self) } ?? "nothing")")
            }
        }

        @Test("8 threads start one trial at once: one record is stored, and all report its start")
        func threadsStartOneTrial() throws {
            let store = try PrivateKeyring.freshStore("trial-threads")
            let statuses = Mutex<[TrialStatus]>([])
            onThreads(8) { writer in
                let trial = TrialGuard(
                    store: store, length: .days(14), deviceIdentity: "device-\(writer)",
                    clock: { Date().addingTimeInterval(Double(writer) / 1000) })
                let status = trial.start()
                statuses.withLock { $0.append(status) }
            }
            let starts = statuses.withLock { $0 }.map { status -> Date? in
                guard case let .active(active) = status else { return nil }
                return active.start
            }
            #expect(starts.allSatisfy { $0 != nil }, "\(statuses.withLock { $0 })")
            #expect(Set(starts).count == 1, "\(starts)")
            let stored = try #require(try Self.storedTrialStart(store))
            let reported = try #require(starts.first ?? nil)
            let storedDate = try #require(Self.date(stored))
            #expect(abs(reported.timeIntervalSince(storedDate)) < 1e-5, "reported \(reported), stored \(stored)")
        }

        @Test("4 migrate processes start one trial at once: all report the start that is stored")
        func processesStartOneTrial() throws {
            let service = PrivateKeyring.uniqueService("trial-processes")
            let outputs = Mutex<[Int: Shell.Result]>([:])
            onThreads(4) { launch in
                let result: Shell.Result
                do {
                    result = try Shell.run([
                        migrateExecutable, "trial", "start", "--store", "keyring:" + service, "--json",
                        "--device-id", "device-\(launch)"
                    ])
                } catch {
                    result = Shell.Result(status: -1, stdout: "", stderr: "\(error)")
                }
                outputs.withLock { $0[launch] = result }
            }
            var starts: [String] = []
            for (launch, result) in outputs.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
                #expect(result.status == 0, "launch \(launch): \(result.stdout) \(result.stderr)")
                let json = try jsonObject(result.stdout)
                #expect(json["state"] as? String == "active", "launch \(launch): \(result.stdout)")
                if let start = json["startDate"] as? String { starts.append(start) }
            }
            #expect(starts.count == 4 && Set(starts).count == 1, "\(starts)")
            let store = try KeyringStore(service: service, timeout: .seconds(10))
            // The CLI prints the start to the millisecond; the record may hold more digits.
            let stored = try #require(try Self.storedTrialStart(store))
            #expect(starts.first == String(stored.prefix(23)) + "Z", "stored \(stored)")
        }

        @Test("8 threads store a master key if absent for one new store: all get the one key stored")
        func threadsStoreOneMasterKey() throws {
            let storeID = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let item = try KeyringMasterKeyItem(storeID: storeID, timeout: .seconds(10))
            let returned = Mutex<[Int: [UInt8]]>([:])
            let failures = Mutex<[KeepsakeError]>([])
            onThreads(8) { writer in
                let key = (0..<KeyringMasterKeyItem.keyBytes).map { UInt8(truncatingIfNeeded: $0 * 8 + writer) }
                do throws(KeepsakeError) {
                    let kept = try item.storeIfAbsent(key)
                    returned.withLock { $0[writer] = kept }
                } catch {
                    failures.withLock { $0.append(error) }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
            let keys = returned.withLock { $0 }
            #expect(keys.count == 8 && Set(keys.values).count == 1, "\(keys)")
            #expect(try item.read() == keys.values.first)
        }

        /// The `startDate` text of the TrialInfo V2 record stored under `trialInfo`.
        static func storedTrialStart(_ store: KeyringStore) throws -> String? {
            guard let bytes = try store.data(forKey: "trialInfo") else { return nil }
            let record = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
            let data = try #require(record["data"] as? [String: Any])
            return data["startDate"] as? String
        }

        /// `2026-01-31T12:00:00.123456Z` (UTC, any number of fraction digits) as a date.
        static func date(_ text: String) -> Date? {
            let parts = text.dropLast().split(separator: ".", maxSplits: 1)
            let formatter = ISO8601DateFormatter()
            guard text.hasSuffix("Z"), let whole = formatter.date(from: String(parts[0]) + "Z") else { return nil }
            let fraction = parts.count == 2 ? Double("0." + parts[1]) : 0
            return fraction.map { whole.addingTimeInterval($0) }
        }
    }
}
