#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium

extension PostgresConfiguration {
    /// Parses a libpq connection URI: `postgresql://[user@][host][:port][/database][?param=value&…]`
    /// (`postgres://` too).
    ///
    /// - The host is a name, an IPv4 address, an IPv6 address in brackets, or empty for the
    ///   Unix socket; `?host=/dir` (or a host that is a percent-encoded path, `%2Fdir`) names the
    ///   socket directory (`/var/run/postgresql` by default).
    /// - Missing parts come from `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, then libpq's
    ///   defaults (port 5432, the login user, a database named as the user).
    /// - Parameters: `table` (Keepsake's table, ``defaultTable`` by default), `sslmode`,
    ///   `sslrootcert`, `connect_timeout` (seconds), `timeout` (the deadline of each call, in
    ///   seconds), `application_name`, `passfile`, `host`, `port`, `user`, `dbname`. Any other
    ///   parameter is refused, so that a misspelt one is never silently ignored.
    /// - The password comes from `PGPASSWORD`, else the passfile (`passfile=`, `PGPASSFILE`, or
    ///   `~/.pgpass`; ignored, as libpq does, when group or others can read it). A password in
    ///   the URI is refused: a URI is shown in process lists, logs and messages.
    ///
    /// - Parameters:
    ///   - text: The URI.
    ///   - environment: Where `PG…` variables and `HOME` are looked up.
    /// - Throws: `KeepsakeError.Code.invalidArgument` naming what is wrong with the
    ///   URI; nothing is connected to.
    public init(
        parsing text: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        var rest = Substring(text)
        for scheme in ["postgresql:", "postgres:"] where rest.hasPrefix(scheme) {
            rest = rest.dropFirst(scheme.count)
            break
        }
        try self.init(location: String(rest), environment: environment)
    }

    /// Parses the location of a URI: what follows `postgresql:`.
    init(location: String, environment: [String: String]) throws(KeepsakeError) {
        let shown = "postgresql:" + Self.printable(StoreURI.redactingSecrets(location))
        func invalid(_ message: String) -> KeepsakeError {
            KeepsakeError(
                .invalidArgument, store: shown,
                "\(message); a PostgreSQL store URI is postgresql://user@host:port/database?table=NAME")
        }
        let parts = try StoreURI.NetworkLocation(location, invalid: invalid)
        let path = parts.path ?? ""
        var rest = parts.authority
        var user: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if userInfo.contains(":") {
                throw invalid("the URI holds a password; give it in PGPASSWORD or a passfile instead")
            }
            user = try Self.decode(userInfo, what: "user name", invalid: invalid)
        }
        var host: String?
        var port: String?
        if let bracketed = try StoreURI.NetworkLocation.bracketedHost(rest, invalid: invalid) {
            host = String(bracketed.host)
            port = bracketed.port.map(String.init)
        } else {
            if let colon = rest.firstIndex(of: ":") {
                port = String(rest[rest.index(after: colon)...])
                rest = rest[..<colon]
            }
            if rest.contains(",") { throw invalid("several hosts are not supported") }
            if !rest.isEmpty { host = try Self.decode(rest, what: "host", invalid: invalid) }
        }
        var database = path.isEmpty ? nil : try Self.decode(path, what: "database name", invalid: invalid)

        var table: String?
        var sslmode: String?
        var rootCertificate: String?
        var connectTimeout: String?
        var timeout: String?
        var applicationName: String?
        var passfile: String?
        var sealKeyFile: String?
        var sealKeyVariable: String?
        var previousKeyFiles: String?
        var previous: String?
        var seen = Set<String>()
        for parameter in parts.parameters {
            guard let text = parameter.value else { throw invalid("the parameter '\(parameter.name)' has no value") }
            let name = try Self.decode(parameter.name, what: "parameter name", invalid: invalid)
            let value = try Self.decode(text, what: "parameter \(name)", invalid: invalid)
            guard seen.insert(name).inserted else { throw invalid("the parameter \(name) is given twice") }
            switch name {
            case "table": table = value
            case "sslmode": sslmode = value
            case "sslrootcert": rootCertificate = value
            case "connect_timeout": connectTimeout = value
            case "timeout": timeout = value
            case "application_name": applicationName = value
            case "passfile": passfile = value
            case "sealkey_file": sealKeyFile = value
            case "sealkey_env": sealKeyVariable = value
            case "sealkey_previous_file": previousKeyFiles = value
            case "sealkey_previous": previous = value
            case "host": host = value
            case "port": port = value
            case "user": user = value
            case "dbname": database = value
            case "password":
                throw invalid("the URI holds a password; give it in PGPASSWORD or a passfile instead")
            default:
                throw invalid(
                    """
                    unknown parameter '\(Self.printable(name))' (known: table, sslmode, sslrootcert, \
                    connect_timeout, timeout, application_name, passfile, sealkey_file, sealkey_env, \
                    sealkey_previous_file, sealkey_previous, host, port, user, dbname)
                    """)
            }
        }

