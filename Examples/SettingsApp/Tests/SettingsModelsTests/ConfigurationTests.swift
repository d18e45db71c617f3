import Configuration
import Foundation
import Keepsake
import KeepsakeDefaults
import SettingsConfiguration
import SettingsModels
import Testing

/// The app's configuration: environment variables over the settings record.
@Suite("Configuration: environment variables over the settings record")
struct ConfigurationTests {
    /// A suite holding the settings as the first release stored them (V0, bare).
    func v0Suite() throws -> (DefaultsStore, Data) {
        let store = DefaultsStore(path: try temporaryDirectory().appendingPathComponent("settings.json").path)
        let v0 = Data(#"{"darkMode":true,"fontSize":17}"#.utf8)
        try store.setData(v0, forKey: "settings")
        return (store, v0)
    }

    @Test("a field of a V0 record reads migrated, and the read writes nothing back")
    func readsMigrated() throws {
        let (store, v0) = try v0Suite()
        let config = AppConfiguration.reader(vault: Vault(store: store), environment: [:])
        #expect(config.int(forKey: "settings.textSize") == 17)
        #expect(config.string(forKey: "settings.theme") == "dark")
        #expect(AppConfiguration.window(config) == SettingsV2.Window.standard)
        #expect(try store.data(forKey: "settings") == v0)
    }

    @Test("an environment variable wins over the stored record")
    func environmentWins() throws {
        let (store, _) = try v0Suite()
        let config = AppConfiguration.reader(vault: Vault(store: store), environment: ["SETTINGS_WINDOW_WIDTH": "1280"])
        #expect(AppConfiguration.window(config) == SettingsV2.Window(width: 1280, height: 600))
    }

    @Test("a record a newer release wrote is an error, never the default")
    func newerIsAnError() throws {
        let (store, _) = try v0Suite()
        try store.setData(Data(#"{"version":9,"schema":"Settings","data":{}}"#.utf8), forKey: "settings")
        let config = AppConfiguration.reader(vault: Vault(store: store), environment: [:])
        let error = try #require(throws: KeepsakeError.self) { try config.requiredInt(forKey: "settings.textSize") }
        #expect(error.code == .newerVersion && error.key == "settings")
    }
}
