#if OpenBao
import Foundation
import Keepsake

/// Where an ``OpenBaoStore`` keeps its records and how it reaches the server: parsed from
/// `openbao://HOST:PORT/MOUNT/PREFIX?…` (or `vault://…` for HashiCorp Vault).
///
/// ```swift
/// let configuration = try OpenBaoConfiguration(
///     parsing: "openbao://bao.internal:8200/secret/myapp?cacert=/etc/myapp/bao-ca.pem&role_id_file=/run/secrets/role-id&secret_id_file=/run/secrets/secret-id")
/// let store = try OpenBaoStore(configuration: configuration)
/// ```
///
/// The URI holds no secret: a token or a secret id is named by the file or the environment
/// variable that holds it, so the URI can be shown in a process list, a log or an error.
public struct OpenBaoConfiguration: Sendable, Hashable {
    /// How the store proves who it is to the server.
    public enum Authentication: Sendable, Hashable {
        /// A token read from this file (as an agent or an orchestrator leaves it); the file is
        /// read again when the server says the token is gone.
        case tokenFile(String)
        /// A token in this environment variable.
        case tokenEnvironment(String)
        /// An AppRole login: the role id and the secret id are read from these files, and the
        /// login is made again when the token cannot be renewed any longer.
        case appRole(mount: String, roleIDFile: String, secretIDFile: String)
    }

    /// The server's host name or address.
    public var host: String
    /// The server's port (8200 by default).
    public var port: Int
    /// The KV version 2 secrets engine's mount path (`secret`).
    public var mount: String
    /// The folder of the mount that holds the records, without slashes at either end; empty
    /// for the mount's top level.
    public var prefix: String
    /// Whether the connection is TLS (the default). Plain HTTP (`tls=disable`) is taken only for
    /// a loopback address: a token would otherwise cross the network in clear.
    public var usesTLS: Bool
    /// A PEM file of the certificate authorities to trust besides the system's (`cacert=`): a
    /// server with a certificate from a private CA.
    public var caCertificateFile: String?
    /// How the store logs in.
    public var authentication: Authentication
    /// An OpenBao namespace (`namespace=`), sent with every request.
    public var namespace: String?
    /// The deadline of each call (`timeout=`, seconds; 30 by default).
    public var timeout: Duration
    /// How long a call keeps trying to reach a server that refuses connections, is sealed or is
    /// restarting before it throws `KeepsakeError.Code.unavailable` (`connect_timeout=`,
    /// seconds; 5 by default).
    public var connectTimeout: Duration
    /// How often a watch lists the store's keys (`poll_interval=`, seconds; 1 by default):
    /// OpenBao 2 sends no change events, so observation polls one listing per interval.
    public var pollInterval: Duration
    /// The URI scheme it was parsed from (`openbao` or `vault`), for messages.
    public var scheme: String

    /// The store as a URI, without query parameters: `openbao://HOST:PORT/MOUNT/PREFIX`.
    public var uri: String {
        let path = prefix.isEmpty ? mount : "\(mount)/\(prefix)"
        return "\(scheme)://\(Self.hostForURI(host)):\(port)/\(path)"
    }

    /// The base of every request: `https://HOST:PORT/v1/`.
    var baseURL: String { "\(usesTLS ? "https" : "http")://\(Self.hostForURI(host)):\(port)/v1/" }

