internal import CLibsecret
import Foundation
import Keepsake
import Synchronization

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
/// bus name changing owner. Each is only a hint: the observer reads the record again, so a lock
/// that hides items is read as locked, never as a deletion.
///
/// Any process on the bus may send `RecordChanged`, as fast as it likes. The bus routes to a
/// watch only its own service's; GDBus's worker thread gathers them (`keepsake_watch_filter` in
/// shim.h), so that however many arrive while a report is pending, the watch's thread reports
/// each key once, and counts them. What the watch does about a provider that starts and about
/// a flood is ``KeyringWatchPolicy``: it holds hints back until a starting provider can be read
/// safely, and answers a flood by polling instead. 300,000 spoofed signals in 3 s cost a
/// `migrate watch` 0.9 s of CPU and nothing after them (without the policy, 3 s during and
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
        let hint: KeepsakeWatchFunc = { watch, event, detail, text, data in
            guard let watch, let data else { return }
            Unmanaged<HintSink>.fromOpaque(data).takeUnretainedValue().deliver(watch, event, detail, text)
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

/// What a watch forwards to, kept alive by the watch for its C callbacks: the policy, run on
/// the watch's thread, and the closure that yields its reports.
private final class HintSink: Sendable {
    let report: @Sendable (StoreChange) -> Void
    /// Only the watch's thread uses it; the lock is never contended.
    private let policy = Mutex(KeyringWatchPolicy())

    init(_ report: @escaping @Sendable (StoreChange) -> Void) { self.report = report }

    func deliver(
        _ watch: UnsafeMutablePointer<KeepsakeWatch>, _ code: Int32, _ detail: Int32, _ text: UnsafePointer<gchar>?
    ) {
        let event: KeyringWatchPolicy.Event
        switch Int(code) {
        case KEEPSAKE_HINT_KEY:
            event = .hint(text.map { .key(String(cString: $0)) } ?? .any)
        case KEEPSAKE_HINT_LOCKED: event = .hint(.locked)
        case KEEPSAKE_HINT_UNLOCKED: event = .hint(.unlocked)
        case KEEPSAKE_WATCH_ARRIVED:
            guard let text else { return }
            event = .arrived(owner: String(cString: text))
        case KEEPSAKE_WATCH_FLOODED: event = .flooded
        case KEEPSAKE_WATCH_RESUBSCRIBED: event = .resubscribed
        case KEEPSAKE_WATCH_TICK:
            guard let timer = KeyringWatchPolicy.Timer(rawValue: detail) else { return }
            event = .tick(timer)
        default: event = .hint(.any)
        }
        let actions = policy.withLock { policy in
            policy.handle(event, at: .now) { owner in keepsake_watch_read_alias(watch, owner) != 0 }
        }
        for action in actions {
            switch action {
            case let .report(change): report(change)
            case let .startTimer(timer, interval):
                keepsake_watch_timer_start(watch, timer.rawValue, Self.milliseconds(interval))
            case let .stopTimer(timer): keepsake_watch_timer_stop(watch, timer.rawValue)
            case .unsubscribeHints: keepsake_watch_unsubscribe(watch)
            case .resubscribeHints: keepsake_watch_resubscribe(watch)
            }
        }
    }

    private static func milliseconds(_ interval: Duration) -> guint {
        let (seconds, attoseconds) = interval.components
        return guint(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
