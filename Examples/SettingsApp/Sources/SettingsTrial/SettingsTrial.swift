import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeTrial
import SettingsModels

/// The app's free trial: 14 days, its start kept in the keyring under the app's id, so that
/// uninstalling and reinstalling the app does not start it again.
public enum SettingsTrial {
    /// How long the trial lasts.
    public static let length = TrialLength.days(14)

    /// The guard as the app builds it: the keyring service is the app's id, the device identity
    /// derived from `/etc/machine-id` for this app.
    ///
    /// - Throws: `.unavailable` when there is no machine id (see `DeviceIdentity`).
    public static func live() throws(KeepsakeError) -> TrialGuard {
        try TrialGuard.keyring(service: Settings.appID, appID: Settings.appID, length: length)
    }

    /// The guard with what tests inject: the clock, the device identity, and a keyring service
    /// of the test's own.
    public static func guarded(
        service: String = Settings.appID, deviceIdentity: String, clock: @escaping @Sendable () -> Date
    ) throws(KeepsakeError) -> TrialGuard {
        TrialGuard(
            store: try KeyringStore(service: service), length: length, deviceIdentity: deviceIdentity, clock: clock)
    }

    /// What the app shows for `status`. A trial that cannot be read is never a fresh one.
    public static func banner(_ status: TrialStatus) -> String {
        switch status {
        case .notStarted: return "trial: not started"
        case let .active(trial): return "trial: \(trial.daysLeft) days left"
        case .expired: return "trial: ended"
        case .clockMovedBack: return "trial: the clock was set back; set it right to continue"
        case let .unknown(error): return "trial: cannot tell now (\(error.code.rawValue))"
        }
    }
}
