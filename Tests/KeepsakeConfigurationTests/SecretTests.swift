import Configuration
import Foundation
import Keepsake
import KeepsakeMemory
import KeepsakeSodium
import Synchronization
import Testing

@testable import KeepsakeConfiguration

/// Collects swift-configuration's access events as their rendered lines, the ones its access
/// loggers write.
final class CollectingReporter: AccessReporter, Sendable {
    let lines = Mutex<[String]>([])
    func report(_ event: AccessEvent) {
        lines.withLock { $0.append(String(describing: event)) }
    }
}

@Suite("Secrets are marked secret and never reach the access log")
struct SecretTests {
    let token = "sk-live-7f3a9c"
    var client: APIClientV0 { APIClientV0(endpoint: "https://api.example.com", token: token, retries: 3) }

    @Test("every value from an encrypted store is secret, and the access log holds none")
    func encryptedStore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SodiumFileStore.create(
            directory: directory.path + "/records", key: .keyFile(path: directory.path + "/records.key"))
        let vault = Vault(store: store)
        try vault.save(client, for: .apiClient)
        let provider = KeepsakeProvider(vault: vault, records: [.init(.apiClient)])
        for (name, type) in [("token", ConfigType.string), ("endpoint", .string), ("retries", .int)] {
            let result = try provider.value(forKey: AbsoluteConfigKey(["api", name]), type: type)
            #expect(result.value?.isSecret == true, "api.\(name) is not marked secret")
        }

        let logPath = directory.path + "/access.log"
        let reporter = CollectingReporter()
        let logger = try FileAccessLogger(filePath: .init(logPath))
        let config = ConfigReader(
            provider: provider, accessReporter: BroadcastingAccessReporter(upstreams: [reporter, logger]))
        #expect(config.string(forKey: "api.token") == token)
        #expect(config.string(forKey: "api.endpoint") == "https://api.example.com")
        #expect(config.int(forKey: "api.retries") == 3)
        let log = try String(contentsOfFile: logPath, encoding: .utf8)
        let lines = reporter.lines.withLock { $0 }
        #expect(lines.count == 3)
        #expect(log.contains("api.token") && lines.joined().contains("api.token"), "the key is logged: \(log)")
        for text in [log] + lines {
            #expect(!text.contains(token), "a secret in the access log: \(text)")
            #expect(!text.contains("api.example.com"), "a secret in the access log: \(text)")
        }
        #expect(log.contains("<REDACTED>"))
    }

    @Test("fields the app names are secret on any store; the others are not")
    func namedFields() throws {
        let vault = Vault(store: InMemoryStore())
        try vault.save(client, for: .apiClient)
        let provider = KeepsakeProvider(vault: vault, records: [.init(.apiClient, secretFields: ["token"])])
        let token = try provider.value(forKey: AbsoluteConfigKey(["api", "token"]), type: .string)
        let retries = try provider.value(forKey: AbsoluteConfigKey(["api", "retries"]), type: .int)
        #expect(token.value?.isSecret == true)
        #expect(retries.value?.isSecret == false)

        let reporter = CollectingReporter()
        let config = ConfigReader(provider: provider, accessReporter: reporter)
        #expect(config.string(forKey: "api.token") == self.token)
        #expect(config.int(forKey: "api.retries") == 3)
        let lines = reporter.lines.withLock { $0 }
        #expect(lines.count == 2)
        #expect(!lines.joined().contains(self.token), "a secret in the access log: \(lines)")
        #expect(lines.contains { $0.contains("api.retries") && $0.contains("3") }, "\(lines)")
    }

    @Test("an environment variable that overrides a secret field is secret too, and stays out of the access log")
    func environmentOverride() throws {
        let vault = Vault(store: InMemoryStore())
        try vault.save(client, for: .apiClient)
        let provider = KeepsakeProvider(
            vault: vault,
            records: [.init(.apiClient, secretFields: ["token"]), .init(.settings, secretFields: ["window"])])
        let override = "tok_from_the_environment"
        let environment = EnvironmentVariablesProvider(
            environmentVariables: [
                "API_TOKEN": override, "API_RETRIES": "5", "SETTINGS_WINDOW_WIDTH": "640", "API_TOKENISH": "x"
            ],
            secretsSpecifier: provider.environmentSecrets)
        let reporter = CollectingReporter()
        let config = ConfigReader(providers: [environment, provider], accessReporter: reporter)
        #expect(config.string(forKey: "api.token") == override)
        #expect(config.int(forKey: "api.retries") == 5)
        #expect(config.int(forKey: "settings.window.width") == 640)
        let lines = reporter.lines.withLock { $0 }
        #expect(lines.count == 3)
        #expect(!lines.joined().contains(override), "an overridden secret in the access log: \(lines)")
        #expect(!lines.joined().contains("640"), "a field under a secret one in the access log: \(lines)")
        #expect(lines.contains { $0.contains("api.retries") && $0.contains("5") }, "\(lines)")
        func isSecret(_ variable: String) throws -> Bool? {
            try environment.value(
                forKey: AbsoluteConfigKey(variable.split(separator: "_").map(String.init)), type: .string
            )
            .value?.isSecret
        }
        #expect(try isSecret("API_TOKENISH") == false, "a name that only begins like a secret one is not secret")
        // How camelCase fields are named, as EnvironmentVariablesProvider names them.
        #expect(KeepsakeProvider.environmentName(["prefs", "textSize"]) == "PREFS_TEXT_SIZE")
        #expect(KeepsakeProvider.environmentName(["apiClient", "oauth-token"]) == "API_CLIENT_OAUTH_TOKEN")
    }

    @Test("a secret field marks everything under it, and a secret record every field")
    func nestedAndWhole() throws {
        let vault = Vault(store: InMemoryStore())
        try vault.save(SettingsV1(window: .init(width: 1, height: 2, scale: 1), theme: "dark"), for: .settings)
        try vault.save(client, for: .apiClient)
        let provider = KeepsakeProvider(
            vault: vault, records: [.init(.settings, secretFields: ["window"]), .init(.apiClient, isSecret: true)])
        func isSecret(_ key: [String], _ type: ConfigType) throws -> Bool? {
            try provider.value(forKey: AbsoluteConfigKey(key), type: type).value?.isSecret
        }
        #expect(try isSecret(["settings", "window", "width"], .int) == true)
        #expect(try isSecret(["settings", "theme"], .string) == false)
        #expect(try isSecret(["api", "retries"], .int) == true)
        #expect(try isSecret(["api", "endpoint"], .string) == true)
    }
}
