import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeSodium
import KeepsakeStores
import SettingsModels
import SettingsTrial

// A tiny app on Keepsake: it loads its settings — whatever release stored them — and can
// change the theme.
//
//   settings-app [--store URI] [--key-file PATH] [show | set-theme light|dark|system | trial]
//
// The store is `--store` or $SETTINGS_STORE (defaults:PATH, file:DIR, keyring:SERVICE); without
// either, the defaults suite $XDG_CONFIG_HOME/com.example.settings/settings.json. A file: store
// needs its key file: `--key-file` or $SETTINGS_KEY_FILE.

let usage = "usage: settings-app [--store URI] [--key-file PATH] [show | set-theme light|dark|system | trial]"

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("settings-app: \(message)\n".utf8))
    exit(status)
}

/// Opens the store `uri` names (a `file:` store with `keyFile`), or the app's defaults suite.
func openStore(_ uri: String?, keyFile: String?) throws(KeepsakeError) -> any RecordStore {
    guard let uri else { return try DefaultsStore(suite: "settings", app: Settings.appID) }
    let options = StoreOpenOptions(masterKey: keyFile.map { .keyFile(path: $0) })
    return try StoreURI(parsing: uri).open(options: options)
}

/// Runs `command` on the settings in `vault`.
func run(_ command: [String], in vault: Vault) async throws(KeepsakeError) {
    switch (command.first ?? "show", command.count) {
    case ("show", 0), ("show", 1):
        let loaded = try await vault.load(.settings)
        let settings = if let loaded { loaded.value } else { try await vault.value(.settings) }  // the default
        print("store: \(vault.store.uri)")
        print("theme: \(settings.theme.rawValue)")
        print("text size: \(settings.textSize)")
        print("window: \(settings.window.width)x\(settings.window.height)")
        print("install: \(settings.installID.uuidString), since \(settings.installedAt.formatted(.iso8601))")
        print("last synced: \(settings.lastSyncedAt?.formatted(.iso8601) ?? "never")")
        if let loaded, loaded.wasMigrated {
            print(
                "(stored as version \(loaded.storedVersion); \(loaded.writeBack == .written ? "upgraded" : "not saved"))"
            )
        } else if loaded == nil {
            print("(nothing stored yet: defaults)")
        }
    case ("trial", 1):
        // Starts the trial on first launch; afterwards reports it. Kept in the keyring.
        print(SettingsTrial.banner(try SettingsTrial.live().start()))
    case ("set-theme", 2):
        guard let theme = Theme(rawValue: command[1]) else {
            fail("unknown theme '\(command[1])'; use light, dark or system", status: 64)
        }
        var settings = try await vault.value(.settings)
        settings.theme = theme
        try await vault.save(settings, for: .settings)
        print("theme: \(theme.rawValue)")
    default:
        fail(usage, status: 64)
    }
}

var storeURI = ProcessInfo.processInfo.environment["SETTINGS_STORE"]
var keyFile = ProcessInfo.processInfo.environment["SETTINGS_KEY_FILE"]
var command: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--store", "--key-file":
        guard let value = arguments.popFirst() else { fail(usage, status: 64) }
        if argument == "--store" { storeURI = value } else { keyFile = value }
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        command.append(argument)
    }
}

do {
    try await run(command, in: Vault(store: openStore(storeURI, keyFile: keyFile)))
} catch {
    fail(error.description)
}
