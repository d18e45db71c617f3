import Keepsake

extension KeyringStore: ObservableStore {
    /// Hints from the Secret Service's signals and from Keepsake's writers on the session bus:
    /// `.any` for an item created, changed or deleted (the provider's signals do not say which
    /// record), `.key(key)` for a write by a Keepsake store of this ``service`` (in this process
    /// or another), `.locked` / `.unlocked` when a collection's lock changes, and `.any` when a
    /// provider starts or is replaced, once it has had a default collection for a second (and
    /// its signals have been quiet for half a second, at most 5 s): KeePassXC 2.7.4 crashes
    /// when it is searched as it starts. Hints that come meanwhile are folded into that `.any`.
    /// A provider that goes away is not reported: reading then would have D-Bus start another
    /// one.
    ///
    /// Every hint is only a reason to read again: a provider that hides its items when it locks
    /// (KeePassXC sends `ItemDeleted` for each) is read as locked, never as empty. Writes by
    /// other clients are seen through the provider's signals — except that gnome-keyring sends
    /// none when another client replaces an item's secret in place with `Item.SetSecret`
    /// (`secret-tool` and Python `keyring` create over the item instead, which it reports).
    ///
    /// The watch holds D-Bus match rules on the process's session-bus connection and a thread
    /// of its own; both are released when the stream's consumer stops.
    ///
    /// - Throws: `KeepsakeError` `.unavailable` naming this store when the session
    ///   bus cannot be reached (`.timeout` after ``timeout``). A bus with no Secret Service yet is
    ///   watched: its provider's arrival is a hint.
    public func changes() throws(KeepsakeError) -> StoreChanges {
        let (stream, continuation) = StoreChanges.makeStream(bufferingPolicy: .bufferingNewest(64))
        let signals: KeyringSignals
        do throws(LibsecretFailure) {
            signals = try KeyringSignals(service: service, timeout: timeout) { change in
                // A consumer that falls behind loses the oldest hints; one that was dropped is
                // followed by `.any`, so a read after the last change is never lost.
                if case .dropped = continuation.yield(change) { continuation.yield(.any) }
            }
        } catch {
            let failure = error.keepsakeError(store: uri, key: nil, timeout: timeout)
            Log.keyring.failed(failure, timeout: timeout)
            throw failure
        }
        continuation.onTermination = { _ in signals.stop() }
        return stream
    }

    /// Two seconds: a provider may say its collection is unlocked a moment before it shows the
    /// items again — KeePassXC adds them back one by one as its database opens — so a record
    /// that reads as absent just after an unlock is read again for this long before an
    /// observer reports it absent.
    public var settleAfterUnlock: Duration { .seconds(2) }
}
