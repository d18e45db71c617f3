import Foundation
import Keepsake

// `keepsake-stress check`: every write the ledgers say reported success, counted against what
// the store holds at the end (after the writers exited and one final Migrator run).

/// What `check` prints: the counts and every difference found.
struct Verdict: Codable, Sendable {
    var store: String
    var processes: Int
    var tasks: Int
    var operations: Int
    /// Successful writes by operation: `save`, `update`, `seed`.
    var successful: [String: Int]
    /// Successful writes in all.
    var counted: Int
    /// Failed operations by `operation code`, timeouts included.
    var failed: [String: Int]
    /// Successful writes whose value the store does not hold at the end: an update's id missing
    /// from the counter, a key holding an older save than its writer's last successful one, a
    /// seeded or staged record missing or changed. A read that missed a write is a problem, not
    /// counted here.
    var lost: Int
    var reads: Int
    var migratorRuns: Int
    /// StoreTransfer moves run, and the records they moved.
    var moveRuns: Int
    var moved: Int
    /// Seeded V0 records a concurrent Migrator run reported migrated.
    var migratedByRuns: Int
    /// Seconds the slowest process took.
    var seconds: Double
    /// Every difference, in words: empty when the store holds exactly what the ledgers say.
    var problems: [String]
    /// The one line the tests print.
    var summary: String
}

/// Failures that may or may not have applied: a call past its deadline.
let ambiguousCodes: Set<String> = ["timeout"]
/// Failures a read may report without anything being wrong with what is stored.
let tolerableReadCodes: Set<String> = ["timeout", "lockTimeout"]

/// A stored record: its envelope's schema and version and its data, or why it is not one.
struct StoredRecord {
    var schema: String
    var version: Int
    var data: [String: Any]

    init(_ text: String) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let schema = object["schema"] as? String, let version = object["version"] as? Int,
            let data = object["data"] as? [String: Any], object.count == 3
        else { throw CheckError("not an envelope: \(text.prefix(200))") }
        self.schema = schema
        self.version = version
        self.data = data
    }

    /// A Tally at version 1: owner, count, label.
    func tally() throws -> (owner: String, count: Int, label: String) {
        guard schema == "Tally", version == 1, let owner = data["owner"] as? String,
            let count = data["count"] as? Int, let label = data["label"] as? String, data.count == 3
        else { throw CheckError("not a Tally V1 record: schema \(schema), version \(version), data \(data)") }
        return (owner, count, label)
    }

    /// A Counter at version 0: its ids.
    func counter() throws -> [String] {
        guard schema == "Counter", version == 0, let ids = data["ids"] as? [String], data.count == 1 else {
            throw CheckError("not a Counter V0 record: schema \(schema), version \(version)")
        }
        return ids
    }
}

struct CheckError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An operation of one ledger, with its process.
struct Operation {
    var process: Int
    var entry: Entry
    var writer: String { "p\(process).t\(entry.task)" }
    var ambiguous: Bool { !entry.ok && ambiguousCodes.contains(entry.code ?? "") }
    var definitelyFailed: Bool { !entry.ok && !ambiguous }
}

