internal import CLibsecret
import Foundation
import Keepsake

/// A watch on the session bus for signs that a keyring store's records changed, delivered as
/// ``StoreChange`` hints on a thread of its own until ``stop()``.
///
/// What each provider sends (checked with gnome-keyring 42, KeePassXC 2.7, kwalletd5 5.103):
/// - gnome-keyring: `ItemCreated` for a new item and for `CreateItem` replacing one (what
///   `secret-tool store` and Python `keyring` do), `ItemDeleted`, and nothing at all when an
///   item's secret is replaced in place (`Item.SetSecret`, how Keepsake writes); locking emits
///   `ItemChanged`, `CollectionChanged` and `PropertiesChanged` with `Locked`.
/// - KeePassXC: every item signal several times (on the collection's path and on the `default`
///   alias's), `CollectionChanged` around most of them; locking its database emits
///   `ItemDeleted` for every item it hides, then `CollectionChanged`.
/// - KWallet: `ItemCreated` and `ItemChanged`, twice each (collection and alias), also for
///   `SetSecret`; closing the wallet emits `CollectionChanged`.
///
/// So every Keepsake writer also announces its writes (``announce(service:key:timeout:)``),
/// which covers gnome-keyring's silent in-place replace; a provider's (re)start is seen as its
/// bus name changing owner, and reported once its default collection has been there for a
/// second and its signals have been quiet for half a second — KeePassXC 2.7.4 crashes when it
/// is searched while it still announces its collection at start-up. Every other hint meanwhile
/// is folded into that one report (`keepsake_watch_owner` in shim.h). Each is only a hint: the
/// observer reads the record again, so a lock that hides items is read as locked, never as a
/// deletion.
///
/// Any process on the bus may send `RecordChanged`, as fast as it likes (one Python process
/// sent 170,000 a second here). The bus routes to a watch only its own service's; GDBus's
/// worker thread gathers them (`keepsake_watch_filter`), so that however many arrive while a
/// report is pending, the watch's thread reports each key once; and a flood (2,000 in a second)
/// makes the watch unsubscribe from them and read the record every 250 ms instead, for a
/// cooldown that grows while floods go on (`keepsake_watch_flood`). 300,000 spoofed signals in
/// 3 s cost a `migrate watch` 0.9 s of CPU and nothing after them (without this, 3 s during and
/// 3 s after), and a real change meanwhile is printed within 250 ms
/// (Tests/KeepsakeKeyringTests/KeyringWatchCLITests.swift).
final class KeyringSignals: @unchecked Sendable {
    // @unchecked: `watch` never changes after init; keepsake_watch_stop is safe from any thread,
    // everything else of the watch is touched only by its own thread, and it is freed in deinit,
    // after that thread has ended (the thread holds a reference to this object).
    private let watch: UnsafeMutablePointer<KeepsakeWatch>
    private let sink: Unmanaged<HintSink>

    /// Subscribes on the session bus and starts the watch's thread.
    ///
    /// - Throws: ``LibsecretFailure`` at `.connectBus` when the session bus cannot be reached
    ///   within `timeout`.
    init(service: String, timeout: Duration, report: @escaping @Sendable (StoreChange) -> Void)
        throws(LibsecretFailure)
    {
        let deadline = LibsecretDeadline(timeout: timeout)
        defer { deadline.finish() }
        var error: UnsafeMutablePointer<GError>?
        guard let bus = g_bus_get_sync(G_BUS_TYPE_SESSION, deadline.cancellable, &error) else {
            throw LibsecretFailure(stage: .connectBus, error: error, deadlineExpired: deadline.expired)
        }
        defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
        let sink = Unmanaged.passRetained(HintSink(report))
        let hint: KeepsakeHintFunc = { kind, key, data in
            guard let data else { return }
            Unmanaged<HintSink>.fromOpaque(data).takeUnretainedValue().deliver(kind, key)
        }
        guard
            let watch = keepsake_watch_new(
                bus, service, hint, sink.toOpaque(), deadline.cancellable, &error)
        else {
            sink.release()
            throw LibsecretFailure(stage: .connectBus, error: error, deadlineExpired: deadline.expired)
        }
        self.watch = watch
        self.sink = sink
        WatchCount.opened()
        let thread = Thread { [self] in
            keepsake_watch_run(self.watch)
            WatchCount.closed()
        }
        thread.name = "keepsake.keyring.watch"
        thread.start()
    }

    deinit {
        keepsake_watch_free(watch)
        sink.release()
    }

    /// Ends the watch: its thread unsubscribes (the bus drops the match rules) and ends.
    func stop() { keepsake_watch_stop(watch) }

    /// Tells every watch of `service` on the session bus — in this process and others — that
    /// the record under `key` may have changed (`org.keepsake.Keyring.RecordChanged`), and
    /// waits until the signal is on its way, so that a process that exits right after a write
    /// has still told them. Best effort: a failure is logged, never thrown (the write itself is
    /// done).
    static func announce(service: String, key: String, timeout: Duration) {
        let deadline = LibsecretDeadline(timeout: timeout)
        defer { deadline.finish() }
        var error: UnsafeMutablePointer<GError>?
        guard let bus = g_bus_get_sync(G_BUS_TYPE_SESSION, deadline.cancellable, &error) else {
            let failure = LibsecretFailure(stage: .connectBus, error: error, deadlineExpired: deadline.expired)
            Log.keyring.debug("a write could not be announced to watchers: \(failure.message)")
            return
        }
        defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
        guard keepsake_announce_change(bus, service, key, deadline.cancellable, &error) != 0 else {
            let failure = LibsecretFailure(stage: .connectBus, error: error, deadlineExpired: deadline.expired)
            Log.keyring.debug("a write could not be announced to watchers: \(failure.message)")
            return
        }
    }
}

/// The closure a watch reports to, kept alive by the watch for its C callbacks.
private final class HintSink: Sendable {
    let report: @Sendable (StoreChange) -> Void

    init(_ report: @escaping @Sendable (StoreChange) -> Void) { self.report = report }

    func deliver(_ kind: Int32, _ key: UnsafePointer<gchar>?) {
        switch Int(kind) {
        case KEEPSAKE_HINT_KEY:
            guard let key else { return report(.any) }
            report(.key(String(cString: key)))
        case KEEPSAKE_HINT_LOCKED: report(.locked)
        case KEEPSAKE_HINT_UNLOCKED: report(.unlocked)
        default: report(.any)
        }
    }
}
