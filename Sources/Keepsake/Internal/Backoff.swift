import Foundation

/// A short, random pause between attempts that lost a race with another writer, longer after
/// each: spreads writers that collided so that each gets through.
package enum Backoff {
    /// Sleeps up to `attempt` × 200 µs (at most 5 ms), at random.
    package static func pause(after attempt: Int) {
        let ceiling = min(max(attempt, 1), 25) * 200
        usleep(UInt32.random(in: 50...UInt32(ceiling)))
    }
}
