// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import KeepsakeKeyring
import KeepsakeTestKeyring
import KeepsakeTrial
import Testing

/// The KeepsakeTestKeyring catalog's reinstall example, verbatim (DocumentationExampleTests checks
/// that it still is), nested in the keyring suite so that it never runs while another test locks or
/// restarts the keyring.
extension KeyringTests {
    @Suite(.serialized, .enabled(if: TestKeyring.unavailableReason() == nil,
                                 Comment(rawValue: TestKeyring.unavailableReason() ?? "")))
    struct TrialEnforcementTests {
        @Test func reinstallKeepsTheTrial() throws {
            let keyring = try TestKeyring.shared()  // first: before anything in the process uses libsecret
            let launchDay = Date(timeIntervalSince1970: 1_767_261_600)
            let clock = TestClock(launchDay)
            let device = ReinstallSimulator(appID: "com.example.notes", keyring: keyring, clock: clock)
            func launch() throws -> TrialGuard {
                TrialGuard(store: try KeyringStore(service: "com.example.notes"), length: .days(14),
                           deviceIdentity: "test-device", clock: clock.clock)
            }

            #expect(try launch().start() != .notStarted)
            try device.reinstall(advancingClockBy: 3 * 86_400)
            guard case let .active(trial) = try launch().start() else {
                Issue.record("the reinstall did not keep the trial")
                return
            }
            #expect(trial.start == launchDay)
            #expect(trial.daysLeft == 11)
        }
    }
}
