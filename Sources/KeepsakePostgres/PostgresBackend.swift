#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium

extension StoreURI.Scheme {
    /// `postgresql://user@host:port/database?table=NAME`: a table in PostgreSQL (``PostgresStore``).
    public static let postgresql: Self = "postgresql"
    /// `postgres://…`: the same as ``postgresql``, as libpq accepts both.
    public static let postgres: Self = "postgres"
}

/// The `postgresql:` (and `postgres:`) backend: opens a ``PostgresStore`` from a libpq
/// connection URI (``PostgresConfiguration/init(parsing:environment:)``), sealed when
/// `StoreOpenOptions.sealingKey` is given or the URI names a key
/// (`sealkey_file=PATH`: a 32-byte key file; `sealkey_env=VAR`: ``EnvironmentMasterKey``).
///
/// Register it beside the standard stores, as the stock `migrate` does:
///
/// ```swift
/// let backends = try StoreBackends.standard.adding(contentsOf: PostgresBackend.all)
/// let store = try backends.open("postgresql://app@db.internal/myapp?table=app_records")
/// ```
public struct PostgresBackend: StoreBackend {
    /// Both schemes: `postgresql:` and `postgres:`.
    public static let all: [PostgresBackend] = [
        PostgresBackend(scheme: .postgresql), PostgresBackend(scheme: .postgres)
    ]

    /// The scheme this backend answers to.
    public let scheme: StoreURI.Scheme

    /// A backend for `scheme` (`StoreURI.Scheme.postgresql` by default).
    public init(scheme: StoreURI.Scheme = .postgresql) {
        self.scheme = scheme
    }

    public var locationName: String { "//USER@HOST:PORT/DATABASE?table=NAME" }
    public var summary: String { "a PostgreSQL table shared by many instances, one row per record" }
    public var acceptedOptions: Set<StoreOpenOptions.Option> { [.sealingKey] }

    /// The store the URI names, after checking that the server answers.
    ///
    /// - Throws: `.invalidArgument` when both `StoreOpenOptions.sealingKey` and the URI name a
    ///   key; what ``PostgresConfiguration/init(parsing:environment:)`` and
    ///   ``PostgresStore/init(configuration:masterKey:requireExisting:)`` throw.
    /// - Important: Opening creates no table and writes no record.
    public func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        let configuration = try PostgresConfiguration(
            location: uri.location, environment: ProcessInfo.processInfo.environment)
        if options.sealingKey != nil, configuration.sealingKey != nil {
            throw KeepsakeError(
                .invalidArgument, store: configuration.uri,
                """
                two master keys were given: one as an option (migrate's --master-key) and one in the URI                 (sealkey_file= or sealkey_env=); give one
                """)
        }
        return try PostgresStore(
            configuration: configuration, masterKey: options.sealingKey ?? configuration.sealingKey,
            requireExisting: options.requireExisting)
    }
}
#endif
