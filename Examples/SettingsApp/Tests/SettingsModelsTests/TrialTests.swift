import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeKeyring
import KeepsakeTestKeyring
import KeepsakeTrial
import SettingsModels
import SettingsTrial
import Testing

/// 2026-01-01T10:00:00Z: the first launch in every scenario.
let firstLaunch = Date(timeIntervalSince1970: 1_767_261_600)

/// The app on one test machine: its files in the private keyring's throwaway XDG directories,
/// its trial in the private keyring under a service of the test's own, a clock the test moves.
struct TestMachine {
    let keyring: TestKeyring
    let clock: TestClock
    let device: ReinstallSimulator
    let service: String

    init() throws {
        keyring = try TestKeyring.shared()  // before the first libsecret call of this process
        clock = TestClock(firstLaunch)
        device = ReinstallSimulator(appID: Settings.appID, keyring: keyring, clock: clock)
        service = "\(Settings.appID).test.\(UUID().uuidString.prefix(8))"
    }

    /// Launches the app: it saves its settings (a fresh install saves its defaults) and asks its
    /// trial guard — built from scratch, as a new process would.
    func launch() async throws -> TrialGuard {
        let vault = Vault(store: try DefaultsStore(suite: "settings", app: Settings.appID))
        try await vault.save(try await vault.value(.settings), for: .settings)
        return try SettingsTrial.guarded(service: service, deviceIdentity: "device-1", clock: clock.clock)
    }

    /// Whether the app's settings suite exists: a reinstall deletes it.
    var settingsSuiteExists: Bool {
        FileManager.default.fileExists(atPath: keyring.home.config.path + "/\(Settings.appID)/settings.json")
    }
}

extension OnPrivateKeyring {
    /// The app's trial as a user meets it: first launch, reinstalls, expiry, a clock set back, a
    /// locked keyring — on a real gnome-keyring whose daemon restarts at each reinstall.
    @Suite("The app's trial across reinstalls")
    struct TrialTests {
        @Test("first launch starts the trial: 14 days, started now, kept in the keyring")
        func firstLaunchStartsTrial() async throws {
            let machine = try TestMachine()
            let trial = try await machine.launch()
            #expect(trial.status() == .notStarted)
            let started = trial.start()
            guard case let .active(active) = started else {
                Issue.record("not started: \(started)")
                return
            }
            #expect(active.start == firstLaunch)
            #expect(active.daysLeft == 14)
            #expect(active.expiresAt == firstLaunch.addingTimeInterval(14 * 86_400))
            #expect(SettingsTrial.banner(started) == "trial: 14 days left")
            let stored = try KeyringStore(service: machine.service).data(forKey: "trialInfo")
            #expect(
                stored.map { String(decoding: $0, as: UTF8.self) }
                    == #"{"data":{"deviceId":"device-1","startDate":"2026-01-01T10:00:00.000Z","version":2},"schema":"TrialInfo","version":2}"#
            )
            #expect(trial.survivesReinstall)
        }

        @Test("a reinstall keeps the trial's start and its days left")
        func reinstallKeepsTrial() async throws {
            let machine = try TestMachine()
            _ = try await machine.launch().start()
            #expect(machine.settingsSuiteExists)

            let report = try machine.device.reinstall(advancingClockBy: 3 * 86_400 + 3_600)
            #expect(report.removed.map(\.lastPathComponent) == [Settings.appID], "the app's config folder went")
            #expect(!machine.settingsSuiteExists)

            let trial = try await machine.launch()
            let status = trial.start()  // what a first launch does: must not start a new trial
            guard case let .active(active) = status else {
                Issue.record("not active after reinstall: \(status)")
                return
            }
            #expect(active.start == firstLaunch, "the reinstall did not restart the trial")
            #expect(active.daysLeft == 10)
            #expect(active.expiresAt == firstLaunch.addingTimeInterval(14 * 86_400))
        }

        @Test("an expired trial stays expired after a reinstall")
        func expirySurvivesReinstall() async throws {
            let machine = try TestMachine()
            _ = try await machine.launch().start()
            machine.clock.advance(days: 15)
            let end = firstLaunch.addingTimeInterval(14 * 86_400)
            #expect(try await machine.launch().status() == .expired(since: end, start: firstLaunch))

            try machine.device.reinstall(advancingClockBy: 86_400)
            let trial = try await machine.launch()
            #expect(trial.start() == .expired(since: end, start: firstLaunch))
            #expect(SettingsTrial.banner(trial.status()) == "trial: ended")
        }

        @Test("a clock set back is reported, before and after a reinstall, never as more trial")
        func clockSetBack() async throws {
            let machine = try TestMachine()
            _ = try await machine.launch().start()
            machine.clock.advance(days: 5)
            let seen = machine.clock.now
            guard case .active = try await machine.launch().status() else {
                Issue.record("not active on day 5")
                return
            }

            machine.clock.advance(days: -3)
            #expect(try await machine.launch().status() == .clockMovedBack(lastSeen: seen, now: machine.clock.now))
            try machine.device.reinstall()
            let trial = try await machine.launch()
            #expect(trial.start() == .clockMovedBack(lastSeen: seen, now: machine.clock.now))
            #expect(SettingsTrial.banner(trial.status()) == "trial: the clock was set back; set it right to continue")
        }

        @Test("a locked keyring is unknown: no new trial, nothing written; unlocked, the trial is as it was")
        func lockedIsUnknown() async throws {
            let machine = try TestMachine()
            _ = try await machine.launch().start()
            let store = try KeyringStore(service: machine.service)
            let before = try store.allData().map { "\($0.key)=\(String(decoding: $0.data, as: UTF8.self))" }
            machine.clock.advance(days: 2)
            let trial = try await machine.launch()
            try machine.keyring.whileLocked { () throws -> Void in
                #expect(try machine.keyring.isLocked())
                for status in [trial.status(), trial.start()] {
                    guard case let .unknown(error) = status else {
                        Issue.record("expected unknown, got \(status)")
                        continue
                    }
                    #expect(error.code == .locked)
                    #expect(SettingsTrial.banner(status) == "trial: cannot tell now (locked)")
                }
            }
            #expect(try store.allData().map { "\($0.key)=\(String(decoding: $0.data, as: UTF8.self))" } == before)
            guard case let .active(active) = trial.status() else {
                Issue.record("not active once unlocked")
                return
            }
            #expect(active.start == firstLaunch && active.daysLeft == 12)
        }
    }
}
