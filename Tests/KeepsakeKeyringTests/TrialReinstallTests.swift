import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeKeyring
import KeepsakeTestKeyring
import KeepsakeTrial
import Migrations
import Testing

typealias ScenarioClock = TestClock

/// An app installed on this machine: its defaults suite under the private keyring's throwaway
/// XDG directories (wiped by an uninstall), and its trial guard on the private keyring (which
/// an uninstall keeps).
struct InstalledApp {
    let service: String
    let clock: TestClock

    /// Installs the app: its first launch writes its suite; the guard is built from scratch.
    static func install(service: String, clock: TestClock) throws -> InstalledApp {
        let app = InstalledApp(service: service, clock: clock)
        try FileManager.default.createDirectory(at: try app.configDirectory, withIntermediateDirectories: true)
        try app.preferences.set(true, forKey: "onboarded")
        return app
    }

    /// `<config>/<service>`, in the keyring's throwaway home: where `DefaultsStore(suite:app:)`
    /// puts the app's suites. Named explicitly, because tests of other targets in this process
    /// set and unset `XDG_CONFIG_HOME`.
    var configDirectory: URL {
        get throws { try PrivateKeyring.keyring.home.config.appendingPathComponent(service) }
    }

    var preferences: DefaultsStore {
        get throws { DefaultsStore(path: try configDirectory.path + "/settings.json") }
    }

    var trial: TrialGuard {
        get throws {
            TrialGuard(
                store: try KeyringStore(service: service, timeout: .seconds(10)), length: .days(14),
                deviceIdentity: "device-A", clock: clock.clock)
        }
    }

    var device: ReinstallSimulator {
        get throws { ReinstallSimulator(appID: service, keyring: try PrivateKeyring.keyring, clock: clock) }
    }

    /// Uninstalls and reinstalls: the app's XDG directories are deleted, the keyring daemon
    /// restarts on the same files, the clock moves on.
    func reinstall(advancingClockBy seconds: TimeInterval = 0) throws {
        let report = try device.reinstall(advancingClockBy: seconds)
        #expect(report.removed.map(\.lastPathComponent) == [service], "only the suite's folder existed")
        try PrivateKeyring.waitUntilUsable()
        #expect(try preferences.keys() == [], "the suite went with the uninstall")
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
            guard case let .active(started) = try first.trial.start() else {
                Issue.record("not started")
                return
            }
            #expect(started.start == trialLaunch)
            #expect(started.daysLeft == 14)
            #expect(
                try storedRecord()
                    == #"{"data":{"deviceId":"device-A","startDate":"2025-11-21T04:40:00.000Z","version":2},"schema":"TrialInfo","version":2}"#
            )

            try first.reinstall(advancingClockBy: 3.5 * 86_400)
            let second = try InstalledApp.install(service: service, clock: clock)
            guard case let .active(after) = try second.trial.start() else {
                Issue.record("not active after reinstall")
                return
            }
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
            try app.reinstall()
            let again = try InstalledApp.install(service: service, clock: clock)
            #expect(try again.trial.start() == .expired(since: end, start: trialLaunch))
        }

        @Test("a V0 record written as the iOS-era app did migrates to V2 with its start intact")
        func migratesIOSEraRecord() throws {
            try PrivateKeyring.secretToolStore(
                label: "trial", attributes: [("service", service), ("username", "trialInfo")],
                secret: #"{"version":0,"startDate":785300000.123}"#)
            let start = Date(timeIntervalSinceReferenceDate: 785_300_000.123)
            let clock = ScenarioClock(start.addingTimeInterval(4 * 86_400 + 60))
            let app = try InstalledApp.install(service: service, clock: clock)
            guard case let .active(active) = try app.trial.status() else {
                Issue.record("not active")
                return
            }
            #expect(abs(active.start.timeIntervalSince(start)) < 0.000_5, "start kept to the millisecond")
            #expect(active.daysLeft == 9)
            let stored = try #require(try storedRecord())
            #expect(
                stored
                    == #"{"data":{"deviceId":"device-A","startDate":"2025-11-20T02:53:20.123Z","version":2},"schema":"TrialInfo","version":2}"#
            )
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
                    guard case let .unknown(error) = status else {
                        Issue.record("expected unknown, got \(status)")
                        continue
                    }
                    #expect(error.code == .locked)
                }
            }
            #expect(try storedRecord() == before)
        }

        @Test(
            "a corrupt or newer record is unknown and stays exactly as it was",
            arguments: [
                "not json at all",
                #"{"schema":"TrialInfo","version":3,"data":{"startDate":"2025-01-01T00:00:00.000Z","seats":2}}"#
            ])
        func unreadableIsUnknown(_ secret: String) throws {
            try PrivateKeyring.secretToolStore(
                label: "trial", attributes: [("service", service), ("username", "trialInfo")],
                secret: secret)
            let app = try InstalledApp.install(service: service, clock: ScenarioClock(trialLaunch))
            for status in [try app.trial.status(), try app.trial.start()] {
                guard case let .unknown(error) = status else {
                    Issue.record("expected unknown, got \(status)")
                    continue
                }
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
