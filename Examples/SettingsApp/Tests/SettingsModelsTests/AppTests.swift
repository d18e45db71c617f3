import Foundation
import SettingsModels
import Testing

/// The built `settings-app` (`Sources/settings-app`).
let settingsApp = builtBinary("settings-app")

@Suite("settings-app end to end")
struct AppTests {
    @Test("the app shows a bare V0 suite migrated, saves it as V2, and set-theme changes only the theme")
    func showAndSetTheme() throws {
        let path = try temporaryDirectory().appendingPathComponent("settings.json").path
        try Data(#"{"settings": {"darkMode":false,"fontSize":12}}"#.utf8).write(to: URL(fileURLWithPath: path))

        let show = try run(settingsApp, ["--store", "defaults:" + path])
        #expect(show.status == 0, "\(show.stderr)")
        let lines = show.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 7, "\(show.stdout)")
        #expect(lines.first == "store: defaults:" + path)
        #expect(Array(lines.dropFirst().prefix(3)) == ["theme: light", "text size: 12", "window: 800x600"])
        #expect(lines.contains("last synced: never"))
        #expect(lines.last == "(stored as version 0; upgraded)")
        let stored = try String(contentsOfFile: path, encoding: .utf8)
        #expect(stored.contains(#""schema":"Settings","version":2"#), "\(stored)")

        let set = try run(settingsApp, ["set-theme", "dark"], environment: ["SETTINGS_STORE": "defaults:" + path])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout == "theme: dark\n")
        let after = try String(contentsOfFile: path, encoding: .utf8)
        #expect(after == stored.replacingOccurrences(of: #""theme":"light""#, with: #""theme":"dark""#))

        let again = try run(settingsApp, ["show", "--store", "defaults:" + path])
        #expect(again.stdout.contains("theme: dark\n"))
        #expect(!again.stdout.contains("stored as version"), "current now: nothing to migrate")
    }

    @Test("with no --store the app uses its suite under XDG_CONFIG_HOME, showing defaults until it saves")
    func defaultSuite() throws {
        let config = try temporaryDirectory()
        let environment = ["XDG_CONFIG_HOME": config.path]
        let show = try run(settingsApp, [], environment: environment)
        #expect(show.status == 0, "\(show.stderr)")
        #expect(
            show.stdout.hasPrefix("store: defaults:\(config.path)/com.example.settings/settings.json\ntheme: system\n"))
        #expect(show.stdout.hasSuffix("(nothing stored yet: defaults)\n"))
        let suite = config.path + "/com.example.settings/settings.json"
        #expect(!FileManager.default.fileExists(atPath: suite))
        #expect(try run(settingsApp, ["set-theme", "light"], environment: environment).status == 0)
        #expect(try String(contentsOfFile: suite, encoding: .utf8).contains(#""theme":"light""#))
    }

    @Test("an unknown theme or command is a usage error (64) and writes nothing")
    func usageErrors() throws {
        let config = try temporaryDirectory()
        let bad = try run(settingsApp, ["set-theme", "sepia"], environment: ["XDG_CONFIG_HOME": config.path])
        #expect(bad.status == 64)
        #expect(bad.stderr == "settings-app: unknown theme 'sepia'; use light, dark or system\n")
        let unknown = try run(settingsApp, ["frobnicate"], environment: ["XDG_CONFIG_HOME": config.path])
        #expect(unknown.status == 64)
        #expect(try FileManager.default.contentsOfDirectory(atPath: config.path).isEmpty)
    }

    @Test("a file: store without its key file is refused with the reason, exit 1")
    func fileStoreNeedsKey() throws {
        let directory = try temporaryDirectory()
        let result = try run(settingsApp, ["--store", "file:" + directory.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("a file: store needs its master key"), "\(result.stderr)")
    }
}
