import Foundation
import Synchronization

/// One look at a key, as the observation loop needs to know it: `Vault.updates` looks with a
/// chain (``RecordUpdate``), `migrate watch` with a migrator's report of any model.
package protocol ObservedLook: Sendable {
    /// The same bytes for two looks that found the same thing, compared byte for byte (never
    /// as `String`s, whose `==` takes canonically equivalent text for the same).
    var fingerprint: [UInt8] { get }
    /// What the look found, as far as the loop's own decisions go.
    var observedKind: ObservedKind { get }
}

/// What a look found, for the loop's decisions: a read that timed out is made again, a record
/// that reads as absent just after the store was locked is given time to come back.
package enum ObservedKind: Sendable {
    case absent, locked, timedOut, other
}

/// A fingerprint of several parts that cannot run into each other: each part is added as its
/// length and its bytes.
package struct Fingerprint {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func add(_ part: some Collection<UInt8>) {
        withUnsafeBytes(of: UInt64(part.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: part)
    }

    package mutating func add(_ text: String) { add(text.utf8) }
}

/// The one observation loop: a key, or every key a pattern matches, watched for as long as the
/// stream is consumed. Behind `Vault.updates(for:)`, `Vault.updates(of:matching:)` and
/// `migrate watch`, which differ only in how they look at a key.
///
/// - The watch starts before the first look, so a change between the two is not missed. A
///   store that is not an ``ObservableStore``, or whose watch cannot be set up (that failure is
///   an element of its own), is looked at again every ``Vault/updatesPollInterval``.
/// - A store's hints only say when to look again: a look is compared with the one before it
///   (by fingerprint, byte for byte) and yielded only when it differs.
/// - Hints are coalesced: however many arrive during a look, they cost one more look.
/// - A look that timed out is made again (``Vault/timeoutRereads`` times, over 0.6 s) before it
///   counts: it says how a call went, not what the store holds.
/// - A key that reads as absent right after its store was locked is looked at again for the
///   store's ``ObservableStore/settleAfterUnlock`` before it is reported absent: a keyring
///   provider may report itself unlocked a moment before it shows its items again.
package struct Observation<Look: ObservedLook>: Sendable {
    let store: any RecordStore
    let look: @Sendable (String) async -> Look
    let failure: @Sendable (KeepsakeError) -> Look

    /// - Parameters:
    ///   - look: looks at one key now; it must not block Swift's cooperative pool.
    ///   - failure: the look that stands for a watch or a listing that failed.
    package init(
        store: any RecordStore, look: @escaping @Sendable (String) async -> Look,
        failure: @escaping @Sendable (KeepsakeError) -> Look
    ) {
        self.store = store
        self.look = look
        self.failure = failure
    }

    /// The key now, then each change to it.
    package func key(_ key: String) -> AsyncStream<Look> {
        let (stream, continuation) = AsyncStream.makeStream(of: Look.self, bufferingPolicy: .bufferingNewest(64))
        let observation = self
        // At the caller's priority: a watcher below it would wait behind every busier task.
        let task = Task(priority: Task.currentPriority) {
            var last: (fingerprint: [UInt8], kind: ObservedKind)?
            func report(_ look: Look) {
                let fingerprint = look.fingerprint
                guard fingerprint != last?.fingerprint else { return }
                last = (fingerprint, look.observedKind)
                continuation.yield(look)
            }
            func refresh() async {
                guard var look = await observation.lookRetryingTimeouts(key) else { return }
                if look.observedKind == .absent, last?.kind == .locked {
                    // Just unlocked: absent only if it stays absent.
                    let deadline = ContinuousClock.now + observation.settleAfterUnlock
                    while look.observedKind == .absent, ContinuousClock.now < deadline {
                        guard await pause(.milliseconds(50)) else { return }  // cancelled
                        look = await observation.look(key)
                    }
                }
                report(look)
            }
            let changes = observation.watch(onFailure: report)
            await refresh()
            await repeatedly(after: changes?.wakeUps(forKey: key)) { await refresh() }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Every key `pattern` matches now, then each one any writer adds, changes or removes; a
    /// key removed is looked at once and its absence yielded once. A listing that fails is
    /// yielded under the pattern's text (``KeyPattern/description``), once until it changes;
    /// once the store can be listed again, every key's look is yielded again.
    ///
    /// - Parameter element: makes an element of a key and its look.
    package func pattern<Element: Sendable>(
        _ pattern: KeyPattern, element: @escaping @Sendable (_ key: String, _ look: Look) -> Element
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(64))
        let observation = self
        let task = Task(priority: Task.currentPriority) {
            // Each key looked at and not absent → its last look's fingerprint (empty: yield
            // whatever comes next).
            var seen: [ExactString: [UInt8]] = [:]
            var listingFailed: (fingerprint: [UInt8], kind: ObservedKind)?
            func reportListing(_ look: Look) {
                let fingerprint = look.fingerprint
                guard fingerprint != listingFailed?.fingerprint else { return }
                listingFailed = (fingerprint, look.observedKind)
                continuation.yield(element(pattern.description, look))
            }
            /// Looks at `keys` again and yields those that changed.
            func refresh(_ keys: [String]) async {
                for key in keys {
                    guard !Task.isCancelled, let look = await observation.lookRetryingTimeouts(key) else { return }
                    let exact = ExactString(key)
                    if look.observedKind == .absent {
                        guard seen.removeValue(forKey: exact) != nil else { continue }  // never seen: nothing to say
                    } else {
                        let fingerprint = look.fingerprint
                        guard fingerprint != seen[exact] else { continue }
                        seen[exact] = fingerprint
                    }
                    continuation.yield(element(key, look))
                }
            }
            /// Lists the keys the pattern matches, and looks at them and at those seen before.
            func rescan() async {
                var listed = await observation.list(pattern)
                if listingFailed?.kind == .locked {
                    // Just unlocked: a key seen before is gone only if it stays gone.
                    let deadline = ContinuousClock.now + observation.settleAfterUnlock
                    while case let .success(keys) = listed, ContinuousClock.now < deadline,
                        !Set(keys.map(ExactString.init)).isSuperset(of: seen.keys)
                    {
                        guard await pause(.milliseconds(50)) else { return }  // cancelled
                        listed = await observation.list(pattern)
                    }
                }
                switch listed {
                case let .failure(error):
                    reportListing(observation.failure(error))
                case let .success(keys):
                    if listingFailed != nil {
                        // What was yielded last for the pattern was a failure: say every key again.
                        listingFailed = nil
                        for key in seen.keys { seen[key] = [] }
                    }
                    let listedKeys = Set(keys.map(ExactString.init))
                    let gone = seen.keys.filter { !listedKeys.contains($0) }.sorted().map(\.value)
                    await refresh(keys + gone)
                }
            }
            let changes = observation.watch(onFailure: reportListing)
            await rescan()
            // Hints gather while a look is made; more than `PendingKeys.limit` keys, or a hint
            // that names none, is one rescan.
            let pending = PendingKeys()
            var pump: Task<Void, Never>?
            var wakeUps: AsyncStream<Void>?
            if let changes {
                let (stream, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                wakeUps = stream
                pump = Task {
                    for await change in changes {
                        if case let .key(key) = change, !pattern.matches(key) { continue }
                        pending.add(change)
                        wake.yield(())
                    }
                    wake.finish()
                }
            }
            await repeatedly(after: wakeUps) {
                if wakeUps != nil, let keys = pending.take() { await refresh(keys) } else { await rescan() }
            }
            pump?.cancel()
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Starts watching the store when it can be watched; a watch that cannot be set up is
    /// reported to `onFailure` and the store is polled.
    /// How long an absent look right after a locked one is made again: the store's own
    /// settle, zero for a store that is not observable.
    var settleAfterUnlock: Duration { (store as? any ObservableStore)?.settleAfterUnlock ?? .zero }

    private func watch(onFailure: (Look) -> Void) -> StoreChanges? {
        guard let observable = store as? any ObservableStore else { return nil }
        do throws(KeepsakeError) {
            return try observable.changes()
        } catch {
            onFailure(failure(error))
            return nil
        }
    }

    /// A look at `key`, made again after a timeout (after 0.1, 0.2 and 0.3 s) before it
    /// counts; `nil` when the task was cancelled meanwhile.
    private func lookRetryingTimeouts(_ key: String) async -> Look? {
        var look = await self.look(key)
        var retries = 0
        while look.observedKind == .timedOut, retries < Vault.timeoutRereads {
            retries += 1
            guard await pause(.milliseconds(100 * retries)) else { return nil }
            look = await self.look(key)
        }
        return look
    }

    /// The keys `pattern` matches, listed off Swift's pool; a listing that timed out is made
    /// again as a look is.
    private func list(_ pattern: KeyPattern) async -> Result<[String], KeepsakeError> {
        let store = self.store
        var retries = 0
        while true {
            let listed = await Blocking.run { () -> Result<[String], KeepsakeError> in
                do throws(KeepsakeError) {
                    return .success(try store.keys(matching: pattern))
                } catch {
                    return .failure(error)
                }
            }
            guard case let .failure(error) = listed, error.code == .timeout, retries < Vault.timeoutRereads,
                await pause(.milliseconds(100 * (retries + 1)))
            else { return listed }
            retries += 1
        }
    }
}

/// Calls `look` after each wake-up until they end — or, with none to wait for (a store that is
/// not watched), every ``Vault/updatesPollInterval`` — until the task is cancelled.
private func repeatedly(after wakeUps: AsyncStream<Void>?, _ look: () async -> Void) async {
    if let wakeUps {
        for await _ in wakeUps {
            if Task.isCancelled { return }
            await look()
        }
    } else {
        while !Task.isCancelled {
            guard await pause(Vault.updatesPollInterval) else { return }
            await look()
        }
    }
}

/// Sleeps for `duration`; `false` when the task was cancelled (and did not sleep it all).
private func pause(_ duration: Duration) async -> Bool {
    do {
        try await Task.sleep(for: duration)
        return true
    } catch {
        return false  // CancellationError: Task.sleep throws nothing else
    }
}

/// The keys hints named since the last look, or "every key" (`nil`): what a pattern's
/// observation looks at next.
final class PendingKeys: Sendable {
    /// More keys than this waiting are one rescan.
    static let limit = 1_024
    private let pending = Mutex<(keys: [String], named: Set<ExactString>, all: Bool)>(([], [], false))

    func add(_ change: StoreChange) {
        pending.withLock { pending in
            guard !pending.all else { return }
            if case let .key(key) = change, pending.keys.count < Self.limit {
                if pending.named.insert(ExactString(key)).inserted { pending.keys.append(key) }
            } else {
                pending = ([], [], true)
            }
        }
    }

    /// What gathered, emptied: the keys sorted by UTF-8 bytes, or `nil` for a rescan.
    func take() -> [String]? {
        pending.withLock { pending in
            defer { pending = ([], [], false) }
            return pending.all ? nil : pending.named.sorted().map(\.value)
        }
    }
}