func check(
    ledgers: [Ledger], records: [String: String], moves: (from: [String: String], to: [String: String])?,
    store: String
) -> Verdict {
    var problems: [String] = []
    var lost = 0
    let operations = ledgers.flatMap { ledger in ledger.entries.map { Operation(process: ledger.process, entry: $0) } }
    func ops(_ op: String) -> [Operation] { operations.filter { $0.entry.op == op } }
    func record(_ key: String) -> StoredRecord? {
        guard let text = records[key] else { return nil }
        do {
            return try StoredRecord(text)
        } catch {
            problems.append("key '\(key)' holds an unparseable record: \(error)")
            return nil
        }
    }

    // Updates: every successful update's id is in the counter exactly once; a failed one's
    // (other than a timeout, which may have applied) is absent; no id comes from nowhere.
    let updates = ops("update")
    let updateIDs = Set(updates.compactMap(\.entry.id))
    let finalIDs: [String]
    if let counter = record(RecordKeys.counter.name) {
        do {
            finalIDs = try counter.counter()
        } catch {
            problems.append("key 'counter': \(error)")
            finalIDs = []
        }
    } else {
        finalIDs = []
    }
    var occurrences: [String: Int] = [:]
    for id in finalIDs { occurrences[id, default: 0] += 1 }
    for update in updates {
        let id = update.entry.id ?? ""
        let count = occurrences[id] ?? 0
        if update.entry.ok {
            if count != 1 {
                problems.append("update \(id) reported success; its id is in the final counter \(count) times")
                if count == 0 { lost += 1 }
            }
            if update.entry.returnedOwnID != true {
                problems.append("update \(id) reported success but the value it returned lacks its id")
            }
        } else if update.ambiguous {
            if count > 1 { problems.append("update \(id) timed out; its id is in the counter \(count) times") }
        } else if count != 0 {
            problems.append(
                "update \(id) failed (\(update.entry.code ?? "?")) yet its id is in the final counter \(count) times")
        }
    }
    for id in occurrences.keys where !updateIDs.contains(id) {
        problems.append("the final counter holds \(id), which no update wrote")
    }

    // Saves to a task-private key: the final value is that task's last successful save (or a
    // later save that timed out).
    let saves = ops("save")
    let writers = Set(saves.map(\.writer))
    for writer in writers.sorted() {
        let mine = saves.filter { $0.writer == writer && $0.entry.key != RecordKeys.shared.name }
        guard let key = mine.first?.entry.key else { continue }
        let (lastOK, allowed) = lastSuccessful(mine)
        guard let stored = record(key) else {
            if let lastOK {
                problems.append("key '\(key)': \(lastOK.entry.id ?? "?") reported success, the key is absent")
                lost += 1
            }
            continue
        }
        do {
            let tally = try stored.tally()
            if !allowed.contains(tally.owner) {
                problems.append(
                    """
                    key '\(key)': the last successful save was \(lastOK?.entry.id ?? "none"), \
                    the store holds \(tally.owner)
                    """)
                if lastOK != nil { lost += 1 }
            } else if tally.label != "saved" || "\(writer).s\(tally.count)" != tally.owner {
                problems.append(
                    "key '\(key)': \(tally.owner) is stored with count \(tally.count), label \(tally.label)")
                lost += 1
            }
        } catch {
            problems.append("key '\(key)': \(error)")
            lost += 1
        }
    }

    // The shared key: one of the successful saves, and the last successful save of its writer.
    let sharedSaves = saves.filter { $0.entry.key == RecordKeys.shared.name }
    if let stored = record(RecordKeys.shared.name) {
        do {
            let tally = try stored.tally()
            guard let saved = sharedSaves.first(where: { $0.entry.id == tally.owner }) else {
                throw CheckError("it holds \(tally.owner), which no save wrote")
            }
            if saved.definitelyFailed {
                throw CheckError("it holds \(tally.owner), whose save failed (\(saved.entry.code ?? "?"))")
            }
            let later = sharedSaves.filter {
                $0.writer == saved.writer && $0.entry.seq > saved.entry.seq && $0.entry.ok
            }
            if let later = later.first {
                lost += 1
                throw CheckError(
                    """
                    it holds \(tally.owner), but the same writer's later save \(later.entry.id ?? "?") also \
                    reported success: that save was undone
                    """)
            }
            if tally.label != "saved" || "\(saved.writer).s\(tally.count)" != tally.owner {
                lost += 1
                throw CheckError("\(tally.owner) is stored with count \(tally.count), label \(tally.label)")
            }
        } catch {
            problems.append("key 'shared': \(error)")
        }
    } else if sharedSaves.contains(where: \.entry.ok) {
        problems.append("key 'shared': saves reported success, the key is absent")
        lost += 1
    }

    // Seeded V0 records: each is at the latest version with its owner and count intact; a
    // failed seed wrote nothing.
    let seeds = ops("seed")
    for seed in seeds {
        let key = seed.entry.key
        let id = seed.entry.id ?? ""
        if seed.definitelyFailed {
            if records[key] != nil {
                problems.append("seed \(id) failed (\(seed.entry.code ?? "?")) yet '\(key)' exists")
            }
            continue
        }
        guard let stored = record(key) else {
            if seed.entry.ok {
                problems.append("seed \(id) reported success, '\(key)' is absent")
                lost += 1
            }
            continue
        }
        do {
            let tally = try stored.tally()
            if tally.owner != id || tally.count != seed.entry.seq || tally.label != "migrated-\(seed.entry.seq)" {
                throw CheckError(
                    """
                    expected owner \(id), count \(seed.entry.seq), label migrated-\(seed.entry.seq); \
                    stored \(tally.owner), \(tally.count), \(tally.label)
                    """)
            }
        } catch {
            problems.append("seeded key '\(key)': \(error)")
            lost += 1
        }
    }

    // Nothing else is stored.
    let privateKeys = Set(saves.map(\.entry.key))
    let seedKeys = Set(seeds.map(\.entry.key))
    for key in records.keys.sorted()
    where key != RecordKeys.counter.name && !privateKeys.contains(key) && !seedKeys.contains(key) {
        problems.append("the store holds '\(key)', which no operation wrote")
    }

    // Reads: never a torn or unparseable record, and only values some writer stored.
    let reads = ops("read")
    let sharedIDs = byID(sharedSaves)
    let updatesByID = byID(updates)
    for read in reads {
        let entry = read.entry
        let what = "read of '\(entry.key)' by \(read.writer) at \(entry.seq)"
        guard entry.ok else {
            if !tolerableReadCodes.contains(entry.code ?? "") {
                problems.append("\(what) failed: \(entry.code ?? "?"): \(entry.message ?? "")")
            }
            continue
        }
        let observed = entry.observed ?? []
        if entry.key == RecordKeys.shared.name {
            for id in observed where sharedIDs[id].map({ $0.definitelyFailed }) ?? true {
                problems.append("\(what) saw \(id), which no successful save wrote")
            }
        } else if entry.key == RecordKeys.counter.name {
            if Set(observed).count != observed.count { problems.append("\(what) saw an id twice") }
            for id in observed where updatesByID[id].map({ $0.definitelyFailed }) ?? true {
                problems.append("\(what) saw \(id), which no successful update wrote")
            }
            let seen = Set(observed)
            for update in updates
            where update.writer == read.writer && update.entry.ok && update.entry.seq < entry.seq
                && !seen.contains(update.entry.id ?? "")
            {
                problems.append(
                    "\(what) did not see \(update.entry.id ?? "?"), which the same task's update stored before")
            }
        } else if entry.key.hasPrefix("legacy.") {
            let seq = seeds.first { $0.entry.key == entry.key }?.entry.seq ?? -1
            if observed != [entry.id ?? "", String(seq), "migrated-\(seq)"] {
                problems.append("\(what) saw \(observed), not the seeded record migrated")
            }
        } else {
            // The task's own key: its last successful save before the read (or a timed-out one).
            let before = saves.filter {
                $0.writer == read.writer && $0.entry.key == entry.key && $0.entry.seq < entry.seq
            }
            let (lastOK, allowed) = lastSuccessful(before)
            if lastOK != nil || !allowed.isEmpty, !(observed.count == 1 && allowed.contains(observed[0])) {
                problems.append("\(what) saw \(observed); its last successful save was \(lastOK?.entry.id ?? "none")")
            }
        }
    }

    // Migrator runs: each read every record it met; a run may wait out a busy store.
    let runs = ops("migrate")
    for run in runs {
        for unreadable in run.entry.unreadable ?? [] {
            problems.append("Migrator run by \(run.writer) at \(run.entry.seq) could not read \(unreadable)")
        }
        if !run.entry.ok, !tolerableReadCodes.contains(run.entry.code ?? "") {
            problems.append(
                "Migrator run by \(run.writer) at \(run.entry.seq) failed: \(run.entry.code ?? "?"): \(run.entry.message ?? "")"
            )
        }
    }
    let migrated = Set(runs.flatMap { $0.entry.migrated ?? [] })
    for key in migrated where !seedKeys.contains(key) {
        problems.append("a Migrator run migrated '\(key)', which was never an older record")
    }

    // Moves: every staged record is in exactly one of the two stores, intact; each was moved by
    // at most one move.
    let stages = ops("stage")
    let moveRuns = ops("move")
    var movedOnce: [String: Int] = [:]
    var inOnePlace = 0
    for run in moveRuns {
        for key in run.entry.migrated ?? [] { movedOnce[key, default: 0] += 1 }
    }
    if let moves {
        let placement = checkMoves(stages: stages, movedCounts: movedOnce, moves: moves)
        problems += placement.problems
        lost += placement.lost
        inOnePlace = placement.inOnePlace
    }

    var successful: [String: Int] = [:]
    var failed: [String: Int] = [:]
    for operation in saves + updates + seeds + stages {
        if operation.entry.ok {
            successful[operation.entry.op, default: 0] += 1
        } else {
            failed["\(operation.entry.op) \(operation.entry.code ?? "?")", default: 0] += 1
        }
    }
    for operation in reads + runs + moveRuns where !operation.entry.ok {
        failed["\(operation.entry.op) \(operation.entry.code ?? "?")", default: 0] += 1
    }
    let counted = successful.values.reduce(0, +)
    let processes = ledgers.count
    let tasks = ledgers.first?.tasks ?? 0
    let perTask = ledgers.first?.operations ?? 0
    let failures = failed.values.reduce(0, +)
    let movesSummary =
        moves == nil
        ? ""
        : """
        ; \(successful["stage"] ?? 0) records staged and \(movedOnce.count) moved by \(moveRuns.count) concurrent \
        StoreTransfer moves, \(inOnePlace) of them in exactly one store
        """
    let summary = """
        many writers, \(store.prefix { $0 != ":" }): \(processes) processes × \(tasks) tasks × \(perTask) operations: \
        \(counted) successful writes counted (\(successful["save"] ?? 0) saves, \(successful["update"] ?? 0) updates, \
        \(successful["seed"] ?? 0) V0 records seeded, \(migrated.count) of them migrated by \(runs.count) concurrent \
        Migrator runs)\(movesSummary), \(reads.count) reads, \(failures) failed operations, lost \(lost), \
        \(problems.count) differences
        """
    return Verdict(
        store: store, processes: processes, tasks: tasks, operations: perTask, successful: successful,
        counted: counted, failed: failed, lost: lost, reads: reads.count, migratorRuns: runs.count,
        moveRuns: moveRuns.count, moved: movedOnce.count,
        migratedByRuns: migrated.count, seconds: ledgers.map(\.seconds).max() ?? 0, problems: problems,
        summary: summary)
}

