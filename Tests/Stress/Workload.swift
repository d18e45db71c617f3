import Foundation
import Keepsake

/// One process's writers: `tasks` concurrent tasks on one vault, each running its operations in
/// turn and writing down what each did.
struct Workload: Sendable {
    let store: any RecordStore
    let vault: Vault
    let process: Int
    /// Where records are staged, and where moves take them.
    let moves: (from: any RecordStore, to: any RecordStore)?
    /// The attempts of each update (`Vault.update(_:attempts:_:)`).
    let updateAttempts: Int
    /// Whether every operation is an update of the counter, rather than the mix of ``task(_:operations:)``.
    let updatesOnly: Bool

    init(
        store: any RecordStore, moves: (from: any RecordStore, to: any RecordStore)?, process: Int,
        updateAttempts: Int = Vault.defaultUpdateAttempts, updatesOnly: Bool = false
    ) {
        self.store = store
        self.vault = Vault(store: store)
        self.process = process
        self.moves = moves
        self.updateAttempts = updateAttempts
        self.updatesOnly = updatesOnly
    }

    /// Runs every task to its end; their entries, task by task, each task's in order.
    func run(tasks: Int, operations: Int) async -> [Entry] {
        await withTaskGroup(of: (Int, [Entry]).self) { group in
            for task in 0..<tasks {
                group.addTask { (task, await self.task(task, operations: operations)) }
            }
            var byTask: [Int: [Entry]] = [:]
            for await (task, entries) in group { byTask[task] = entries }
            return byTask.keys.sorted().flatMap { byTask[$0] ?? [] }
        }
    }

    /// One task: operation `seq` is, in turn (shifted by the task's number so that tasks of a
    /// process do not all do the same at once), a save, an update, a read, and a seeded V0 record
    /// (and a record staged for moves) — or, for task 0, a Migrator run (and a move). With
    /// ``updatesOnly``, every operation is an update.
    private func task(_ task: Int, operations: Int) async -> [Entry] {
        var entries: [Entry] = []
        var seeded: (key: String, id: String, count: Int)?
        for seq in 0..<operations {
            let id = "p\(process).t\(task).s\(seq)"
            if updatesOnly {
                entries.append(await update(id, seq: seq, task: task))
                continue
            }
            switch (seq + task) % 4 {
            case 0:
                entries.append(await save(id, seq: seq, task: task, to: .shared))
                entries.append(await save(id, seq: seq, task: task, to: privateKey(process: process, task: task)))
            case 1:
                entries.append(await update(id, seq: seq, task: task))
            case 2:
                entries.append(await read(.shared, seq: seq, task: task))
                entries.append(await read(privateKey(process: process, task: task), seq: seq, task: task))
                entries.append(await readCounter(seq: seq, task: task))
                if let seeded { entries.append(await readSeeded(seeded, seq: seq, task: task)) }
            default:
                if task == 0 {
                    entries.append(await migrate(seq: seq, task: task))
                    if let moves { entries.append(await move(moves, seq: seq, task: task)) }
                } else {
                    let entry = await seed(id, seq: seq, task: task)
                    if entry.ok { seeded = (entry.key, id, seq) }
                    entries.append(entry)
                    if let moves { entries.append(await stage(id, in: moves.from, seq: seq, task: task)) }
                }
            }
        }
        return entries
    }

    // MARK: Operations

    private func save(_ id: String, seq: Int, task: Int, to key: RecordKey<TallyV1>) async -> Entry {
        var entry = Entry(op: "save", task: task, seq: seq, key: key.name, id: id, ok: true)
        do throws(KeepsakeError) {
            try await vault.save(TallyV1(owner: id, count: seq, label: "saved"), for: key)
        } catch {
            entry.failed(error)
        }
        return entry
    }

    /// Appends `id` to the shared counter: one read-modify-write call.
    private func update(_ id: String, seq: Int, task: Int) async -> Entry {
        var entry = Entry(op: "update", task: task, seq: seq, key: RecordKeys.counter.name, id: id, ok: true)
        do throws(KeepsakeError) {
            let stored = try await vault.update(.counter, attempts: updateAttempts) { counter in
                counter.ids.append(id)
            }
            entry.returnedOwnID = stored.ids.contains(id)
        } catch {
            entry.failed(error)
        }
        return entry
    }

    private func read(_ key: RecordKey<TallyV1>, seq: Int, task: Int) async -> Entry {
        var entry = Entry(op: "read", task: task, seq: seq, key: key.name, ok: true)
        do throws(KeepsakeError) {
            entry.observed = try await vault.load(key).map { [$0.value.owner] } ?? []
        } catch {
            entry.failed(error)
        }
        return entry
    }

    private func readCounter(seq: Int, task: Int) async -> Entry {
        var entry = Entry(op: "read", task: task, seq: seq, key: RecordKeys.counter.name, ok: true)
        do throws(KeepsakeError) {
            entry.observed = try await vault.value(.counter).ids
        } catch {
            entry.failed(error)
        }
        return entry
    }

