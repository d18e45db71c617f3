import Foundation
import Keepsake
import Synchronization

/// A clock a test sets and moves: give ``now`` (as `{ clock.now }`) to `TrialGuard`'s `clock:`
/// or use ``context(deviceIdentity:)`` for a `MigrationContext`, then ``advance(days:)`` or
/// ``set(_:)`` it — forward past a trial's end, or back to see `clockMovedBack`.
public final class TestClock: Sendable {
    private let current: Mutex<Date>

    /// A clock reading `start`.
    public init(_ start: Date) {
        current = Mutex(start)
    }

    /// The time it reads.
    public var now: Date { current.withLock { $0 } }

    /// Reads `date` from now on.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }

    /// Moves it by `seconds` (negative: back).
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Moves it by `days` days of 24 hours (negative: back).
    public func advance(days: Double) {
        advance(by: days * 86_400)
    }

    /// This clock as a closure, for `TrialGuard(…, clock:)`.
    public var clock: @Sendable () -> Date {
        { [self] in now }
    }

    /// A migration context reading this clock, with `deviceIdentity` and random identifiers.
    public func context(deviceIdentity: String?) -> MigrationContext {
        MigrationContext(clock: clock, makeIdentifier: { UUID().uuidString }, deviceIdentity: deviceIdentity)
    }
}
