import Keepsake
import Testing

@testable import KeepsakeKeyring

/// The keyring watch's policy on its own: every timing of a provider's start and of a flood's
/// cooldown, driven by events at chosen instants; no keyring needed. The same policy against
/// real providers: KeyringUpdatesTests (a provider restarted under a watch) and
/// KeyringWatchCLITests (a spoofed flood).
@Suite("Keyring watch policy: provider starts and floods")
struct KeyringWatchPolicyTests {
    typealias Policy = KeyringWatchPolicy
    let start = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    /// A policy and a provider whose default collection appears at a given moment; every
    /// `ReadAlias` is recorded.
    struct Driver {
        var policy = Policy()
        var collectionFrom: ContinuousClock.Instant?
        var asked: [String] = []

        mutating func handle(_ event: Policy.Event, at now: ContinuousClock.Instant) -> [Policy.Action] {
            var asked = self.asked
            let collectionFrom = self.collectionFrom
            let actions = policy.handle(event, at: now) { owner in
                asked.append(owner)
                return collectionFrom.map { now >= $0 } ?? false
            }
            self.asked = asked
            return actions
        }

        /// Ticks the arrival timer every 100 ms from `from` until something is reported, and
        /// returns when (`nil` if nothing by `until`).
        mutating func tickUntilReport(from: ContinuousClock.Instant, until: ContinuousClock.Instant)
            -> ContinuousClock.Instant?
        {
            var now = from
            while now <= until {
                let actions = handle(.tick(.arrival), at: now)
                if actions.contains(.report(.any)) {
                    #expect(actions == [.stopTimer(.arrival), .report(.any)])
                    return now
                }
                #expect(actions.isEmpty)
                now += .milliseconds(100)
            }
            return nil
        }
    }

    @Test("with no provider starting and no flood, every hint is reported as it comes")
    func passThrough() {
        var driver = Driver()
        for change in [StoreChange.key("a"), .any, .locked, .unlocked] {
            #expect(driver.handle(.hint(change), at: at(0)) == [.report(change)])
        }
        #expect(driver.asked.isEmpty)
    }

    @Test(
        "a starting provider is reported once, 1 s after its default collection appeared; hints meanwhile are held back"
    )
    func arrivalSettles() {
        var driver = Driver()
        #expect(driver.handle(.arrived(owner: ":1.7"), at: at(0)) == [.startTimer(.arrival, every: .milliseconds(100))])
        #expect(driver.policy.waitingForProvider)
        // No collection yet: only ReadAlias is asked, nothing is reported.
        #expect(driver.handle(.hint(.key("a")), at: at(50)).isEmpty)
        #expect(driver.handle(.tick(.arrival), at: at(100)).isEmpty)
        #expect(driver.asked == [":1.7"])
        driver.collectionFrom = at(300)
        // The collection is seen at 300 ms; the hint at 50 ms was quiet long ago.
        #expect(driver.tickUntilReport(from: at(200), until: at(10_000)) == at(1_300))
        // ReadAlias stopped once the collection was seen: 100, 200, 300 ms.
        #expect(driver.asked == [":1.7", ":1.7", ":1.7"])
        #expect(!driver.policy.waitingForProvider)
        #expect(driver.handle(.hint(.key("b")), at: at(1_400)) == [.report(.key("b"))])
    }

    @Test("a hint during the settle delays the report until 0.5 s of quiet")
    func arrivalWaitsForQuiet() {
        var driver = Driver(collectionFrom: at(0))
        _ = driver.handle(.arrived(owner: ":1.8"), at: at(0))
        #expect(driver.handle(.tick(.arrival), at: at(100)).isEmpty)  // ready at 100 ms
        #expect(driver.tickUntilReport(from: at(200), until: at(900)) == nil)
        #expect(driver.handle(.hint(.any), at: at(950)).isEmpty)  // CollectionChanged, late
        #expect(driver.tickUntilReport(from: at(1_000), until: at(10_000)) == at(1_500))
    }

    @Test("a provider that never quiets down is reported 5 s after its collection appeared")
    func arrivalSettleMax() {
        var driver = Driver(collectionFrom: at(0))
        _ = driver.handle(.arrived(owner: ":1.9"), at: at(0))
        var reported: ContinuousClock.Instant?
        var now = at(100)
        while reported == nil, now <= at(10_000) {
            #expect(driver.handle(.hint(.any), at: now).isEmpty)
            if driver.handle(.tick(.arrival), at: now) == [.stopTimer(.arrival), .report(.any)] { reported = now }
            now += .milliseconds(100)
        }
        #expect(reported == at(5_100))
    }

