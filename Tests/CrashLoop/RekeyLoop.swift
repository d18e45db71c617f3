/// The kills of `migrate rekey` of a file store: 8 records are put under one key file, then K
/// times the store is put back under it and `migrate rekey --new-key-file` is SIGKILLed at a
/// random moment of its run. The store must then open with exactly one of the two key files,
/// every record must read its exact bytes, and no temporary file may be left beside the
/// records, the header or either key file.
struct RekeyLoop {
    let records: [SeedRecord]
    let migrate: Migrate
    let scratch: String
    let runs: Int

    init(records: [SeedRecord], migrate: Migrate, scratch: String, runs: Int) {
        self.records = Array(records.prefix(8))
        self.migrate = migrate
        self.scratch = scratch
        self.runs = runs
    }

    private var store: String { "\(scratch)/rstore" }
    private var template: String { "\(scratch)/rtemplate" }
    private var keyFiles: String { "\(scratch)/rkeys" }
    private var oldKey: String { "\(keyFiles)/old.key" }
    private var newKey: String { "\(keyFiles)/new.key" }
    private var uri: String { "file:\(store)" }

    /// Runs the loop; prints what it found, as `KillLoop.run` does.
    func run(random: inout SplitMix64) throws -> Outcome {
        for path in [store, keyFiles, template] { Files.remove(path) }
        try Files.makeDirectory(keyFiles)
        try migrate.must(["init", "--store", uri, "--key-file", oldKey])
        for record in records {
            try migrate.must(["put", record.key, "--store", uri, "--key-file", oldKey], stdin: .file(record.fixture))
        }
        try Files.copyTree(store, to: template)
        let rekey = ["rekey", "--store", uri, "--key-file", oldKey, "--new-key-file", newKey]
        let duration = try migrate.timed(rekey)
        try restore()
        let startup = try migrate.timed(["get", records[0].key, "--store", uri, "--key-file", oldKey])
        let low = startup * 4 / 5
        let span = max(duration * 11 / 10 - startup * 4 / 5, 1)
        Console.out(
            "crash-loop: rekey: \(records.count) records; a rekey takes \(duration) ms, an open and a read \(startup) ms"
        )

        var (kills, withOld, withNew, checked, lost, stale) = (0, 0, 0, 0, 0, 0)
        for run in stride(from: 1, through: runs, by: 1) {
            let problem = { (what: String) in Console.error("crash-loop: rekey run \(run): \(what)") }
            try restore()
            let delay = (low + random.below(span)) * 1000
            if try Killer.kill(migrate.command(rekey), afterMicroseconds: delay, watching: nil) { kills += 1 }
            // Exactly one of the two key files opens the store.
            var opening: [String] = []
            if try opens(with: oldKey) {
                opening.append(oldKey)
                withOld += 1
            }
            if Files.exists(newKey), try opens(with: newKey) {
                opening.append(newKey)
                withNew += 1
            }
            guard opening.count == 1 else {
                lost += records.count
                problem("\(opening.count) of the two key files open the store")
                continue
            }
            let value = "\(scratch)/rvalue"
            for record in records {
                checked += 1
                let arguments = ["get", record.key, "--store", uri, "--key-file", opening[0]]
                if try !migrate.succeeds(arguments, stdout: .file(value)) || Files.bytes(value) != record.bytes {
                    lost += 1
                    problem("\(record.key) does not read its exact bytes")
                }
            }
            let temporary = { (name: String) in name.contains(".tmp-") }
            if Files.count(in: store, matching: temporary) + Files.count(in: keyFiles, matching: temporary) != 0 {
                stale += 1
                problem("temporary files survive the next open")
            }
        }
        Console.out(
            "crash-loop: rekey: \(runs) runs, \(kills) kills, store opened with the old key \(withOld) times "
                + "and with the new one \(withNew), \(checked) records checked, \(lost) lost, "
                + "\(stale) runs with temporary files left")
        return Outcome(store: "rekey", runs: runs, kills: kills, checked: checked, lost: lost, stale: stale)
    }

    /// The store as seeded, under the old key only.
    private func restore() throws {
        Files.remove(store)
        Files.remove(newKey)
        try Files.copyTree(template, to: store)
    }

    /// Whether the store opens with the key file (its first record reads).
    private func opens(with keyFile: String) throws -> Bool {
        try migrate.succeeds(["get", records[0].key, "--store", uri, "--key-file", keyFile])
    }
}
