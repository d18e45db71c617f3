#if OpenBao
import Foundation
import Keepsake
import Logging
import Synchronization

extension OpenBaoStore: ObservableStore {
    /// Hints of changes to the store's records, found by polling: one `detailed-metadata` listing
    /// per ``OpenBaoConfiguration/pollInterval``, shared by every watch of this store (a process
    /// watching a hundred keys still sends one request per interval). A key whose version or
    /// deletion changed is a `.key` hint; a listing that fails is retried at the next interval,
    /// and the first one that succeeds after it is an `.any` hint, as is the first listing of a
    /// polling thread (a write made while it was being taken is in it, so it cannot be told).
    ///
    /// - Throws: Never today; the signature leaves room for a server-side watch.
    public func changes() throws(KeepsakeError) -> StoreChanges {
        let (stream, continuation) = StoreChanges.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let id = watcher.add(continuation, start: self)
        WatchCount.opened()
        continuation.onTermination = { [watcher] _ in
            watcher.remove(id)
            WatchCount.closed()
        }
        return stream
    }
}

/// The one polling thread of a store's watches: started by the first watch, ended when the
/// last one ends.
final class Watcher: Sendable {
    private struct State {
        var watches: [Int: StoreChanges.Continuation] = [:]
        var nextID = 0
        var running = false
    }

    private let state = Mutex(State())
    private let logger = Logger(label: "keepsake.openbao")
    /// Called on a polling thread just before its first listing: where a test holds that listing
    /// back, to land a write between a watch's start and it (`nil` outside tests).
    let beforeFirstListing = Mutex<(@Sendable () -> Void)?>(nil)

    /// Adds a watch; starts the polling thread (which holds `store` while it runs) when none runs.
    func add(_ continuation: StoreChanges.Continuation, start store: OpenBaoStore) -> Int {
        let (id, startThread) = state.withLock { state -> (Int, Bool) in
            state.nextID += 1
            state.watches[state.nextID] = continuation
            defer { state.running = true }
            return (state.nextID, !state.running)
        }
        if startThread {
            let thread = Thread { [self] in poll(store) }
            thread.name = "keepsake.openbao.watch"
            thread.start()
        }
        return id
    }

    func remove(_ id: Int) {
        state.withLock { _ = $0.watches.removeValue(forKey: id) }
    }

    /// Lists the store every interval and sends each watch the keys that changed, until no watch
    /// is left.
    private func poll(_ store: OpenBaoStore) {
        var known: [String: (version: Int, live: Bool)]?
        var failing = false
        beforeFirstListing.withLock { $0 }?()
        while true {
            let started = ContinuousClock.now
            var hints: [StoreChange] = []
            do {
                let listing = try store.listing(deadline: .now + store.configuration.timeout)
                if let known {
                    for (name, state) in listing {
                        let before = known[name]
                        if before?.version != state.version || before?.live != state.live,
                            let key = EntryName.decode(name)
                        {
                            hints.append(.key(key))
                        }
                    }
                    for name in known.keys where listing[name] == nil {
                        if let key = EntryName.decode(name) { hints.append(.key(key)) }
                    }
                }
                // The first listing is the baseline the next ones are compared with: a write that
                // landed between a watch's start and this listing is in it and would never be
                // hinted, so each watch is told that anything may have changed (as after a failure).
                if failing || known == nil { hints = [.any] }
                failing = false
                known = listing
            } catch {
                if !failing {
                    logger.warning(
                        "watching the store: the listing failed; trying again each interval",
                        metadata: ["store": "\(store.uri)", "error": "\(error.message)"])
                }
                failing = true
            }
            let watches: [StoreChanges.Continuation]? = state.withLock { state in
                if state.watches.isEmpty {
                    state.running = false
                    return nil
                }
                return Array(state.watches.values)
            }
            guard let watches else { return }
            for watch in watches {
                for hint in hints { watch.yield(hint) }
            }
            let pause = store.configuration.pollInterval - started.duration(to: .now)
            if pause > .zero { Thread.sleep(forTimeInterval: pause.seconds) }
        }
    }
}
#endif