    @Test("a provider with no default collection is reported after 30 s, and not asked after that")
    func arrivalGivesUp() {
        var driver = Driver()
        _ = driver.handle(.arrived(owner: ":1.10"), at: at(0))
        #expect(driver.tickUntilReport(from: at(100), until: at(40_000)) == at(30_000))
        #expect(driver.asked.count == 299)  // 100 ms … 29.9 s
    }

    @Test("a second start while waiting waits again, for the newer owner, without a second timer")
    func arrivalReplaced() {
        var driver = Driver(collectionFrom: at(0))
        _ = driver.handle(.arrived(owner: ":1.11"), at: at(0))
        #expect(driver.handle(.tick(.arrival), at: at(100)).isEmpty)  // ready at 100 ms
        #expect(driver.handle(.arrived(owner: ":1.12"), at: at(900)).isEmpty)
        #expect(driver.tickUntilReport(from: at(1_000), until: at(10_000)) == at(2_000))
        #expect(driver.asked == [":1.11", ":1.12"])
    }

    @Test("a flood unsubscribes, polls every 250 ms for 1 s, subscribes again and reads once more")
    func floodCooldown() {
        var driver = Driver()
        #expect(
            driver.handle(.flooded, at: at(0)) == [.unsubscribeHints, .startTimer(.cooldown, every: .milliseconds(250))]
        )
        #expect(driver.policy.coolingDown)
        #expect(driver.handle(.flooded, at: at(100)).isEmpty)  // one cooldown at a time
        for poll in [250, 500, 750] { #expect(driver.handle(.tick(.cooldown), at: at(poll)) == [.report(.any)]) }
        #expect(
            driver.handle(.tick(.cooldown), at: at(1_000)) == [.report(.any), .stopTimer(.cooldown), .resubscribeHints])
        #expect(!driver.policy.coolingDown)
        #expect(driver.handle(.resubscribed, at: at(1_010)) == [.report(.any)])
    }

    /// The length of each cooldown of floods that start `gap` after the last one ended.
    func cooldowns(floods: Int, gap: Duration) -> [Duration] {
        var driver = Driver()
        var now = at(0)
        var lengths: [Duration] = []
        for _ in 0..<floods {
            _ = driver.handle(.flooded, at: now)
            let began = now
            while driver.policy.coolingDown {
                now += .milliseconds(250)
                _ = driver.handle(.tick(.cooldown), at: now)
            }
            lengths.append(now - began)
            now += gap
        }
        return lengths
    }

    @Test("floods that follow each other double the cooldown up to 30 s; after a quiet spell it is 1 s again")
    func floodBackoff() {
        #expect(cooldowns(floods: 8, gap: .milliseconds(100)).map { $0 / .seconds(1) } == [1, 2, 4, 8, 16, 30, 30, 30])
        // A flood 2 s (twice the last cooldown) after the last ended starts over.
        #expect(cooldowns(floods: 3, gap: .seconds(2)).map { $0 / .seconds(1) } == [1, 1, 1])
        #expect(cooldowns(floods: 3, gap: .milliseconds(1_900)).map { $0 / .seconds(1) } == [1, 2, 4])
    }

    @Test("a cooldown's polls while a provider starts are held back into its one report")
    func floodDuringArrival() {
        var driver = Driver(collectionFrom: at(0))
        _ = driver.handle(.arrived(owner: ":1.13"), at: at(0))
        _ = driver.handle(.flooded, at: at(10))
        #expect(driver.handle(.tick(.arrival), at: at(100)).isEmpty)  // ready at 100 ms
        #expect(driver.handle(.tick(.cooldown), at: at(260)).isEmpty)
        #expect(driver.handle(.tick(.cooldown), at: at(1_010)) == [.stopTimer(.cooldown), .resubscribeHints])
        #expect(driver.handle(.resubscribed, at: at(1_020)).isEmpty)
        #expect(driver.tickUntilReport(from: at(1_100), until: at(10_000)) == at(1_600))
    }
}
