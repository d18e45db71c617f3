import Foundation

/// A short, random pause between attempts that lost a race with another writer, longer after
/// each: spreads writers that collided so that each gets through.
package enum Backoff {
    /// Sleeps up to `attempt` × 200 µs (at most 5 ms), at random.
    package static func pause(after attempt: Int) {
        usleep(UInt32(microseconds(after: attempt)))
    }

    /// ``pause(after:)`` for a task: suspends instead of blocking its thread (a cancelled task
    /// goes on at once).
    package static func sleep(after attempt: Int) async {
        do {
            try await Task.sleep(for: .microseconds(microseconds(after: attempt)))
        } catch {
            // Cancelled: the caller's next attempt decides.
        }
    }

    private static func microseconds(after attempt: Int) -> Int {
        let ceiling = min(max(attempt, 1), 25) * 200
        return Int.random(in: 50...ceiling)
    }
}
