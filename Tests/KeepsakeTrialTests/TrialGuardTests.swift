import Foundation
import Keepsake
import KeepsakeMemory
import KeepsakeTrial
import Migrations
import Synchronization
import Testing

/// A settable clock for scenarios.
final class TestClock: Sendable {
    private let current: Mutex<Date>
    init(_ date: Date) { current = Mutex(date) }
    var now: Date { current.withLock { $0 } }
    func set(_ date: Date) { current.withLock { $0 = date } }
    func advance(days: Double) { current.withLock { $0 = $0.addingTimeInterval(days * 86_400) } }
}

/// A store that fails every call as a locked keyring does: the one fault an in-memory store
/// cannot produce (the real locked keyring is tested in KeepsakeKeyringTests).
final class LockedStore: RecordStore {
    let uri = "memory:locked"
    var capabilities: StoreCapabilities { [.survivesReinstall] }
    private func locked() -> KeepsakeError { KeepsakeError(.locked, store: uri, "the collection is locked") }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { throw locked() }
    func keys() throws(KeepsakeError) -> [String] { throw locked() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { throw locked() }
}

let day: TimeInterval = 86_400
let launch = Date(timeIntervalSince1970: 1_763_700_000)  // 2025-11-21T04:40:00Z

@Suite("Trial guard")
struct TrialGuardTests {
    func makeGuard(_ store: any RecordStore, _ clock: TestClock) -> TrialGuard {
        TrialGuard(store: store, length: .days(14), deviceIdentity: "device-A", clock: { clock.now })
    }

    @Test("first launch: not started until start() is called, then active with all days left")
    func firstLaunch() throws {
        let store = InMemoryStore()
        let clock = TestClock(launch)
        let trial = makeGuard(store, clock)
        #expect(trial.status() == .notStarted)
        #expect(try store.keys() == [], "status alone writes nothing")
        guard case let .active(active) = trial.start() else {
            Issue.record("not active")
            return
        }
        #expect(active.start == launch)
        #expect(active.daysLeft == 14)
        #expect(active.expiresAt == launch.addingTimeInterval(14 * day))
        let stored = try store.data(forKey: "trialInfo")
        #expect(
            stored
                == Data(
                    #"{"data":{"deviceId":"device-A","startDate":"2025-11-21T04:40:00.000Z","version":2},"schema":"TrialInfo","version":2}"#
                        .utf8))
    }

    @Test("start() on a running trial keeps its start date")
    func startIsNotAReset() throws {
        let store = InMemoryStore()
        let clock = TestClock(launch)
        _ = makeGuard(store, clock).start()
        clock.advance(days: 3.5)
        guard case let .active(active) = makeGuard(store, clock).start() else {
            Issue.record("not active")
            return
        }
        #expect(active.start == launch)
        #expect(active.daysLeft == 10)
    }

    @Test("after the trial length it is expired, since the exact end")
    func expiry() throws {
        let store = InMemoryStore()
        let clock = TestClock(launch)
        _ = makeGuard(store, clock).start()
        clock.advance(days: 14)
        #expect(makeGuard(store, clock).status() == .expired(since: launch.addingTimeInterval(14 * day), start: launch))
        clock.advance(days: 30)
        #expect(makeGuard(store, clock).start() == .expired(since: launch.addingTimeInterval(14 * day), start: launch))
    }

