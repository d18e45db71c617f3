// swift-format-ignore-file
// (README.md and the KeepsakeOpenBao DocC catalog quote code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeOpenBao
import Synchronization
import Testing

// The OpenBao example of README.md's "Server apps" and of the KeepsakeOpenBao article: a service
// that keeps each tenant's API credentials in OpenBao, compiled here and run against a test server.

/// A tenant's credentials for a partner's API, the app's model.
struct PartnerCredentialsV0: ModelVersion, Equatable {
    static let version = 0
    var clientID: String
    var clientSecret: String
}

enum PartnerCredentials {
    typealias Latest = PartnerCredentialsV0
    static let chain = ModelChain<Latest>(name: "PartnerCredentials", defaultKeys: [], keyPatterns: ["tenant-*"])
}

struct UnknownTenant: Error {
    var key: String
}

/// A new client secret (the partner's API would issue it).
func issueClientSecret() -> String {
    "cs_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
}

enum OpenBaoExample {
    /// Never called: it names a server of its own. Compiled so that the README's code stays right.
    func makeVault() throws -> Vault {
        let configuration = try OpenBaoConfiguration(
            parsing: "openbao://bao.internal:8200/secret/myapp?cacert=/etc/myapp/bao-ca.pem&role_id_file=/run/secrets/role-id&secret_id_file=/run/secrets/secret-id")
        let store = try OpenBaoStore(configuration: configuration)
        return Vault(store: store)
    }
}

/// Rotates a tenant's client secret. Every instance may rotate at once: an update reads the
/// entry and writes at the version it read, and one that meets a newer version reads again, so
/// no rotation is lost.
func rotateClientSecret(tenant: String, vault: Vault) async throws -> PartnerCredentialsV0 {
    let key = "tenant-\(tenant)"
    return try await vault.update(PartnerCredentials.chain, forKey: key) { current in
        guard var credentials = current else { throw UnknownTenant(key: key) }
        credentials.clientSecret = issueClientSecret()
        return credentials
    }
}

extension OpenBaoServerTests {
    @Suite("The README's OpenBao example")
    struct ServerAppExample {
        @Test("4 instances rotate one tenant's secret 5 times each at once: 20 versions, none lost")
        func rotations() async throws {
            let server = try SharedServer.get()
            let folder = "example\(UUID().uuidString.prefix(6).lowercased())"
            let uri = server.uri(folder: folder, appRole: true)
            // Four instances, each with its own store (connections, token) on the same folder.
            var vaults: [Vault] = []
            for _ in 0..<4 { vaults.append(Vault(store: try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri)))) }
            try await vaults[0].save(
                PartnerCredentialsV0(clientID: "acme", clientSecret: "cs_first"), in: PartnerCredentials.chain,
                forKey: "tenant-42")
            let issued = try await withThrowingTaskGroup(of: [String].self) { group in
                for vault in vaults {
                    group.addTask {
                        var secrets: [String] = []
                        for _ in 0..<5 {
                            secrets.append(try await rotateClientSecret(tenant: "42", vault: vault).clientSecret)
                        }
                        return secrets
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(Set(issued).count == 20)
            let final = try #require(try await vaults[1].load(PartnerCredentials.chain, forKey: "tenant-42")?.value)
            #expect(final.clientID == "acme")
            #expect(issued.contains(final.clientSecret))
            // The first save and 20 rotations: 21 versions of the entry, each a rotation of its own.
            let metadata = try server.bao(["kv", "metadata", "get", "-format=json", "secret/apps/\(folder)/tenant-42"])
            #expect(metadata.contains(#""current_version": 21"#), "\(metadata.prefix(400))")
            // The change's own error reaches the caller inside the KeepsakeError (`underlying`).
            let refused = await #expect(throws: KeepsakeError.self) {
                _ = try await rotateClientSecret(tenant: "7", vault: vaults[2])
            }
            #expect(refused?.code == .updateFailed)
            #expect(refused?.underlying(as: UnknownTenant.self)?.key == "tenant-7")
        }
    }
}
