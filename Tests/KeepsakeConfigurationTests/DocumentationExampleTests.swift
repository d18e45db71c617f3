// swift-format-ignore-file
// (The KeepsakeConfiguration DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Configuration
import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeConfiguration
import Synchronization
import Testing

/// The KeepsakeConfiguration catalog's examples, verbatim (the Keepsake tests check that they
/// still are), run.
@Suite("KeepsakeConfiguration documentation examples")
struct ConfigurationDocumentationExampleTests {
    func overview(suitePath: String, environment: [String: String]) -> (ConfigReader, Int) {
        let provider = KeepsakeProvider(
            vault: Vault(store: DefaultsStore(path: suitePath)),
            records: [
                .init(.settings),
                .init(.apiClient, secretFields: ["token"]),
            ])
        let config = ConfigReader(providers: [
            // API_TOKEN, if set, overrides the stored token, and is as secret as it.
            EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: provider.environmentSecrets),
            provider,
        ])
        let width = config.int(forKey: "settings.window.width", default: 800)
        return (config, width)
    }

    func errors(_ config: ConfigReader, apply: (String) -> Void) throws {
        do {
            let theme = try config.requiredString(forKey: "settings.theme")
            apply(theme)
        } catch let error as KeepsakeError where error.code == .newerVersion {
            // A newer release wrote the settings: leave them alone.
            print("settings from a newer release in \(error.store ?? "the store")")
        }
    }

    func watch(_ config: ConfigReader, resize: (Int) -> Void) async throws {
        try await config.watchInt(forKey: "settings.window.width", default: 800) { widths in
            for await width in widths {
                resize(width)
            }
        }
    }

    @Test("the overview reads a migrated field, and an environment variable wins over it")
    func overviewRuns() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/suite.json"
        try DefaultsStore(path: path).setData(Data(#"{"width":1024,"height":768,"theme":"dark"}"#.utf8), forKey: "settings")
        #expect(overview(suitePath: path, environment: [:]).1 == 1024)
        #expect(overview(suitePath: path, environment: ["SETTINGS_WINDOW_WIDTH": "1600"]).1 == 1600)
        #expect(overview(suitePath: directory.path + "/empty.json", environment: [:]).1 == 800)
    }

    @Test("the error example applies a readable theme and leaves a newer record alone")
    func errorsRun() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/suite.json"
        let store = DefaultsStore(path: path)
        try store.setData(Data(#"{"width":1,"height":2,"theme":"dark"}"#.utf8), forKey: "settings")
        var applied: [String] = []
        try errors(overview(suitePath: path, environment: [:]).0) { applied.append($0) }
        try store.setData(Data(#"{"version":5,"schema":"Settings","data":{}}"#.utf8), forKey: "settings")
        try errors(overview(suitePath: path, environment: [:]).0) { applied.append($0) }
        #expect(applied == ["dark"])
    }

    @Test("the watch example sees a change")
    func watchRuns() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/suite.json"
        let store = DefaultsStore(path: path)
        try store.setData(Data(#"{"width":1,"height":2,"theme":"dark"}"#.utf8), forKey: "settings")
        let config = overview(suitePath: path, environment: [:]).0
        let seen = Seen<Int>()
        let task = Task { try await watch(config) { seen.append($0) } }
        defer { task.cancel() }
        #expect(try await seen.wait { $0 == 1 } != nil)
        try store.setData(Data(#"{"width":3,"height":2,"theme":"dark"}"#.utf8), forKey: "settings")
        #expect(try await seen.wait { $0 == 3 } != nil, "\(seen.all)")
    }
}