    @Test("a V0 record from the iOS-era app migrates with its start intact to the millisecond")
    func migratesV0() throws {
        let store = InMemoryStore(contents: ["trialInfo": Data(#"{"version":0,"startDate":785300000.123}"#.utf8)])
        let start = Date(timeIntervalSinceReferenceDate: 785_300_000.123)
        let clock = TestClock(start.addingTimeInterval(2.25 * day))
        guard case let .active(active) = makeGuard(store, clock).status() else {
            Issue.record("not active")
            return
        }
        #expect(abs(active.start.timeIntervalSince(start)) < 0.0005)
        #expect(active.daysLeft == 11)
        let written = String(decoding: try store.data(forKey: "trialInfo") ?? Data(), as: UTF8.self)
        #expect(written.contains(#""version":2"#))
        #expect(written.contains(#""deviceId":"device-A""#))
        let reread = try Vault(store: store, context: .fixed(now: launch, deviceIdentity: "x")).load(TrialInfo.chain)
        #expect(abs((reread?.value.startDate ?? .distantPast).timeIntervalSince(start)) < 0.0005)
    }

    @Test(
        "an unreadable or newer record is unknown, never a free reset, and stays as it was",
        arguments: [
            #"{"version":0,"startDate":"not a date"}"#,
            #"{"version":5,"startDate":0,"deviceId":"d","seats":3}"#,
            #"{"startedAt":0}"#,
            "garbage"
        ])
    func unreadable(_ stored: String) throws {
        let store = InMemoryStore(contents: ["trialInfo": Data(stored.utf8)])
        let clock = TestClock(launch)
        for status in [makeGuard(store, clock).status(), makeGuard(store, clock).start()] {
            guard case let .unknown(error) = status else {
                Issue.record("expected unknown, got \(status)")
                continue
            }
            #expect(error.key == "trialInfo")
        }
        #expect(try store.data(forKey: "trialInfo") == Data(stored.utf8))
    }

    @Test(
        "a trial record whose start date cannot be kept is unknown, never a crash, and nothing is written",
        arguments: [
            "1e400", "1e300", "-1e12", #""0000-01-01T00:00:00Z""#, #""10000-01-01T00:00:00Z""#,
            #""2023-02-30T00:00:00Z""#
        ])
    func hostileStartDate(_ date: String) throws {
        let stored = #"{"version":0,"startDate":\#(date)}"#
        let store = InMemoryStore(contents: ["trialInfo": Data(stored.utf8)])
        let clock = TestClock(launch)
        for status in [makeGuard(store, clock).status(), makeGuard(store, clock).start()] {
            guard case let .unknown(error) = status else {
                Issue.record("expected unknown, got \(status)")
                continue
            }
            #expect(error.code == .corruptRecord)
            #expect(error.key == "trialInfo")
        }
        #expect(try store.allData().map(\.key) == ["trialInfo"], "no latest-seen time was recorded")
        #expect(try store.data(forKey: "trialInfo") == Data(stored.utf8))
    }

    @Test(
        "a latest-seen time that cannot be kept is unknown, and the trial is not restarted",
        arguments: [
            #""99999-01-01T00:00:00Z""#, #""0000-01-01T00:00:00Z""#, #""2025-02-30T00:00:00Z""#, "1e400", #""""#
        ])
    func hostileLastSeen(_ text: String) throws {
        let store = InMemoryStore(contents: ["trialInfo.lastSeen": Data(text.utf8)])
        guard case let .unknown(error) = makeGuard(store, TestClock(launch)).start() else {
            Issue.record("expected unknown")
            return
        }
        #expect(error.code == .corruptRecord)
        #expect(error.key == "trialInfo.lastSeen")
        #expect(try store.keys() == ["trialInfo.lastSeen"])
    }

    @Test(
        "a clock outside the years 0001–9999 is unknown, never a crash, and nothing is written",
        arguments: [1e300, -1e12, Double.infinity, Double.nan])
    func hostileClock(_ seconds: Double) throws {
        let store = InMemoryStore()
        let clock = TestClock(Date(timeIntervalSinceReferenceDate: seconds))
        guard case let .unknown(error) = makeGuard(store, clock).start() else {
            Issue.record("expected unknown")
            return
        }
        #expect(error.code == .invalidArgument)
        #expect(try store.keys().isEmpty)
    }

    @Test("the latest-seen time is written to the millisecond, rounded down, as earlier releases read it")
    func lastSeenText() throws {
        let store = InMemoryStore()
        let clock = TestClock(Date(timeIntervalSinceReferenceDate: 785_300_000.123_9))
        _ = makeGuard(store, clock).start()
        #expect(try store.data(forKey: "trialInfo.lastSeen") == Data(#""2025-11-20T02:53:20.123Z""#.utf8))
    }

    @Test("a trial longer than an Int of days saturates its days left instead of trapping")
    func hugeLength() {
        let trial = TrialGuard(
            store: InMemoryStore(), length: TrialLength(seconds: 1e300), deviceIdentity: "d",
            clock: { launch })
        guard case let .active(active) = trial.start() else {
            Issue.record("not active")
            return
        }
        #expect(active.daysLeft == Int.max)
    }

    @Test("a locked store is unknown with the cause, and start() writes nothing")
    func locked() {
        let status = makeGuard(LockedStore(), TestClock(launch)).start()
        guard case let .unknown(error) = status else {
            Issue.record("expected unknown")
            return
        }
        #expect(error.code == .locked)
    }

    @Test("the clock moved back by days is reported instead of extending the trial; small moves are tolerated")
    func clockMovedBack() throws {
        let store = InMemoryStore()
        let clock = TestClock(launch)
        _ = makeGuard(store, clock).start()
        clock.advance(days: 10)
        guard case .active = makeGuard(store, clock).status() else {
            Issue.record("not active")
            return
        }
        let seen = clock.now
        clock.advance(days: -0.02)  // about half an hour back: within the tolerance
        guard case .active = makeGuard(store, clock).status() else {
            Issue.record("tolerated move not active")
            return
        }
        clock.advance(days: -5)
        #expect(makeGuard(store, clock).status() == .clockMovedBack(lastSeen: seen, now: clock.now))
        clock.set(launch.addingTimeInterval(-3 * day))  // before the trial even started
        #expect(makeGuard(store, clock).status() == .clockMovedBack(lastSeen: seen, now: clock.now))
    }

    @Test("deleting only the trial record does not restart the trial")
    func recordRemoved() throws {
        let store = InMemoryStore()
        let clock = TestClock(launch)
        _ = makeGuard(store, clock).start()
        clock.advance(days: 1)
        _ = makeGuard(store, clock).status()
        try store.removeData(forKey: "trialInfo")
        for status in [makeGuard(store, clock).status(), makeGuard(store, clock).start()] {
            guard case let .unknown(error) = status else {
                Issue.record("expected unknown, got \(status)")
                continue
            }
            #expect(error.code == .trialRecordRemoved)
        }
        #expect(try store.data(forKey: "trialInfo") == nil)
    }

    @Test("a time zone change does not move the trial")
    func timeZone() throws {
        let store = InMemoryStore()
        let clock = TestClock(launch)
        _ = makeGuard(store, clock).start()
        clock.advance(days: 2)
        let before = makeGuard(store, clock).status()
        setenv("TZ", "Pacific/Kiritimati", 1)
        tzset()
        defer {
            unsetenv("TZ")
            tzset()
        }
        #expect(makeGuard(store, clock).status() == before)
    }
}
