import Foundation
import Keepsake
import SettingsModels
import Testing

/// The built `settings-migrate` (`Sources/settings-migrate`): Keepsake's CLI on the Settings chain.
let settingsMigrate = builtBinary("settings-migrate")

/// A temporary defaults suite as three releases left it: a bare V0 record under the default key,
/// an inline-version V1 record and a V2 envelope under keys of their own.
struct ThreeEraSuite {
    let path: String
    var store: String { "defaults:" + path }
    static let models = ["--model", "settings-old=Settings", "--model", "settings-new=Settings"]
    static let v2 = """
        {"data":{"installID":"5D2E8C71-4A9B-4C3E-B6F0-1E7D9A2C4B58","installedAt":"2023-06-30T23:59:59.999Z",\
        "lastSyncedAt":"2024-02-29T12:00:00.125Z","textSize":12,"theme":"light","window":{"height":900,"width":1440}},\
        "schema":"Settings","version":2}
        """
    static let original = """
        {
          "settings": {"darkMode":true,"fontSize":13},
          "settings-old": {"version":1,"theme":"system","fontSize":15,"installID":"0F8C1D52-3B1E-4F0A-9D8E-6A2B7C4E5F10","installedAt":"2023-11-14T22:13:20Z"},
          "settings-new": \(v2)
        }
        """

    init(function: String = #function) throws {
        path = try temporaryDirectory(function: function).appendingPathComponent("settings.json").path
        try Data(Self.original.utf8).write(to: URL(fileURLWithPath: path))
    }

    var contents: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "<missing>" }

    /// `settings-migrate COMMAND --store this-suite ARGS...`
    func run(_ command: String, _ arguments: [String] = []) throws -> CommandResult {
        try SettingsModelsTests.run(settingsMigrate, [command, "--store", store] + arguments)
    }
}

@Suite("settings-migrate end to end")
struct MigrateToolTests {
    @Test("the binary was built beside the tests and found")
    func binaryExists() {
        #expect(FileManager.default.isExecutableFile(atPath: settingsMigrate), "looked at \(settingsMigrate)")
    }

    @Test("models lists Settings with its versions and stored keys, and not the sample chains")
    func models() throws {
        let result = try run(settingsMigrate, ["models"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == """
                Settings — latest v2, default keys: settings
                VERSION  TYPE        STORED KEYS
                v0       SettingsV0  {darkMode, fontSize}
                v1       SettingsV1  {fontSize, installID, installedAt, theme}
                v2       SettingsV2  {installID, installedAt, textSize, theme, window, lastSyncedAt?}

                """)
        #expect(!result.stdout.contains("Person"))
        #expect(!result.stdout.contains("TrialInfo"))
        let json = try #require(
            try decodeJSON(try run(settingsMigrate, ["models", "--json"]).stdout) as? [[String: Any]])
        #expect(json.map { $0["name"] as? String } == ["Settings"])
        #expect(json.first?["latestVersion"] as? Int == 2)
    }