    static func hostForURI(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// The parameters a URI may carry.
    static let parameters: [String] = [
        "cacert", "tls", "token_file", "token_env", "role_id_file", "secret_id_file", "approle_mount",
        "namespace", "timeout", "connect_timeout", "poll_interval"
    ]

    /// Parses `openbao://HOST[:PORT]/MOUNT[/PREFIX…][?param=value&…]` (or `vault://…`).
    ///
    /// - Parameters: `cacert=PATH` (a PEM file of CAs to trust), `tls=disable` (plain HTTP, only
    ///   to a loopback address), `token_file=PATH`, `token_env=VAR`, `role_id_file=PATH` with
    ///   `secret_id_file=PATH` (AppRole, mounted at `approle_mount=`, `approle` by default),
    ///   `namespace=NS`, `timeout=`, `connect_timeout=` and `poll_interval=` in seconds. With no
    ///   credentials named, the token is read from `BAO_TOKEN`, else `VAULT_TOKEN`. Any other
    ///   parameter — and a secret in the URI (`token=`, `secret_id=`) — is refused, so that a
    ///   misspelt one is never silently ignored.
    /// - The mount and prefix are path segments of letters, digits, `-`, `_` and `.` (never `.`
    ///   or `..` alone).
    ///
    /// - Parameters:
    ///   - text: The URI.
    ///   - environment: Where `BAO_TOKEN` and `VAULT_TOKEN` are looked for when no credentials
    ///     are named.
    /// - Throws: `KeepsakeError.Code.invalidArgument` naming what is wrong; nothing is connected to.
    public init(
        parsing text: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        guard let colon = text.firstIndex(of: ":"), ["openbao", "vault"].contains(text[..<colon]) else {
            throw KeepsakeError(
                .invalidArgument, store: text,
                "an OpenBao store URI starts with openbao:// (or vault:// for HashiCorp Vault)")
        }
        try self.init(
            scheme: String(text[..<colon]), location: String(text[text.index(after: colon)...]),
            environment: environment)
    }

    /// Parses the location of a URI: what follows `openbao:`.
    init(scheme: String, location: String, environment: [String: String]) throws(KeepsakeError) {
        let shown = "\(scheme):\(StoreURI.redactingSecrets(location))"
        func invalid(_ message: String) -> KeepsakeError {
            KeepsakeError(
                .invalidArgument, store: shown,
                "\(message); an OpenBao store URI is \(scheme)://HOST:PORT/MOUNT/PREFIX?cacert=PATH&token_file=PATH")
        }
        let parts = try StoreURI.NetworkLocation(location, invalid: invalid)
        guard let pathText = parts.path else { throw invalid("the URI names no mount") }
        let authority = parts.authority
        let segments = pathText.split(separator: "/", omittingEmptySubsequences: false)
        if authority.contains("@") {
            throw invalid("the URI holds credentials; name a token_file or token_env instead")
        }
        let host: Substring
        var portText: Substring?
        if let bracketed = try StoreURI.NetworkLocation.bracketedHost(authority, invalid: invalid) {
            host = bracketed.host
            portText = bracketed.port
        } else if let portColon = authority.lastIndex(of: ":") {
            host = authority[..<portColon]
            portText = authority[authority.index(after: portColon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw invalid("the URI names no host") }
        var port = 8200
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("the port '\(portText)' is not a number from 1 to 65535")
            }
            port = value
        }
        var path = segments.map(String.init)
        if path.last == "" { path.removeLast() }  // a trailing slash
        guard let mount = path.first, !mount.isEmpty else { throw invalid("the URI names no mount") }
        for segment in path {
            guard Self.isPlainSegment(segment) else {
                throw invalid(
                    "the path segment '\(segment)' is not a plain name (letters, digits, '-', '_', '.'; not '.' or '..')"
                )
            }
        }
        var values: [String: String] = [:]
        for parameter in parts.parameters {
            let name = String(parameter.name)
            let value = parameter.value.map { $0.removingPercentEncoding ?? String($0) } ?? ""
            if ["token", "secret_id", "role_id", "password"].contains(name) {
                throw invalid(
                    "the URI holds a secret (\(name)=); name the file that holds it (\(name == "token" ? "token_file" : "\(name)_file")=) instead"
                )
            }
            guard Self.parameters.contains(name) else {
                throw invalid("unknown parameter '\(name)' (known: \(Self.parameters.joined(separator: ", ")))")
            }
            guard values[name] == nil else { throw invalid("the parameter '\(name)' is given twice") }
            values[name] = value
        }
        func seconds(_ name: String, default value: Duration) throws(KeepsakeError) -> Duration {
            guard let text = values[name] else { return value }
            guard let number = Double(text), number.isFinite, number > 0, number <= 86_400 else {
                throw invalid("\(name)=\(text) is not a number of seconds from more than 0 to 86400")
            }
            return .milliseconds(Int((number * 1000).rounded(.up)))
        }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
        self.mount = mount
        self.prefix = path.dropFirst().joined(separator: "/")
        switch values["tls"] {
        case nil, "enable"?: usesTLS = true
        case "disable"?:
            guard ["127.0.0.1", "::1", "localhost"].contains(self.host) else {
                throw invalid(
                    "tls=disable is taken only for a loopback address: a token would cross the network in clear")
            }
            usesTLS = false
        case let other?: throw invalid("tls=\(other) is not 'enable' or 'disable'")
        }
        caCertificateFile = values["cacert"]
        namespace = values["namespace"]
        timeout = try seconds("timeout", default: .seconds(30))
        connectTimeout = try seconds("connect_timeout", default: .seconds(5))
        pollInterval = try seconds("poll_interval", default: .seconds(1))
        let named = [values["token_file"], values["token_env"], values["role_id_file"] ?? values["secret_id_file"]]
            .compactMap { $0 }
        guard named.count <= 1 else {
            throw invalid("give one way to log in: token_file, token_env, or role_id_file with secret_id_file")
        }
        if let file = values["token_file"] {
            authentication = .tokenFile(file)
        } else if let variable = values["token_env"] {
            authentication = .tokenEnvironment(variable)
        } else if values["role_id_file"] != nil || values["secret_id_file"] != nil {
            guard let roleID = values["role_id_file"], let secretID = values["secret_id_file"] else {
                throw invalid("an AppRole login needs both role_id_file and secret_id_file")
            }
            let roleMount = values["approle_mount"] ?? "approle"
            guard Self.isPlainSegment(roleMount) else {
                throw invalid("approle_mount=\(roleMount) is not a plain name")
            }
            authentication = .appRole(mount: roleMount, roleIDFile: roleID, secretIDFile: secretID)
        } else if environment["BAO_TOKEN"] != nil {
            authentication = .tokenEnvironment("BAO_TOKEN")
        } else if environment["VAULT_TOKEN"] != nil {
            authentication = .tokenEnvironment("VAULT_TOKEN")
        } else {
            throw invalid(
                "no credentials: name a token_file, a token_env, or role_id_file and secret_id_file, or set BAO_TOKEN")
        }
        if values["approle_mount"] != nil, case .appRole = authentication {
        } else if values["approle_mount"] != nil {
            throw invalid("approle_mount is only for an AppRole login (role_id_file and secret_id_file)")
        }
    }

    /// A mount, prefix or AppRole mount segment: letters, digits, `-`, `_`, `.`, and not `.` or `..`.
    static func isPlainSegment(_ segment: String) -> Bool {
        !segment.isEmpty && segment != "." && segment != ".."
            && segment.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2D || byte == 0x5F || byte == 0x2E
            }
    }
}
#endif
