import Configuration
import Foundation
import Keepsake
import KeepsakeConfiguration
import SettingsModels

/// The app's configuration as a server or a desktop app reads it: environment variables over
/// the settings record the app keeps in its store.
///
/// `settings.window.width` is the field `window.width` of the stored settings — migrated from
/// whatever version an older release stored, never written back by a read — unless
/// `SETTINGS_WINDOW_WIDTH` is set, which wins.
public enum AppConfiguration {
    /// A reader of `environment` (this process's by default) over the settings in `vault`.
    public static func reader(
        vault: Vault, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> ConfigReader {
        ConfigReader(providers: [
            EnvironmentVariablesProvider(environmentVariables: environment),
            KeepsakeProvider(vault: vault, records: [.init(.settings)])
        ])
    }

    /// The window size to open with: the configured one, else the standard size.
    public static func window(_ config: ConfigReader) -> SettingsV2.Window {
        SettingsV2.Window(
            width: config.int(forKey: "settings.window.width", default: SettingsV2.Window.standard.width),
            height: config.int(forKey: "settings.window.height", default: SettingsV2.Window.standard.height))
    }
}
