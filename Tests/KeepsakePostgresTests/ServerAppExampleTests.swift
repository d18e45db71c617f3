// swift-format-ignore-file
// (The KeepsakePostgres DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakePostgres
import Logging
import ServiceLifecycle
import Synchronization
import Testing

// The "Server apps" example of the KeepsakePostgres article: a Hummingbird-shaped app (its
// handlers are plain functions taking the Vault and what they need of the request), compiled
// here and run against the test cluster.

/// A tenant's settings, the app's model (one version is enough for the example).
struct TenantSettingsV0: ModelVersion, Equatable {
    static let version = 0
    var webhookURL: String
    var webhookSecret: String
}

enum TenantSettings {
    typealias Latest = TenantSettingsV0
    static let chain = ModelChain<Latest>(name: "TenantSettings", defaultKeys: [])
}

/// What a handler answers; Hummingbird encodes it as JSON.
struct WebhookResponse: Codable, Sendable, Equatable {
    var url: String
    var hasSecret: Bool
}

/// Hummingbird's `HTTPError(.notFound)`, here without Hummingbird.
struct NotFound: Error {
    var key: String
}

/// A new webhook secret.
func newSecret() -> String {
    "whsec_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
}

enum ServerAppExample {
    static func makeVault(uri: String) throws -> Vault {
        // The article's makeVault(), with the test cluster's URI and no sealing key.
        let configuration = try PostgresConfiguration(parsing: uri)
        let store = try PostgresStore(configuration: configuration)
        return Vault(store: store)
    }

    /// Never called: it names a server of its own. Compiled so that the article's code stays right.
    func makeVault() throws -> Vault {
        let configuration = try PostgresConfiguration(
            parsing: "postgresql://app@db.internal/myapp?table=app_records&sslmode=verify-full")
        let store = try PostgresStore(
            configuration: configuration,
            masterKey: .provider(EnvironmentMasterKey(variable: "KEEPSAKE_MASTER_KEY")))
        return Vault(store: store)
    }
}

/// What a handler needs of a request: Hummingbird's `context.parameters.require("id")`.
struct TenantRequest: Sendable {
    var tenantID: String
}

// GET /tenants/:id/webhook
//     router.get("tenants/:id/webhook") { request, context in
//         try await webhook(TenantRequest(tenantID: context.parameters.require("id")), vault: vault)
//     }
func webhook(_ request: TenantRequest, vault: Vault) async throws -> WebhookResponse {
    let key = "tenant-\(request.tenantID)"
    guard let settings = try await vault.load(TenantSettings.chain, forKey: key)?.value else {
        throw NotFound(key: key)
    }
    return WebhookResponse(url: settings.webhookURL, hasSecret: !settings.webhookSecret.isEmpty)
}

// POST /tenants/:id/webhook/rotate — every instance may rotate at once: each update holds the
// row while it changes it, so instances take turns and no rotation is lost or half-applied.
func rotateWebhookSecret(_ request: TenantRequest, vault: Vault) async throws -> WebhookResponse {
    let key = "tenant-\(request.tenantID)"
    let settings = try await vault.update(TenantSettings.chain, forKey: key) { current in
        guard var settings = current else { throw NotFound(key: key) }
        settings.webhookSecret = newSecret()
        return settings
    }
    return WebhookResponse(url: settings.webhookURL, hasSecret: true)
}

func makeServices(vault: Vault, store: PostgresStore, app: some Service) -> ServiceGroup {
    ServiceGroup(
        configuration: .init(
            services: [.init(service: store), .init(service: app)],
            gracefulShutdownSignals: [.sigterm],
            logger: Logger(label: "app")))
}

/// Where the article's app reloads its webhooks; here, what it was given.
func reloadWebhooks(_ settings: TenantSettingsV0) { reloaded.withLock { $0.append(settings.webhookURL) } }
let reloaded = Mutex<[String]>([])

/// The article's watch, verbatim: every instance reloads a tenant's webhooks when any instance changes them.
func watchTenant(vault: Vault) async {
    for await update in vault.updates(of: TenantSettings.chain, forKey: "tenant-42") {
        if let settings = update.value { reloadWebhooks(settings) }
    }
}

extension PostgresServerTests {
    @Suite("The Server apps example of the KeepsakePostgres article")
    struct ServerAppExampleTests {
        @Test("the handlers load, rotate and refuse an unknown tenant against a real table")
        func handlers() async throws {
            let uri = TestServer.uniqueURI(prefix: "serverapp")
            let vault = try ServerAppExample.makeVault(uri: uri)
            try await vault.save(
                TenantSettingsV0(webhookURL: "https://example.com/hook", webhookSecret: "whsec_1"),
                in: TenantSettings.chain, forKey: "tenant-42")
            let request = TenantRequest(tenantID: "42")
            #expect(try await webhook(request, vault: vault) == WebhookResponse(url: "https://example.com/hook", hasSecret: true))
            _ = try await rotateWebhookSecret(request, vault: vault)
            let secret = try await vault.load(TenantSettings.chain, forKey: "tenant-42")?.value.webhookSecret
            #expect(secret != "whsec_1" && secret?.hasPrefix("whsec_") == true)
            await #expect(throws: NotFound.self) { try await webhook(TenantRequest(tenantID: "7"), vault: vault) }

            // The watch: the stored settings first, then another instance's change.
            let watching = Task { await watchTenant(vault: vault) }
            defer { watching.cancel() }
            let other = try ServerAppExample.makeVault(uri: uri)
            let deadline = ContinuousClock.now + .seconds(60)
            while reloaded.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            try await other.save(
                TenantSettingsV0(webhookURL: "https://example.com/new", webhookSecret: "whsec_2"),
                in: TenantSettings.chain, forKey: "tenant-42")
            while !reloaded.withLock({ $0.contains("https://example.com/new") }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(reloaded.withLock { $0 }.last == "https://example.com/new", "\(reloaded.withLock { $0 })")
        }
    }
}
