import Keepsake

/// What a keyring watch does with what the session bus tells it: when to hold hints back for a
/// provider that is starting, and how to stand a flood of spoofed hints. The C watch
/// (`Sources/CLibsecret/shim.h`) only subscribes, counts and forwards; it runs the actions this
/// returns. A value type on the watch's one thread, driven by events and the time they came,
/// so that every timing below is tested without a provider (KeyringWatchPolicyTests).
///
/// **A provider that starts** (the Secret Service's bus name gets an owner) is reported once,
/// as `.any`, when it is ready to be read: once it has had a default collection for
/// ``settle`` and no other hint came for ``quiet`` — no later than ``settleMax`` after the
/// collection appeared, or ``arrivalGiveUp`` after the provider if it never has one. Until
/// then only `ReadAlias` is asked (every ``arrivalPoll``) and every other hint is folded into
/// that one report. Why: KeePassXC 2.7.4 crashes (SIGSEGV on its main thread, in a nested event
/// loop while it shows its window at start-up) when a client searches it in the moments after
/// its default collection appears, while it still announces it (`CollectionCreated`, then
/// `CollectionChanged` twice). Those came within 120 ms of the collection on a quiet machine and
/// within 410 ms at load 5 on 2 cores; a search among them took it down every time (7 of 7),
/// none from 250 ms to 1 s after (6 of 6). Before its collection, KeePassXC owns the name with
/// its database still closed, and a search then makes it open a dialog. A second start meanwhile
/// begins the wait again, for the newer owner.
///
/// **A flood** — 2,000 `RecordChanged` hints for the service within a second, counted by the C
/// filter where they arrive (one Python process sent 170,000 a second here) — makes the watch
/// ask the bus to stop sending them and read the record every ``floodPoll`` instead, for a
/// cooldown of ``cooldownFirst`` that doubles while floods follow each other (one that starts
/// within twice the last cooldown of its end), up to ``cooldownMax``; then it subscribes
/// again and, once the bus has answered, reads once more (a change meanwhile is read by the
/// polls or by that read).
struct KeyringWatchPolicy: Equatable {
    /// What the watch saw.
    enum Event: Equatable {
        /// A hint from the provider's signals or a Keepsake writer.
        case hint(StoreChange)
        /// A provider took the Secret Service's name; its unique bus name.
        case arrived(owner: String)
        /// The C filter counted a flood of `RecordChanged` hints.
        case flooded
        /// The bus answered the re-subscription at the end of a cooldown.
        case resubscribed
        /// A timer the policy started fired.
        case tick(Timer)
    }

    /// The policy's timers; the raw value is the C watch's timer slot.
    enum Timer: Int32, Equatable, CaseIterable {
        case arrival = 0
        case cooldown = 1
    }

    /// What the policy asks the watch to do, in order.
    enum Action: Equatable {
        /// Yield a hint to the observer.
        case report(StoreChange)
        /// Start (or restart) a timer that ticks every interval.
        case startTimer(Timer, every: Duration)
        case stopTimer(Timer)
        /// Ask the bus to stop sending `RecordChanged` for the service.
        case unsubscribeHints
        /// Ask the bus to send them again; ``Event/resubscribed`` follows.
        case resubscribeHints
    }

    static let arrivalPoll: Duration = .milliseconds(100)
    static let arrivalGiveUp: Duration = .seconds(30)
    static let settle: Duration = .seconds(1)
    static let quiet: Duration = .milliseconds(500)
    static let settleMax: Duration = .seconds(5)
    static let floodPoll: Duration = .milliseconds(250)
    static let cooldownFirst: Duration = .seconds(1)
    static let cooldownMax: Duration = .seconds(30)

    typealias Instant = ContinuousClock.Instant

    /// A provider that started and is not reported yet.
    private struct Arrival: Equatable {
        var owner: String
        /// When it is reported even without a default collection.
        var giveUp: Instant
        /// When it was first seen with a default collection.
        var ready: Instant?
        /// When ``quiet`` has passed since the last hint held back.
        var quietFrom: Instant?
    }

    private var arrival: Arrival?
    /// When the cooldown under way ends.
    private var cooldownEnd: Instant?
    private var cooldown: Duration = .zero
    private var lastCooldownEnded: Instant?

    /// Whether a provider's start is being waited for (hints are held back).
    var waitingForProvider: Bool { arrival != nil }
    /// Whether a flood's cooldown is under way (`RecordChanged` unsubscribed, the record polled).
    var coolingDown: Bool { cooldownEnd != nil }

    /// The actions for `event`, seen at `now`. `hasDefaultCollection` asks a provider, by its
    /// unique bus name, whether it has a default collection (`ReadAlias`, the one call that is
    /// safe while KeePassXC starts).
    mutating func handle(
        _ event: Event, at now: Instant, hasDefaultCollection: (_ owner: String) -> Bool
    ) -> [Action] {
        switch event {
        case let .hint(change):
            return hint(change, at: now)
        case let .arrived(owner):
            let waiting = arrival != nil
            arrival = Arrival(owner: owner, giveUp: now + Self.arrivalGiveUp)
            return waiting ? [] : [.startTimer(.arrival, every: Self.arrivalPoll)]
        case .tick(.arrival):
            return arrivalTick(at: now, hasDefaultCollection: hasDefaultCollection)
        case .flooded:
            guard cooldownEnd == nil else { return [] }
            let again = lastCooldownEnded.map { now < $0 + cooldown * 2 } ?? false
            cooldown = again ? min(cooldown * 2, Self.cooldownMax) : Self.cooldownFirst
            cooldownEnd = now + cooldown
            return [.unsubscribeHints, .startTimer(.cooldown, every: Self.floodPoll)]
        case .tick(.cooldown):
            guard let end = cooldownEnd else { return [.stopTimer(.cooldown)] }
            let poll = hint(.any, at: now)
            guard now >= end else { return poll }
            cooldownEnd = nil
            lastCooldownEnded = now
            return poll + [.stopTimer(.cooldown), .resubscribeHints]
        case .resubscribed:
            return hint(.any, at: now)
        }
    }

    /// A hint is reported, unless a provider's start is waited for: then it is held back into
    /// the one `.any` the start is reported with (a full re-read covers whatever it was about),
    /// and the wait for quiet starts again.
    private mutating func hint(_ change: StoreChange, at now: Instant) -> [Action] {
        guard arrival != nil else { return [.report(change)] }
        arrival?.quietFrom = now + Self.quiet
        return []
    }

    private mutating func arrivalTick(
        at now: Instant, hasDefaultCollection: (_ owner: String) -> Bool
    ) -> [Action] {
        guard var waiting = arrival else { return [.stopTimer(.arrival)] }
        if waiting.ready == nil, now < waiting.giveUp {
            guard hasDefaultCollection(waiting.owner) else { return [] }
            waiting.ready = now
            arrival = waiting
        }
        if let ready = waiting.ready {
            let settled = now >= ready + Self.settle && now >= (waiting.quietFrom ?? now)
            if !settled, now < ready + Self.settleMax { return [] }
        }
        arrival = nil
        return [.stopTimer(.arrival), .report(.any)]
    }
}
