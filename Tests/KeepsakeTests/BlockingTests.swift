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

/// When each piece of work began, on the thread that ran it.
private final class StartTimes: Sendable {
    private let times = Mutex<[ContinuousClock.Instant]>([])
    var all: [ContinuousClock.Instant] { times.withLock { $0 } }
    func record() { times.withLock { $0.append(.now) } }
}

/// Waits up to `seconds` for `done`, polling; whether it came. A bound on failure only: in a
/// full parallel run this task may itself wait long for a thread of Swift's pool, so timings
/// that matter are taken on the threads that did the work.
private func within(seconds: Int, _ done: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !done() {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(10))
    }
    return true
}

@Suite("Blocking calls: each has a thread of its own")
struct BlockingTests {
    @Test("64 calls that block start at once, and the next one runs while they are blocked")
    func nextCallIsNotQueued() async throws {
        let held = 64
        let release = DispatchSemaphore(value: 0)
        let holders = StartTimes()
        let finished = Tally()
        var released = false
        defer { if !released { for _ in 0..<held { release.signal() } } }
        // Asked for in one go, from this thread; each notes, on its own thread, when it began.
        let asked = ContinuousClock.now
        for _ in 0..<held {
            Blocking.start {
                holders.record()
                release.wait()
                finished.add()
            }
        }
        #expect(try await within(seconds: 180) { holders.all.count == held })
        // A shared concurrent queue began the 64th about a minute after it was asked for (one
        // more thread a second); a thread each begins them within milliseconds.
        let lastStart = try #require(holders.all.max())
        #expect(lastStart - asked < .seconds(10), "the 64th call began \(lastStart - asked) after it was asked for")
        let probe = StartTimes()
        let askedNext = ContinuousClock.now
        Blocking.start { probe.record() }
        #expect(try await within(seconds: 180) { probe.all.count == 1 })
        #expect(finished.value == 0, "the others were still blocked")
        let ran = try #require(probe.all.first)
        #expect(ran - askedNext < .seconds(10), "the next call began \(ran - askedNext) after it was asked for")
        for _ in 0..<held { release.signal() }
        released = true
        #expect(try await within(seconds: 180) { finished.value == held })
    }

    @Test(
        "a load from another store completes while 64 saves wait for a lock another writer holds; then every save lands"
    )
    func loadNotHeldUpByWaitingSaves() async throws {
        let directory = try temporaryDirectory()
        let locked = DefaultsStore(path: directory + "/locked.json", lockTimeout: .seconds(600))
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
        #expect(try await within(seconds: 180) { loaded.value == 1 }, "the load waited behind the saves")
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