/// The last save of `saves` (one writer's, to one key) that reported success, and the ids the key
/// may hold after them: that save's, and those of later saves that timed out.
func lastSuccessful(_ saves: [Operation]) -> (last: Operation?, allowed: Set<String>) {
    let last = saves.filter { $0.entry.ok }.max { $0.entry.seq < $1.entry.seq }
    var allowed: Set<String> = []
    if let id = last?.entry.id { allowed.insert(id) }
    let after = last?.entry.seq ?? -1
    for save in saves where save.ambiguous && save.entry.seq > after {
        if let id = save.entry.id { allowed.insert(id) }
    }
    return (last, allowed)
}

/// Operations by their id.
func byID(_ operations: [Operation]) -> [String: Operation] {
    var result: [String: Operation] = [:]
    for operation in operations {
        if let id = operation.entry.id, result[id] == nil { result[id] = operation }
    }
    return result
}

/// Where the staged records ended: each in exactly one of the two stores, as staged; each moved
/// by at most one move, and a moved one in the destination. The problems, how many staged
/// records that reported success are missing or damaged, and how many are in exactly one store.
func checkMoves(
    stages: [Operation], movedCounts: [String: Int], moves: (from: [String: String], to: [String: String])
) -> (problems: [String], lost: Int, inOnePlace: Int) {
    var problems: [String] = []
    var lost = 0
    var inOnePlace = 0
    for stage in stages {
        let key = stage.entry.key
        let places = [moves.from[key], moves.to[key]].compactMap { $0 }
        if stage.definitelyFailed {
            if !places.isEmpty {
                problems.append("staging \(key) failed (\(stage.entry.code ?? "?")) yet it is stored")
            }
            continue
        }
        guard stage.entry.ok || !places.isEmpty else { continue }
        switch places.count {
        case 0:
            problems.append("\(key) was staged (success reported) and is in neither store")
            lost += 1
        case 2:
            problems.append("\(key) is in both stores after the moves")
        default:
            inOnePlace += 1
            do {
                let tally = try StoredRecord(places[0]).tally()
                if tally.owner != stage.entry.id || tally.count != stage.entry.seq || tally.label != "staged" {
                    throw CheckError("stored \(tally.owner), \(tally.count), \(tally.label)")
                }
            } catch {
                problems.append("\(key) is not the record staged: \(error)")
                lost += 1
            }
        }
        if (movedCounts[key] ?? 0) > 0, moves.to[key] == nil {
            problems.append("a move reported \(key) moved; the destination does not hold it")
        }
    }
    for (key, count) in movedCounts where count > 1 {
        problems.append("\(key) was reported moved by \(count) moves: moves from one store are not exclusive")
    }
    let staged = Set(stages.map(\.entry.key))
    for key in Set(moves.from.keys).union(moves.to.keys).sorted() where !staged.contains(key) {
        problems.append("the move stores hold '\(key)', which no operation staged")
    }
    return (problems, lost, inOnePlace)
}
