#if PostgreSQL
import Foundation
import Keepsake
internal import PostgresNIO
import Synchronization

extension PostgresStore: ObservableStore {
    /// The `LISTEN`/`NOTIFY` channel of this store's table: `keepsake:` and the table name as
    /// configured (`keepsake:keepsake_records`, `keepsake:app.records`), or, for a name too long
    /// for PostgreSQL's 63-byte identifiers, `keepsake:` and 16 hex digits of its hash
    /// (docs/FORMAT.md §11.1). Every committed write to the table — by Keepsake or by any other
    /// client — notifies it with the record key as the payload.
    public var notificationChannel: String { NotifyTrigger(configuration: configuration).channel }

    /// Starts watching the table: a connection of its own, outside the pool, `LISTEN`s on
    /// ``notificationChannel``, and each notification becomes a hint for its key.
    ///
    /// A trigger on the table sends the notifications, inside the writing transaction, so that a
    /// hint follows every committed write by any writer — `Vault`, `migrate`, another instance,
    /// `psql` — and none follows a write that rolled back. The watch creates the trigger when
    /// the table lacks it (a table made by psql or by an older Keepsake); when its role may not,
    /// or the server has no `LISTEN`, the watch hints every `Vault.updatesPollInterval` instead.
    ///
    /// A lost connection is reconnected with a growing pause (up to 5 s); once listening again,
    /// the watch hints that any record may have changed, since a notification sent meanwhile
    /// was lost. When the stream's consumer stops, the connection is closed.
    ///
    /// - Throws: `KeepsakeError.Code.unavailable` when the TLS settings of the configuration
    ///   cannot be loaded (a root certificate file that cannot be read). A server that cannot
    ///   be reached does not throw: the watch keeps trying to connect.
    /// - Important: Watching writes nothing but the table's trigger, and that only when the
    ///   table exists without it; if this throws, nothing was started.
    public func changes() throws(KeepsakeError) -> StoreChanges {
        guard !pool.isClosed else {
            throw KeepsakeError(.unavailable, store: uri, "could not watch the table: the store was shut down")
        }
        let listener = ChangeListener(
            connection: try Self.connectionConfiguration(
                configuration, applicationName: configuration.applicationName + " watch"),
            trigger: NotifyTrigger(configuration: configuration), logger: logger, instruments: instruments)
        let (stream, continuation) = StoreChanges.makeStream(bufferingPolicy: .bufferingNewest(1024))
        WatchCount.opened()
        let watches = self.watches
        let id = watches.nextID()
        let task = Bridge.start {
            await listener.run(continuation)
            continuation.finish()
            watches.remove(id)
            WatchCount.closed()
        }
        watches.add(id, task)
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The configuration of each connection the store makes (its pool's, a watch's), named
    /// `applicationName` on the server (`pg_stat_activity`).
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` when the TLS settings cannot be loaded (a
    ///   root certificate file that cannot be read).
    static func connectionConfiguration(
        _ configuration: PostgresConfiguration, applicationName: String
    ) throws(KeepsakeError) -> PostgresConnection.Configuration {
        var result: PostgresConnection.Configuration
        switch configuration.endpoint {
        case let .tcp(host, port):
            let tls: PostgresConnection.Configuration.TLS
            do {
                switch configuration.tlsMode {
                case .disable:
                    tls = .disable
                case .allow, .prefer:
                    tls = .prefer(try NIOSSLContext(configuration: Self.tlsConfiguration(configuration)))
                case .require, .verifyCA, .verifyFull:
                    tls = .require(try NIOSSLContext(configuration: Self.tlsConfiguration(configuration)))
                }
            } catch {
                throw KeepsakeError(
                    .invalidArgument, store: configuration.uri,
                    "the TLS settings cannot be loaded (sslmode=\(configuration.tlsMode.rawValue), sslrootcert=): \(error)",
                    cause: .other(String(describing: error)), underlying: error)
            }
            result = .init(
                host: host, port: port, username: configuration.user, password: configuration.password,
                database: configuration.database, tls: tls)
        case let .unixSocket(directory, port):
            result = .init(
                unixSocketPath: "\(directory)/.s.PGSQL.\(port)", username: configuration.user,
                password: configuration.password, database: configuration.database)
        }
        let (seconds, attoseconds) = configuration.timeout.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        let (connectSeconds, connectAttoseconds) = configuration.connectTimeout.components
        result.options.connectTimeout = .nanoseconds(
            connectSeconds * 1_000_000_000 + connectAttoseconds / 1_000_000_000)
        result.options.additionalStartupParameters = [
            ("application_name", applicationName),
            ("statement_timeout", "\(max(1, milliseconds))")
        ]
        return result
    }
}

/// The store's running watches, so that a shutdown can end them.
final class WatchRegistry: Sendable {
    private let tasks = Mutex<(next: Int, running: [Int: Task<Void, Never>])>((0, [:]))

    func nextID() -> Int {
        tasks.withLock { state in
            state.next += 1
            return state.next
        }
    }

    func add(_ id: Int, _ task: Task<Void, Never>) { tasks.withLock { $0.running[id] = task } }

    func remove(_ id: Int) { _ = tasks.withLock { $0.running.removeValue(forKey: id) } }

    func cancelAll() {
        for task in tasks.withLock({ $0.running.values }) { task.cancel() }
    }
}
#endif
