#if PostgreSQL
import Foundation
import Metrics
import Tracing

/// What a store call does, as metrics and traces label it.
enum StoreOperation: String, Sendable {
    /// Opening a store that must exist (`requireExisting`).
    case open
    /// Asking whether the server answers (`ready`, `doctor`).
    case ready
    /// Reading one record.
    case read
    /// Listing the keys.
    case list
    /// Reading every record.
    case readAll = "read_all"
    /// Committing a batch of writes.
    case commit
    /// Locking a record for an update (and letting go of it).
    case hold
    /// Writing a held record.
    case update
}

/// The store's metrics (swift-metrics) and traces (swift-distributed-tracing). Labels are the
/// store's scheme, the operation and the outcome (`ok` or a `KeepsakeError.Code`): never a
/// record key, a value, a password or a key.
///
/// | metric | kind | labels |
/// |---|---|---|
/// | `keepsake_store_calls_total` | counter | scheme, operation, outcome |
/// | `keepsake_store_call_duration_seconds` | timer | scheme, operation, outcome |
/// | `keepsake_store_retries_total` | counter | scheme |
/// | `keepsake_store_reconnects_total` | counter | scheme |
/// | `keepsake_store_conflicts_total` | counter | scheme |
/// | `keepsake_store_lock_wait_seconds` | timer | scheme |
/// | `keepsake_store_uncertain_commits_total` | counter | scheme |
/// | `keepsake_store_watch_restarts_total` | counter | scheme |
struct StoreInstruments: Sendable {
    let scheme: String
    /// The database and table, for traces (`db.namespace`, `db.collection.name`).
    let database: String
    let table: String

    func startSpan(_ operation: StoreOperation) -> any Span {
        let span = Tracing.startSpan("keepsake.\(scheme).\(operation.rawValue)", ofKind: .client)
        span.attributes["db.system.name"] = scheme
        span.attributes["db.namespace"] = database
        span.attributes["db.collection.name"] = table
        span.attributes["keepsake.operation"] = operation.rawValue
        return span
    }

    func finished(_ operation: StoreOperation, span: any Span, outcome: String, after duration: Duration) {
        span.attributes["keepsake.outcome"] = outcome
        if outcome != "ok" { span.setStatus(SpanStatus(code: .error, message: outcome)) }
        span.end()
        let dimensions = [("scheme", scheme), ("operation", operation.rawValue), ("outcome", outcome)]
        Counter(label: "keepsake_store_calls_total", dimensions: dimensions).increment()
        Metrics.Timer(label: "keepsake_store_call_duration_seconds", dimensions: dimensions)
            .recordNanoseconds(Self.nanoseconds(duration))
    }

    /// A call tried again after a failure that left nothing applied.
    func retried() { Counter(label: "keepsake_store_retries_total", dimensions: [("scheme", scheme)]).increment() }

    /// A connection made again after connecting had failed.
    func reconnected() {
        Counter(label: "keepsake_store_reconnects_total", dimensions: [("scheme", scheme)]).increment()
    }

    /// A write that found another writer's change.
    func conflicted() {
        Counter(label: "keepsake_store_conflicts_total", dimensions: [("scheme", scheme)]).increment()
    }

    /// How long an update waited for its record.
    func waitedForLock(_ duration: Duration) {
        Metrics.Timer(label: "keepsake_store_lock_wait_seconds", dimensions: [("scheme", scheme)])
            .recordNanoseconds(Self.nanoseconds(duration))
    }

    /// A `COMMIT` sent and not answered, whose fate is asked of the server.
    func uncertainCommit() {
        Counter(label: "keepsake_store_uncertain_commits_total", dimensions: [("scheme", scheme)]).increment()
    }

    /// A watch that lost its connection and listens again.
    func watchRestarted() {
        Counter(label: "keepsake_store_watch_restarts_total", dimensions: [("scheme", scheme)]).increment()
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
#endif