        host = host ?? environment["PGHOST"].flatMap { $0.isEmpty ? nil : $0 }
        let portText = port.flatMap { $0.isEmpty ? nil : $0 } ?? environment["PGPORT"].flatMap { $0.isEmpty ? nil : $0 }
        var portNumber = 5432
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("'\(Self.printable(portText))' is not a port number")
            }
            portNumber = value
        }
        let userName =
            user.flatMap { $0.isEmpty ? nil : $0 } ?? environment["PGUSER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.loginName()
        guard let userName else { throw invalid("no user name: give one in the URI or PGUSER") }
        let databaseName =
            database.flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["PGDATABASE"].flatMap { $0.isEmpty ? nil : $0 } ?? userName

        let endpoint: Endpoint
        if let host, !host.isEmpty, !host.hasPrefix("/") {
            endpoint = .tcp(host: host, port: portNumber)
        } else {
            endpoint = .unixSocket(directory: host ?? "/var/run/postgresql", port: portNumber)
        }
        var mode = TLSMode.prefer
        if let sslmode {
            guard let parsed = TLSMode(rawValue: sslmode) else {
                throw invalid(
                    "'\(Self.printable(sslmode))' is not an sslmode (\(TLSMode.allCases.map(\.rawValue).joined(separator: ", ")))"
                )
            }
            mode = parsed
        }
        try self.init(endpoint: endpoint, user: userName, database: databaseName, table: table, tlsMode: mode)
        if case .unixSocket = endpoint, [.require, .verifyCA, .verifyFull].contains(mode) {
            throw invalid("sslmode=\(mode.rawValue) asks for TLS, which a Unix socket does not use")
        }
        rootCertificatePath = rootCertificate
        if let connectTimeout {
            guard let seconds = Int(connectTimeout), seconds > 0, seconds <= 86_400 else {
                throw invalid("connect_timeout must be a whole number of seconds from 1 to 86400")
            }
            self.connectTimeout = .seconds(seconds)
        }
        if let timeout {
            guard let seconds = Double(timeout), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
                throw invalid("timeout must be a number of seconds above 0, at most 86400")
            }
            self.timeout = .milliseconds(Int64((seconds * 1000).rounded(.up)))
        }
        if let applicationName { self.applicationName = applicationName }
        switch (sealKeyFile, sealKeyVariable) {
        case (nil, nil): break
        case let (path?, nil): sealingKey = .keyFile(path: path)
        case let (nil, variable?):
            sealingKey = .provider(EnvironmentMasterKey(variable: variable, environment: environment))
        case (.some, .some): throw invalid("give sealkey_file or sealkey_env, not both")
        }
        if let previousKeyFiles {
            let paths = previousKeyFiles.split(separator: ",").map(String.init)
            guard !paths.isEmpty, !paths.contains(where: \.isEmpty) else {
                throw invalid("sealkey_previous_file takes one key file's path, or several separated by commas")
            }
            previousSealingKeys += paths.map { MasterKeySource.keyFile(path: $0) }
        }
        if let previous {
            guard previous == "plain" else {
                throw invalid("sealkey_previous takes one value, plain: read plain values too (a table being sealed)")
            }
            readsPlainValues = true
        }
        if let sealKeyVariable {
            let list = sealKeyVariable + "_PREVIOUS"
            let tokens = (environment[list] ?? "").split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" })
            for (index, token) in tokens.enumerated() {
                if token == "plain" {
                    readsPlainValues = true
                } else {
                    let name = tokens.count == 1 ? list : "\(list) (item \(index + 1))"
                    previousSealingKeys.append(
                        .provider(EnvironmentMasterKey(variable: name, environment: [name: String(token)])))
                }
            }
        }
        if sealingKey == nil, readsPlainValues {
            throw invalid("sealkey_previous=plain is for a store with a master key (a table being sealed)")
        }
        password = try Self.password(
            environment: environment, passfile: passfile, endpoint: endpoint, database: databaseName, user: userName,
            uri: uri)
    }

    private static func decode(
        _ text: Substring, what: String, invalid: (String) -> KeepsakeError
    ) throws(KeepsakeError) -> String {
        guard let decoded = String(text).removingPercentEncoding else {
            throw invalid("the \(what) has a bad percent escape")
        }
        guard !decoded.utf8.contains(0) else { throw invalid("the \(what) contains NUL") }
        return decoded
    }

    private static func loginName() -> String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        let text = String(cString: name)
        return text.isEmpty ? nil : text
    }
}
#endif
