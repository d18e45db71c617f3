#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium

/// Where a ``PostgresStore`` is and how it connects: a server, a database, a table, the
/// credentials and TLS, the deadline of each call.
///
/// Usually parsed from a libpq connection URI:
///
/// ```swift
/// let configuration = try PostgresConfiguration(
///     parsing: "postgresql://app@db.internal:5432/myapp?table=app_records&sslmode=verify-full")
/// let store = try PostgresStore(configuration: configuration)
/// ```
///
/// A password never appears in ``uri`` or in any message. It comes from the `PGPASSWORD`
/// environment variable or a passfile (`PGPASSFILE`, else `~/.pgpass`), as for `psql`; a URI
/// that holds one is refused.
public struct PostgresConfiguration: Sendable, CustomStringConvertible {
    /// How the client reaches the server.
    public enum Endpoint: Sendable, Hashable {
        /// TCP to `host` on `port`.
        case tcp(host: String, port: Int)
        /// The Unix socket `<directory>/.s.PGSQL.<port>`.
        case unixSocket(directory: String, port: Int)
    }

    /// TLS as libpq's `sslmode` names it. A Unix socket never uses TLS.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS if the server offers it (as `prefer`).
        case allow
        /// TLS if the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// TLS required; the certificate is not checked.
        case require
        /// TLS required; the certificate must chain to a trusted root; the host name is not checked.
        case verifyCA = "verify-ca"
        /// TLS required; the certificate must chain to a trusted root and name the host.
        case verifyFull = "verify-full"
    }

    /// The default table name, `keepsake_records`.
    public static let defaultTable = "keepsake_records"
    /// The default deadline of each call: 30 seconds.
    public static let defaultTimeout: Duration = .seconds(30)
    /// The default connect timeout: 5 seconds. A server that refuses or does not answer for
    /// that long is `KeepsakeError.Code.unavailable`.
    public static let defaultConnectTimeout: Duration = .seconds(5)

    /// Where the server is.
    public var endpoint: Endpoint
    /// The role to log in as.
    public var user: String
    /// The database.
    public var database: String
    /// The table holding the records: a name, or `schema.name`.
    public var table: String
    /// The password, if one is needed; never printed.
    public var password: String?
    /// TLS over TCP.
    public var tlsMode: TLSMode
    /// A PEM file of trusted root certificates for `verify-ca` and `verify-full` (libpq's
    /// `sslrootcert`); the system's roots when `nil`.
    public var rootCertificatePath: String?
    /// The deadline of each call: the server cancels a statement that runs longer
    /// (`statement_timeout`), and the caller gets `KeepsakeError.Code.timeout`.
    public var timeout: Duration
    /// How long a call may try to connect (``defaultConnectTimeout`` unless `connect_timeout=`
    /// says otherwise): a server that refuses or does not answer for that long makes the call
    /// `KeepsakeError.Code.unavailable`, whatever is left of its deadline.
    public var connectTimeout: Duration
    /// The most connections the store's pool opens.
    public var maximumConnections: Int
    /// The `application_name` the server shows for the connections.
    public var applicationName: String
    /// The master key the URI names (`sealkey_file=PATH` or `sealkey_env=VAR`), if any:
    /// where the key is, never the key.
    public var sealingKey: MasterKeySource?
    /// Master keys that only open values: the keys a table was sealed with before its key was
    /// rotated (`sealkey_previous_file=PATH[,PATH…]`, or `VAR_PREVIOUS` beside `sealkey_env=VAR`,
    /// its keys separated by commas). A store with previous keys and no ``sealingKey`` writes
    /// plain values and reads sealed ones: a table being unsealed.
    public var previousSealingKeys: [MasterKeySource]
    /// Whether a store with a master key reads plain values as they are, instead of as corrupt
    /// records (`sealkey_previous=plain`, or `plain` in `VAR_PREVIOUS`): a table being sealed
    /// while it serves.
    public var readsPlainValues: Bool

    /// A configuration from its parts.
    ///
    /// - Parameters:
    ///   - endpoint: Where the server is.
    ///   - user: The role to log in as.
    ///   - database: The database (the user's name when `nil`).
    ///   - table: The table (``defaultTable`` when `nil`).
    ///   - password: The password, if one is needed.
    ///   - tlsMode: TLS over TCP (`prefer` by default, as libpq).
    /// - Throws: `KeepsakeError.Code.invalidArgument` for a table name that is not
    ///   `name` or `schema.name` (letters, digits, `_`, at most 63 bytes each, not starting with
    ///   a digit), or an empty user.
    public init(
        endpoint: Endpoint, user: String, database: String? = nil, table: String? = nil, password: String? = nil,
        tlsMode: TLSMode = .prefer
    ) throws(KeepsakeError) {
        self.endpoint = endpoint
        self.user = user
        self.database = database ?? user
        self.table = table ?? Self.defaultTable
        self.password = password
        self.tlsMode = tlsMode
        self.rootCertificatePath = nil
        self.timeout = Self.defaultTimeout
        self.connectTimeout = Self.defaultConnectTimeout
        self.maximumConnections = 8
        self.applicationName = "keepsake"
        self.sealingKey = nil
        self.previousSealingKeys = []
        self.readsPlainValues = false
        guard !user.isEmpty else {
            throw KeepsakeError(.invalidArgument, store: uri, "a PostgreSQL store needs a user name")
        }
        try Self.checkTable(self.table, uri: uri)
    }

    /// The store as a URI, without any password: `postgresql://app@db:5432/myapp?table=app_records`.
    public var uri: String {
        var text = "postgresql://\(Self.escape(user))@"
        switch endpoint {
        case let .tcp(host, port):
            let shown = host.contains(":") ? "[\(host)]" : Self.escape(host)
            text += "\(shown):\(port)/\(Self.escape(database))?table=\(table)"
        case let .unixSocket(directory, port):
            text += ":\(port)/\(Self.escape(database))?host=\(Self.escape(directory))&table=\(table)"
        }
        return text
    }

    /// ``uri``.
    public var description: String { uri }

    /// The table name, quoted for SQL: `"app_records"` or `"app"."records"`.
    var quotedTable: String {
        table.split(separator: ".").map { "\"\($0)\"" }.joined(separator: ".")
    }

    /// What names this store whichever URI reaches it.
    var identity: String {
        switch endpoint {
        case let .tcp(host, port): return "postgresql://\(host.lowercased()):\(port)/\(database)/\(table)"
        case let .unixSocket(directory, port): return "postgresql://\(directory):\(port)/\(database)/\(table)"
        }
    }

    static func checkTable(_ table: String, uri: String) throws(KeepsakeError) {
        let parts = table.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            (1...2).contains(parts.count)
            && parts.allSatisfy { part in
                guard let first = part.utf8.first, part.utf8.count <= 63,
                    !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
                else { return false }
                return part.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                }
            }
        guard valid else {
            throw KeepsakeError(
                .invalidArgument, store: uri,
                """
                '\(Self.printable(table))' is not a table name Keepsake uses: give name or schema.name, each \
                letters, digits and _ (not starting with a digit, at most 63 bytes)
                """)
        }
    }

    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: .urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@/?&=%"))) ?? text
    }

    /// `text` with control characters escaped, for messages.
    static func printable(_ text: String) -> String {
        String(
            text.unicodeScalars.map { scalar in
                scalar.properties.generalCategory == .control ? "\\u{\(String(scalar.value, radix: 16))}" : "\(scalar)"
            }.joined())
    }
}
#endif
