#if PostgreSQL
import Keepsake
import ServiceLifecycle

extension PostgresStore: AsyncExclusiveUpdateStore {}

extension PostgresStore: Service {
    /// Runs until the app's `ServiceGroup` shuts down gracefully (or the task is cancelled),
    /// then ends the store (``shutdown()``): calls in flight end, each within its deadline;
    /// later calls fail `unavailable`; connections and watches are closed.
    ///
    /// The store needs no running service to work — it connects on its first call — so an app
    /// that has no `ServiceGroup` simply never calls this.
    ///
    /// ```swift
    /// let store = try PostgresStore(configuration: PostgresConfiguration(parsing: uri))
    /// let group = ServiceGroup(services: [store, app], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        // Ends when a graceful shutdown is asked for, or with a CancellationError when the
        // task is cancelled: the store shuts down either way.
        defer { shutdown() }
        try await gracefulShutdown()
    }
}
#endif
