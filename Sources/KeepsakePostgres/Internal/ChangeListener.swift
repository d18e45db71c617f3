#if PostgreSQL
import Foundation
import Keepsake
import Logging
internal import PostgresNIO
import Synchronization

/// One watch of a table: a connection of its own, outside the store's pool, that `LISTEN`s on
/// the table's channel and turns each notification into a ``StoreChange`` hint.
///
/// - Once listening — at the start and after every reconnection — it hints `.any`: a
///   notification sent before `LISTEN` took effect, or while the connection was down, is lost,
///   so every watched record is read again.
/// - A lost connection (a server restart, a network failure, a health check that failed) is
///   reconnected with a growing pause (0.1 s doubling to 5 s, back to 0.1 s once listening).
/// - While the table's triggers are missing it checks every second and installs them once the
///   table exists; a role that may not create them makes the watch hint `.any` every second
///   (polling) until they appear. A server that does not support `LISTEN` is polled too.
/// - Cancelling the task ends it: the connection is closed, which ends the server session and
///   its `LISTEN`.
struct ChangeListener: Sendable {
    let connection: PostgresConnection.Configuration
    let trigger: NotifyTrigger
    let logger: Logger
    let instruments: StoreInstruments

    /// How often an idle listening connection is checked with `SELECT 1`, so that a connection
    /// that died silently is noticed and replaced.
    static let healthCheckInterval: Duration = .seconds(30)
    static let ids = Atomic<Int>(0)

    /// Why one listening session ended.
    private enum Ended {
        /// The task was cancelled: the watch is over.
        case cancelled
        /// The connection failed or was lost; `listened` when `LISTEN` had taken effect.
        case lost(listened: Bool)
        /// The server does not support `LISTEN`.
        case unsupported
    }

    /// Delivers hints to `continuation` until the task is cancelled.
    func run(_ continuation: StoreChanges.Continuation) async {
        let hints = Hints(continuation)
        var pause: Duration = .milliseconds(100)
        while !Task.isCancelled {
            let session: PostgresConnection
            do {
                session = try await PostgresConnection.connect(
                    configuration: connection, id: Self.ids.add(1, ordering: .relaxed).newValue, logger: logger)
            } catch {
                if Task.isCancelled { return }
                logger.debug("a watch could not connect; retrying", metadata: ["error": "\(String(reflecting: error))"])
                do { try await Task.sleep(for: pause) } catch { return }
                pause = min(pause * 2, .seconds(5))
                continue
            }
            let ended = await listen(on: session, hints)
            do {
                try await session.close()
            } catch {
                logger.debug("closing a watch's connection failed", metadata: ["error": "\(error)"])
            }
            switch ended {
            case .cancelled:
                return
            case .unsupported:
                logger.warning(
                    "the server does not support LISTEN; the watch polls", metadata: ["table": "\(trigger.table)"])
                await Self.poll(hints)
                return
            case let .lost(listened):
                instruments.watchRestarted()
                if listened { pause = .milliseconds(100) }
                logger.debug("a watch lost its connection; reconnecting", metadata: ["table": "\(trigger.table)"])
                do { try await Task.sleep(for: pause) } catch { return }
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// One session: `LISTEN`, check the triggers, then relay notifications until the connection
    /// fails or the task is cancelled.
    private func listen(on session: PostgresConnection, _ hints: Hints) async -> Ended {
        var listened = false
        do {
            try await session.listen(on: trigger.channel) { notifications in
                listened = true
                let found = try await trigger.ensure(on: session, logger: logger)
                // Whatever changed before LISTEN took effect (or while disconnected) was not notified.
                hints.yield(.any)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await notification in notifications {
                            hints.yield(notification.payload.isEmpty ? .any : .key(notification.payload))
                        }
                        throw ConnectionEnded()
                    }
                    group.addTask { [trigger, logger] in
                        var state = found
                        var checked = ContinuousClock.now
                        while true {
                            try await Task.sleep(for: state == .armed ? Self.healthCheckInterval : .seconds(1))
                            switch state {
                            case .armed:
                                _ = try await session.collect("SELECT 1", logger: logger)
                            case .tableMissing:
                                state = try await trigger.ensure(on: session, logger: logger)
                                if state == .armed { hints.yield(.any) }
                            case .cannotInstall:
                                hints.yield(.any)  // polling, until someone who may creates the triggers
                                if ContinuousClock.now - checked > .seconds(60) {
                                    checked = .now
                                    state = try await trigger.ensure(on: session, logger: logger)
                                }
                            }
                        }
                    }
                    // The first to end (the connection failed, the task was cancelled) ends both.
                    defer { group.cancelAll() }
                    try await group.next()
                }
            }
        } catch {
            if Task.isCancelled { return .cancelled }
            if let state = PostgresStore.sqlState(error), state.hasPrefix("0A") { return .unsupported }
            return .lost(listened: listened)
        }
        return Task.isCancelled ? .cancelled : .lost(listened: listened)
    }

    /// Hints `.any` every `Vault.updatesPollInterval` until the task is cancelled.
    private static func poll(_ hints: Hints) async {
        while true {
            do { try await Task.sleep(for: Vault.updatesPollInterval) } catch { return }
            hints.yield(.any)
        }
    }

    /// The notification stream ended without an error: the connection closed.
    struct ConnectionEnded: Error {}
}

/// A watch's hints as they are handed to its consumer: when the consumer falls so far behind
/// that a hint is dropped, `.any` takes its place, so that no change goes unread.
struct Hints: Sendable {
    let continuation: StoreChanges.Continuation

    init(_ continuation: StoreChanges.Continuation) { self.continuation = continuation }

    func yield(_ change: StoreChange) {
        if case .dropped = continuation.yield(change) { continuation.yield(.any) }
    }
}
#endif
