import Foundation
import Synchronization

/// A hint that what a store holds may have changed. Hints are never trusted as values: an
/// observer reads the record again and compares before it reports anything.
public enum StoreChange: Sendable, Hashable {
    /// The record under this key may have changed (been written or removed).
    case key(String)
    /// Any record may have changed: the backend cannot tell which (a suite file replaced, a
    /// watch queue that overflowed).
    case any
    /// The store became locked (a keyring collection): its records cannot be read now, which
    /// is not the same as their being removed.
    case locked
    /// The store can be read again after being locked or unreachable.
    case unlocked
}

/// A stream of ``StoreChange`` hints, for as long as it is consumed. Ending the consumer (or
/// cancelling its task) releases what the watch holds: file descriptors, D-Bus match rules,
/// listening connections.
public typealias StoreChanges = AsyncStream<StoreChange>

extension AsyncStream where Element == StoreChange {
    /// One wake-up for any number of hints that may concern `key`, for an observer that reads
    /// the record again on each: a task takes the hints as fast as they come and leaves at most
    /// one wake-up waiting, so a flood of hints (spoofed signals, a busy writer) costs one read
    /// in flight and one after it, never one read per hint. Keys are compared exactly. Ends
    /// when the hints end; stopping its consumer stops the hints' consumer too.
    package func wakeUps(forKey key: String) -> AsyncStream<Void> {
        let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let hints = self
        let pump = Task {
            for await change in hints {
                if case let .key(changed) = change, !changed.isExactly(key) { continue }
                wake.yield(())
            }
            wake.finish()
        }
        wake.onTermination = { _ in pump.cancel() }
        return wakeUps
    }
}

/// A store that can tell when its records change, whoever changes them: this process, another
/// process, another instance. What `Vault.updates(for:)` uses; a store that is not one is
/// polled.
public protocol ObservableStore: RecordStore {
    /// Starts watching and returns the hints, from now on; the watch ends when the stream's
    /// consumer stops.
    ///
    /// - Throws: ``KeepsakeError`` naming the store when the watch cannot be set up (no inotify
    ///   instance left, no session bus).
    func changes() throws(KeepsakeError) -> StoreChanges

    /// How long a record that reads as absent right after the store reported itself
    /// ``StoreChange/locked`` is read again before an observer reports it absent. Zero (the
    /// default) for a store whose records are there the moment it says it is unlocked; a
    /// keyring provider may say so a moment before it shows its items again (KeePassXC adds
    /// them back one by one as its database opens), and an unlock is not a deletion.
    var settleAfterUnlock: Duration { get }
}

extension ObservableStore {
    /// Zero: the store's records are there as soon as it says it is unlocked.
    public var settleAfterUnlock: Duration { .zero }
}

/// Counts the watches that are open in this process, in all and by store, so that tests can
/// check that cancelling releases every one (by store: tests running in parallel open and close
/// watches of their own meanwhile). Debug builds count; in release builds the calls do nothing.
package enum WatchCount {
    #if DEBUG
    private static let counts = Mutex((all: 0, byStore: [String: Int]()))
    /// Watches open now.
    package static var open: Int { counts.withLock { $0.all } }
    /// Watches of the store at `uri` open now (those opened with its URI).
    package static func open(store uri: String) -> Int { counts.withLock { $0.byStore[uri, default: 0] } }
    #endif
    package static func opened(store uri: String? = nil) {
        #if DEBUG
        counts.withLock { counts in
            counts.all += 1
            if let uri { counts.byStore[uri, default: 0] += 1 }
        }
        #endif
    }
    package static func closed(store uri: String? = nil) {
        #if DEBUG
        counts.withLock { counts in
            counts.all -= 1
            if let uri {
                counts.byStore[uri, default: 0] -= 1
                if counts.byStore[uri] == 0 { counts.byStore[uri] = nil }
            }
        }
        #endif
    }
}
