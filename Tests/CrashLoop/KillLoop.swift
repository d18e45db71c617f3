import Foundation

/// The kills of one store: K times, reseed, start `migrate run`, SIGKILL it after a random delay,
/// check every record, then run to completion and look for temporary files.
struct KillLoop {
    var store: RecordStore
    let runs: Int

    /// Runs the loop; prints what it found (one line per problem on standard error, a line
    /// before and one after on standard output).
    mutating func run(random: inout SplitMix64) throws -> Outcome {
        let name = store.kind.rawValue
        try store.seed()
        try store.saveTemplate()
        // The reference: a whole run, its duration, and every record's migrated bytes; then a
        // run with nothing to write: the start-up time before the first write, roughly.
        let duration = try store.migrate.timed(store.runArguments)
        let startup = try store.migrate.timed(store.runArguments)
        let reference: [String: [UInt8]]
        do {
            reference = try store.read()
        } catch let malformed as SuiteValues.Malformed {
            throw Abort(message: "\(name): the reference run left a suite that cannot be read: \(malformed)")
        }
        var migrated = 0
        for record in store.records {
            guard let value = reference[record.key] else {
                throw Abort(message: "\(name): the reference run lost \(record.key)")
            }
            if value != record.bytes { migrated += 1 }
        }
        // Kills land from a little before the first write to a little after the last.
        let low = startup * 4 / 5
        let span = max(duration * 11 / 10 - startup * 4 / 5, 1)
        Console.out(
            "crash-loop: \(name): \(store.records.count) records (\(migrated) change when migrated); "
                + "a run takes \(duration) ms, \(startup) ms with nothing to write")

        var (kills, midway, checked, lost, left, stale, byWrite) = (0, 0, 0, 0, 0, 0, 0)
        for run in stride(from: 1, through: runs, by: 1) {
            let problem = { (what: String) in Console.error("crash-loop: \(name) run \(run): \(what)") }
            try store.reseed()
            // Odd runs: the delay counts from the start. Even runs on a directory store: from
            // the first write (the directory's mtime moves), so that kills land among the writes.
            // In microseconds: 0–5 ms after the first write (the writes of a few dozen records
            // take a few ms on a disk), or a point from before the first write to after the last.
            let watched = run % 2 == 0 ? store.directory : nil
            let delay = watched != nil ? random.below(5000) : (low + random.below(span)) * 1000
            if try Killer.kill(store.migrate.command(store.runArguments), afterMicroseconds: delay, watching: watched) {
                kills += 1
            }
            // After the kill: every record is its old bytes or its migrated bytes.
            var now: [String: [UInt8]] = [:]
            do {
                now = try store.read()
            } catch let malformed as SuiteValues.Malformed {
                problem("the suite cannot be read: \(malformed)")
            }
            let (changed, problems) = Checks.afterKill(now: now, records: store.records, migrated: reference)
            checked += store.records.count
            lost += problems.count
            for what in problems { problem(what) }
            // A kill between the first and the last write: some records migrated, some not.
            if changed > 0 && changed < migrated { midway += 1 }
            left += store.leftovers()
            // The next open finishes the job and cleans what the kill left.
            try store.runToEnd()
            if try !store.isAllMigrated(reference: reference) {
                lost += 1
                problem("not every record is migrated after a completed run")
            }
            if store.leftovers() != 0 && store.kind == .defaults {
                // A defaults suite cleans its leftovers when it is next written, and a run with
                // nothing to migrate writes nothing (a kill after the rename, before the old
                // document's rollback link was removed, leaves that link). Counted, then one
                // write must clean it.
                byWrite += 1
                try store.probeWrite()
            }
            if store.leftovers() != 0 {
                stale += 1
                problem("temporary files survive the next run (and write)")
            }
        }
        Console.out(
            "crash-loop: \(name): \(runs) runs, \(kills) kills (\(midway) between the first and last write), "
                + "\(checked) records checked, \(lost) lost, \(left) temporary files left by kills "
                + "(\(byWrite) runs' cleaned only by the next write), \(stale) survived")
        return Outcome(store: name, runs: runs, kills: kills, checked: checked, lost: lost, stale: stale)
    }
}

/// Starts a command and SIGKILLs it at a chosen moment.
enum Killer {
    /// Starts `command` (its output to /dev/null) and SIGKILLs it after `delay` microseconds —
    /// counted from its first write when `directory` is given (the directory's modification time
    /// moves) — unless it ended first.
    /// - Returns: whether it was killed (false: it finished first).
    static func kill(_ command: [String], afterMicroseconds delay: Int, watching directory: String?) throws -> Bool {
        let before = try directory.map(Files.modificationTime)
        let child = try Child.spawn(command, stdout: .null, stderr: .null)
        if let directory, let before {
            while child.isRunning, (try? Files.modificationTime(directory))?.equals(before) ?? false {}
        }
        sleep(microseconds: delay)
        let killed = child.isRunning
        if killed { child.kill() }
        child.wait()
        return killed
    }

    private static func sleep(microseconds: Int) {
        var request = timespec(tv_sec: microseconds / 1_000_000, tv_nsec: microseconds % 1_000_000 * 1000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }
}