    @Test("--version prints the app's version")
    func version() throws {
        let result = try run(settingsMigrate, ["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "1.0.0\n")
    }

    @Test("status --json: the bare V0 and inline V1 records are outdated, the V2 envelope current; nothing written")
    func status() throws {
        let suite = try ThreeEraSuite()
        let result = try suite.run("status", ["--json"] + ThreeEraSuite.models)
        #expect(result.status == 0, "\(result.stderr)")
        let records = try decodeRecords(result.stdout)
        #expect(records.map { $0["key"] as? String } == ["settings", "settings-new", "settings-old"])
        #expect(records.map { $0["state"] as? String } == ["outdated", "current", "outdated"])
        #expect(records.map { $0["form"] as? String } == ["bare", "envelope", "inlineVersion"])
        #expect(records.map { $0["storedVersion"] as? Int } == [0, 2, 1])
        #expect(records.map { $0["latestVersion"] as? Int } == [2, 2, 2])
        #expect(records.map { $0["schema"] as? String } == ["Settings", "Settings", "Settings"])
        #expect(suite.contents == ThreeEraSuite.original, "status writes nothing")
    }

    @Test("without --model the inline V1 record under another key is unmanaged")
    func statusWithoutModel() throws {
        let suite = try ThreeEraSuite()
        let result = try suite.run("status", ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let records = try decodeRecords(result.stdout)
        #expect(records.map { $0["state"] as? String } == ["outdated", "current", "unmanaged"])
    }

    @Test("run migrates both old records and leaves the current one byte for byte; then all are current")
    func runMigrates() throws {
        let suite = try ThreeEraSuite()
        let before = Date()
        let result = try suite.run("run", ThreeEraSuite.models)
        let after = Date()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("1 current, 2 migrated"), "\(result.stdout)")

        // The V0 step ran under the tool's live context: a random install identity and "now".
        let pattern = #/"settings": \{"data":\{"installID":"([0-9A-F-]{36})","installedAt":"([^"]+)"/#
        let match = try #require(suite.contents.firstMatch(of: pattern), "\(suite.contents)")
        let installID = String(match.1), installedAt = String(match.2)
        #expect(UUID(uuidString: installID) != nil)
        #expect(installID.dropFirst(14).first == "4", "a random (version 4) UUID from the live context")
        let date = try #require(
            try? Date(installedAt, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)))
        #expect(date >= before.addingTimeInterval(-1) && date <= after.addingTimeInterval(1), "\(installedAt)")
        #expect(
            suite.contents == """
                {
                  "settings": {"data":{"installID":"\(installID)","installedAt":"\(installedAt)",\
                "textSize":13,"theme":"dark","window":{"height":600,"width":800}},"schema":"Settings","version":2},
                  "settings-new": \(ThreeEraSuite.v2),
                  "settings-old": {"data":{"installID":"0F8C1D52-3B1E-4F0A-9D8E-6A2B7C4E5F10",\
                "installedAt":"2023-11-14T22:13:20.000Z","textSize":15,"theme":"system","window":{"height":600,"width":800}},\
                "schema":"Settings","version":2}
                }

                """)

        let again = try suite.run("status", ["--json"] + ThreeEraSuite.models)
        #expect(again.status == 0)
        let states = try decodeRecords(again.stdout).map { $0["state"] as? String }
        #expect(states == ["current", "current", "current"])
        let rerun = try suite.run("run", ThreeEraSuite.models)
        #expect(rerun.status == 0)
        #expect(rerun.stdout.contains("3 current"), "\(rerun.stdout)")
    }

    @Test("exit codes: an unknown model is a usage error (64); a record of a newer release is 67 and left alone")
    func exitCodes() throws {
        let suite = try ThreeEraSuite()
        let unknown = try suite.run("run", ["--model", "settings-old=Person"])
        #expect(unknown.status == 64)
        #expect(
            unknown.stderr.contains("unknown model 'Person' in --model; known models: Settings"), "\(unknown.stderr)")
        #expect(suite.contents == ThreeEraSuite.original)

        let newer = #"{"settings": {"data":{"theme":"dark"},"schema":"Settings","version":3}}"#
        try Data(newer.utf8).write(to: URL(fileURLWithPath: suite.path))
        let status = try suite.run("status", ["--json"])
        #expect(status.status == 67, "\(status.stderr)")
        let records = try decodeRecords(status.stdout)
        #expect(records.map { $0["state"] as? String } == ["newer"])
        let run = try suite.run("run")
        #expect(run.status == 67)
        #expect(suite.contents == newer)
    }
}

/// The `records` of the one object `status`, `plan` and `run --json` print.
func decodeRecords(_ text: String) throws -> [[String: Any]] {
    let object = try #require(try decodeJSON(text) as? [String: Any], "not one JSON object: \(text)")
    return try #require(object["records"] as? [[String: Any]], "no records array: \(text)")
}
