import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeTrial
import Migrations
import Synchronization
import Testing

/// A settable clock for the scenarios.
final class ScenarioClock: Sendable {
    private let current: Mutex<Date>
    init(_ date: Date) { current = Mutex(date) }
    var now: Date { current.withLock { $0 } }
    func advance(days: Double) { current.withLock { $0 = $0.addingTimeInterval(days * 86_400) } }
}

/// An app installed on this machine: its data directory (wiped by an uninstall), with a defaults
/// suite in it, and its trial guard on the private keyring (which an uninstall keeps).
struct InstalledApp {
    let service: String
    let dataDirectory: URL
    let clock: ScenarioClock

    /// Installs the app: a new data directory and defaults suite, a guard built from scratch.
    static func install(service: String, clock: ScenarioClock) throws -> InstalledApp {
        let data = PrivateKeyring.scratch.appendingPathComponent("app-data-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let app = InstalledApp(service: service, dataDirectory: data, clock: clock)
        try app.preferences.set(true, forKey: "onboarded")
        return app
    }

    var preferences: DefaultsStore { DefaultsStore(path: dataDirectory.path + "/settings.json") }

    var trial: TrialGuard {
        get throws {
            TrialGuard(store: try KeyringStore(service: service, timeout: .seconds(10)), length: .days(14),
                       deviceIdentity: "device-A", clock: { [clock] in clock.now })
        }
    }

    /// Uninstalls: the app's data directory and defaults suite are deleted.
    func uninstall() throws {
        try FileManager.default.removeItem(at: dataDirectory)
    }
}

let trialLaunch = Date(timeIntervalSince1970: 1_763_700_000)  // 2025-11-21T04:40:00Z

extension KeyringTests {
    @Suite("Trial guard: reinstall scenarios on the real keyring")
    struct TrialReinstallTests {
        let service = PrivateKeyring.uniqueService("trial")

        func storedRecord() throws -> String? {
            try PrivateKeyring.secretToolLookup(service: service, key: "trialInfo")
        }

        @Test("first launch starts the trial; a reinstall with the daemon restarted keeps its start and days left")
        func reinstallKeepsTrial() throws {
            let clock = ScenarioClock(trialLaunch)
            let first = try InstalledApp.install(service: service, clock: clock)
            #expect(try first.trial.status() == .notStarted)
            guard case let .active(started) = try first.trial.start() else { Issue.record("not started"); return }
            #expect(started.start == trialLaunch)
            #expect(started.daysLeft == 14)
            #expect(try storedRecord()
                    == #"{"data":{"deviceId":"device-A","startDate":"2025-11-21T04:40:00.000Z","version":2},"schema":"TrialInfo","version":2}"#)

            clock.advance(days: 3.5)
            try first.uninstall()
            try PrivateKeyring.restartDaemon()
            let second = try InstalledApp.install(service: service, clock: clock)
            #expect(try second.preferences.value(Bool.self, forKey: "onboarded") == true, "a fresh install's own data")
            guard case let .active(after) = try second.trial.start() else { Issue.record("not active after reinstall"); return }
            #expect(after.start == trialLaunch, "the reinstall did not restart the trial")
            #expect(after.daysLeft == 10)
            #expect(after.expiresAt == started.expiresAt)
        }

        @Test("after the trial length it is expired, and stays expired after another reinstall")
        func expiredSurvivesReinstall() throws {
            let clock = ScenarioClock(trialLaunch)
            let app = try InstalledApp.install(service: service, clock: clock)
            _ = try app.trial.start()
            clock.advance(days: 15)
            let end = trialLaunch.addingTimeInterval(14 * 86_400)
            #expect(try app.trial.status() == .expired(since: end, start: trialLaunch))
            try app.uninstall()
            try PrivateKeyring.restartDaemon()
            let again = try InstalledApp.install(service: service, clock: clock)
            #expect(try again.trial.start() == .expired(since: end, start: trialLaunch))
        }

        @Test("a V0 record written as the iOS-era app did migrates to V2 with its start intact")
        func migratesIOSEraRecord() throws {
            try PrivateKeyring.secretToolStore(label: "trial", attributes: [("service", service), ("username", "trialInfo")],
                                               secret: #"{"version":0,"startDate":785300000.123}"#)
            let start = Date(timeIntervalSinceReferenceDate: 785_300_000.123)
            let clock = ScenarioClock(start.addingTimeInterval(4 * 86_400 + 60))
            let app = try InstalledApp.install(service: service, clock: clock)
            guard case let .active(active) = try app.trial.status() else { Issue.record("not active"); return }
            #expect(abs(active.start.timeIntervalSince(start)) < 0.000_5, "start kept to the millisecond")
            #expect(active.daysLeft == 9)
            let stored = try #require(try storedRecord())
            #expect(stored == #"{"data":{"deviceId":"device-A","startDate":"2025-11-20T02:53:20.123Z","version":2},"schema":"TrialInfo","version":2}"#)
            #expect(try PrivateKeyring.secretToolSearch(service: service, key: "trialInfo").count == 1)
        }

        @Test("a locked keyring is unknown and neither starts nor changes the trial")
        func lockedIsUnknown() throws {
            let clock = ScenarioClock(trialLaunch)
            let app = try InstalledApp.install(service: service, clock: clock)
            _ = try app.trial.start()
            let before = try storedRecord()
            try PrivateKeyring.whileLocked {
                for status in [try app.trial.status(), try app.trial.start()] {
                    guard case let .unknown(error) = status else { Issue.record("expected unknown, got \(status)"); continue }
                    #expect(error.code == .locked)
                }
            }
            #expect(try storedRecord() == before)
        }

        @Test("a corrupt or newer record is unknown and stays exactly as it was", arguments: [
            "not json at all",
            #"{"schema":"TrialInfo","version":3,"data":{"startDate":"2025-01-01T00:00:00.000Z","seats":2}}"#,
        ])
        func unreadableIsUnknown(_ secret: String) throws {
            try PrivateKeyring.secretToolStore(label: "trial", attributes: [("service", service), ("username", "trialInfo")],
                                               secret: secret)
            let app = try InstalledApp.install(service: service, clock: ScenarioClock(trialLaunch))
            for status in [try app.trial.status(), try app.trial.start()] {
                guard case let .unknown(error) = status else { Issue.record("expected unknown, got \(status)"); continue }
                #expect([KeepsakeError.Code.corruptRecord, .newerVersion].contains(error.code))
            }
            #expect(try storedRecord() == secret)
        }

        @Test("the clock moved back by days is reported, not a longer trial")
        func clockMovedBack() throws {
            let clock = ScenarioClock(trialLaunch)
            let app = try InstalledApp.install(service: service, clock: clock)
            _ = try app.trial.start()
            clock.advance(days: 6)
            _ = try app.trial.status()
            let seen = clock.now
            clock.advance(days: -4)
            #expect(try app.trial.status() == .clockMovedBack(lastSeen: seen, now: clock.now))
        }
    }
}
