import Foundation
import Keepsake

/// The app's settings model: versions 0 → 2, stored under `"settings"`.
///
/// To add a version: add `SettingsV3.swift` with `typealias Predecessor = SettingsV2`, point
/// ``Latest`` at it, and update ``Keepsake/RecordKeys/settings``'s default. No existing version
/// file changes.
public enum Settings {
    /// The version the app reads and writes.
    public typealias Latest = SettingsV2

    /// The chain, named `Settings` in every envelope it writes.
    public static let chain = ModelChain<Latest>(name: "Settings", defaultKeys: ["settings"])

    /// The app's identifier: its config directory and its keyring service.
    public static let appID = "com.example.settings"
}

extension RecordKeys {
    /// The app's settings, under `"settings"`. While nothing is stored, ``Keepsake/Vault/value(_:)``
    /// returns the defaults of a fresh install (system theme, 14-point text, a new install
    /// identity made once per launch); they are stored only when the app saves.
    ///
    /// The install date is a whole second, so the stored text stays short (`….000Z`); records
    /// keep any date exactly, a finer one with more fraction digits.
    public static let settings = RecordKey(
        "settings", chain: Settings.chain,
        default: SettingsV2(
            theme: .system, textSize: 14, installID: UUID(),
            installedAt: Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))))
}
