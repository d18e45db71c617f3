import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeStores
import KeepsakeTesting
import SettingsFolderStore
import SettingsModels
import Testing

/// The app's own store (`Sources/SettingsFolderStore/FolderStore.swift`), registered with its
/// `settings-migrate`: the store contract, then status, run and copy to and from `defaults:`
/// through the built tool.
@Suite("An app's own store: folder:DIR")
struct FolderStoreTests {
    @Test("FolderStore keeps the store contract", arguments: StoreContract.checks)
    func contract(_ check: StoreContract.Check) throws {
        try check.run(on: FolderStore(directory: try temporaryDirectory().appendingPathComponent("records").path))
    }

    @Test("settings-migrate runs status, run and copy on folder: beside defaults:")
    func migrateOnFolder() throws {
        let directory = try temporaryDirectory()
        let folder = "folder:" + directory.appendingPathComponent("records").path
        let suite = "defaults:" + directory.appendingPathComponent("settings.json").path

        // A 1.0 record (bare V0), stored as given.
        let put = try run(
            settingsMigrate, ["put", "settings", "--store", folder], stdin: #"{"darkMode":true,"fontSize":13}"#)
        #expect(put.status == 0, "\(put.stderr)")

        let status = try run(settingsMigrate, ["status", "--store", folder, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(try decodeJSON(status.stdout) as? [String: Any], "\(status.stdout)")
        let before = try #require(report["records"] as? [[String: Any]])
        #expect(before.first?["state"] as? String == "outdated", "\(status.stdout)")
        #expect(before.first?["storedVersion"] as? Int == 0)

        let migrated = try run(settingsMigrate, ["run", "--store", folder])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let stored = try FolderStore(directory: directory.appendingPathComponent("records").path)
            .data(forKey: "settings")
        let value = try Settings.chain.read(try #require(stored), context: .live())
        #expect(value.storedVersion == 2 && value.form == .envelope, "now the latest envelope")
        #expect(value.value.theme == .dark && value.value.textSize == 13)

        // Out to a defaults suite and back to a new folder store, moving: the same bytes.
        let out = try run(settingsMigrate, ["copy", "--from", folder, "--to", suite, "--move", "--json"])
        #expect(out.status == 0, "\(out.stderr)\(out.stdout)")
        #expect(try FolderStore(directory: directory.appendingPathComponent("records").path).keys() == [])
        #expect(
            try DefaultsStore(path: directory.appendingPathComponent("settings.json").path).data(forKey: "settings")
                == stored)
        let back = "folder:" + directory.appendingPathComponent("again").path
        let home = try run(settingsMigrate, ["copy", "--from", suite, "--to", back, "--json"])
        #expect(home.status == 0, "\(home.stderr)\(home.stdout)")
        #expect(
            try FolderStore(directory: directory.appendingPathComponent("again").path).data(forKey: "settings")
                == stored)

        // The tool names the app's store in its help and its errors.
        let help = try run(settingsMigrate, ["status", "--help"])
        #expect(help.stdout.contains("folder:DIR"), "\(help.stdout)")
        let missing = try run(
            settingsMigrate, ["status", "--store", "folder:" + directory.appendingPathComponent("none").path])
        #expect(missing.status == 66, "\(missing.stderr)")
    }
}
