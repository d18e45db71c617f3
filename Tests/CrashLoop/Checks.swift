/// What the crash loop requires of a record after a kill, and what a store's loop found.
enum Checks {
    /// After a kill, every record must hold exactly its old bytes or exactly its migrated bytes;
    /// anything else, or no record, counts as lost.
    /// - Returns: how many records no longer hold their old bytes (a missing one included), and
    ///   what is wrong with each lost record.
    static func afterKill(
        now: [String: [UInt8]], records: [SeedRecord], migrated: [String: [UInt8]]
    ) -> (changed: Int, problems: [String]) {
        var changed = 0
        var problems: [String] = []
        for record in records {
            let value = now[record.key]
            if value != record.bytes { changed += 1 }
            if value == nil {
                problems.append("\(record.key) is gone")
            } else if value != record.bytes && value != migrated[record.key] {
                problems.append("\(record.key) is neither its old nor its migrated bytes")
            }
        }
        return (changed, problems)
    }
}

/// What one store's loop did, and whether it failed.
struct Outcome: Sendable {
    /// Its part of the summary line: `STORE K runs/KILLS kills/CHECKED records/LOST lost`.
    var summary: String
    /// Whether a record was lost or a temporary file survived.
    var failed: Bool

    init(store: String, runs: Int, kills: Int, checked: Int, lost: Int, stale: Int) {
        summary = "\(store) \(runs) runs/\(kills) kills/\(checked) records/\(lost) lost"
        failed = lost != 0 || stale != 0
    }
}
