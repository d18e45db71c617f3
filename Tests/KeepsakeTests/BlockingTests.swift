import Dispatch
import FileKit
import Foundation
import Keepsake
import KeepsakeDefaults
import Migrations
import Synchronization
import Testing

extension RecordKeys {
    fileprivate static let person = RecordKey(chain: Person.chain)
}

/// A count the tasks of a test share.
private final class Tally: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

/// Waits up to `seconds` for `done`, polling; whether it came in time. Seen only after the
/// deadline (this task itself waited that long for a thread) counts as late.
private func within(seconds: Int, _ done: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while true {
        if done() { return ContinuousClock.now <= deadline }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(10))
    }
}

@Suite("Blocking calls: each has a thread of its own")
struct BlockingTests {
    @Test("with 64 calls blocked, the next one runs at once, not after they end")
    func nextCallIsNotQueued() async throws {
        let held = 64
        let release = DispatchSemaphore(value: 0)
        let started = Tally()
        let holders = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<held {
                    group.addTask {
                        await Blocking.run {
                            started.add()
                            release.wait()
                        }
                    }
                }
            }
        }
        defer { for _ in 0..<held { release.signal() } }
        // All 64 are on threads of their own, blocked, before the next one is asked for: a shared
        // queue would have given them about as many seconds.
        #expect(try await within(seconds: 20) { started.value == held })
        let ran = Tally()
        let next = Task { await Blocking.run { ran.add() } }
        #expect(try await within(seconds: 20) { ran.value == 1 }, "the next call waited behind the blocked ones")
        for _ in 0..<held { release.signal() }
        await holders.value
        await next.value
        #expect(started.value == held)
    }

    @Test("saves waiting for a lock another writer holds do not hold up a load from another store")
    func loadNotHeldUpByWaitingSaves() async throws {
        let directory = try temporaryDirectory()
        let locked = DefaultsStore(path: directory + "/locked.json", lockTimeout: .seconds(120))
        let other = DefaultsStore(path: directory + "/other.json")
        try await Vault(store: other).save(PersonV3(alias: "other", email: "o"), for: .person)
        // Another writer (as another process would) holds the first store's lock file.
        let lock = try #require(try StoreLock.acquire(directory + "/locked.json.lock", timeout: .seconds(5)))
        let vault = Vault(store: locked)
        let saved = Tally()
        let savers = Task {
            await withTaskGroup(of: KeepsakeError?.self) { group in
                for index in 0..<64 {
                    group.addTask {
                        do throws(KeepsakeError) {
                            try await vault.save(PersonV3(alias: "t\(index)", email: "e"), for: .person)
                            saved.add()
                            return nil
                        } catch {
                            return error
                        }
                    }
                }
                var failures: [KeepsakeError] = []
                for await failure in group { if let failure { failures.append(failure) } }
                return failures
            }
        }
        var unlocked = false
        defer { if !unlocked { lock.unlock() } }
        // Give the saves time to be waiting for the lock, each on a thread.
        try await Task.sleep(for: .milliseconds(500))
        let loaded = Tally()
        let load = Task {
            let value = try await Vault(store: other).load(.person)?.value
            loaded.add()
            return value?.alias
        }
        #expect(try await within(seconds: 20) { loaded.value == 1 }, "the load waited behind the saves")
        #expect(saved.value == 0, "a save went through while the lock was held")
        lock.unlock()
        unlocked = true
        #expect(try await load.value == "other")
        let failures = await savers.value
        #expect(failures.isEmpty, "\(failures)")
        #expect(saved.value == 64)
        let stored = try #require(try await vault.load(.person)).value.alias
        #expect(stored.hasPrefix("t"))
    }
}