    /// Reads back the last V0 record this task seeded: migrated in memory (and written back,
    /// unless a Migrator run or another load got there first).
    private func readSeeded(_ seeded: (key: String, id: String, count: Int), seq: Int, task: Int) async -> Entry {
        var entry = Entry(op: "read", task: task, seq: seq, key: seeded.key, id: seeded.id, ok: true)
        do throws(KeepsakeError) {
            entry.observed =
                try await vault.load(Tally.chain, forKey: seeded.key).map {
                    [$0.value.owner, String($0.value.count), $0.value.label]
                } ?? []
        } catch {
            entry.failed(error)
        }
        return entry
    }

    /// Stores a Tally V0 envelope, as an older release wrote it, under a new key.
    private func seed(_ id: String, seq: Int, task: Int) async -> Entry {
        let key = legacyKey(id)
        var entry = Entry(op: "seed", task: task, seq: seq, key: key, id: id, ok: true)
        let bytes = Data(#"{"data":{"count":\#(seq),"owner":"\#(id)"},"schema":"Tally","version":0}"#.utf8)
        let store = self.store
        do throws(KeepsakeError) {
            let result = try await Blocking.run { () throws(KeepsakeError) in
                try store.commit([StoreWrite(key: key, value: bytes, expectation: .unchanged(nil))])
            }
            switch result.first {
            case .applied?: break
            case .conflict?: entry.failed(code: "conflict", "the new key already held a value")
            case let .failed(error)?: entry.failed(error)
            case nil: entry.failed(code: "noResult", "the store returned no result for the write")
            }
        } catch {
            entry.failed(error)
        }
        return entry
    }

    /// Stores a Tally under a new key of the store moves take records from.
    private func stage(_ id: String, in source: any RecordStore, seq: Int, task: Int) async -> Entry {
        let key = movableKey(id)
        var entry = Entry(op: "stage", task: task, seq: seq, key: key, id: id, ok: true)
        do throws(KeepsakeError) {
            try await Vault(store: source).save(
                TallyV1(owner: id, count: seq, label: "staged"), in: Tally.chain, forKey: key)
        } catch {
            entry.failed(error)
        }
        return entry
    }

    /// What `migrate copy --move` does: every record of one store moved to the other, while
    /// other processes move from the same store and stage new records in it.
    private func move(_ moves: (from: any RecordStore, to: any RecordStore), seq: Int, task: Int) async -> Entry {
        var entry = Entry(op: "move", task: task, seq: seq, key: moves.from.uri, ok: true)
        let transfer = StoreTransfer(from: moves.from, to: moves.to, chains: stressChains, context: .live())
        do throws(KeepsakeError) {
            let report = try await Blocking.run { () throws(KeepsakeError) in
                try transfer.run(.all, options: .init(move: true, lockTimeout: .seconds(30)))
            }
            entry.migrated = report.records.filter { $0.state == .moved }.map(\.key)
            entry.unreadable = report.records.filter { $0.state != .moved }.map {
                "\($0.key): \($0.state.rawValue): \($0.error?.code.rawValue ?? "-"): \($0.error?.message ?? "")"
            }
            entry.observed = [report.outcome.rawValue]
            if !report.succeeded { entry.failed(code: "transfer \(report.outcome.rawValue)", "not every record moved") }
        } catch {
            entry.failed(error)
        }
        return entry
    }

    /// What `migrate run` does: one Migrator run over the whole store, beside the writers.
    private func migrate(seq: Int, task: Int) async -> Entry {
        var entry = Entry(op: "migrate", task: task, seq: seq, key: store.uri, ok: true)
        let migrator = Migrator(store: store, chains: stressChains, context: .live())
        do throws(KeepsakeError) {
            let reports = try await Blocking.run { () throws(KeepsakeError) in try migrator.run() }
            entry.migrated = reports.filter { $0.state == .migrated }.map(\.key)
            entry.unreadable = reports.filter { $0.state == .unreadable }.map {
                "\($0.key): \($0.error?.code.rawValue ?? "?"): \($0.error?.message ?? "")"
            }
        } catch {
            entry.failed(error)
        }
        return entry
    }
}

extension Entry {
    init(op: String, task: Int, seq: Int, key: String, id: String? = nil, ok: Bool) {
        self.init(
            op: op, task: task, seq: seq, key: key, id: id, ok: ok, code: nil, message: nil, observed: nil,
            migrated: nil, unreadable: nil, returnedOwnID: nil)
    }

    mutating func failed(_ error: KeepsakeError) {
        failed(code: error.code.rawValue, error.description)
    }

    mutating func failed(code: String, _ message: String) {
        ok = false
        self.code = code
        self.message = message
    }
}
