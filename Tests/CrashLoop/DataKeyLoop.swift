/// The kills of `migrate rekey --data-key` of a file store: N records are put under one key file
/// (format 1, one data key), then K times the store is put back as seeded and the rotation, one
/// record per batch, is SIGKILLed at a random moment of its run. Every record must then read its
/// exact bytes (whether its file is under the old data key or the new one); the rotation run
/// again must resume and finish, leaving a header with one data key and every record file sealed
/// under it, every record still exact, and no temporary file beside the records.
struct DataKeyLoop {
    let records: [SeedRecord]
    let migrate: Migrate
    let scratch: String
    let runs: Int

    private var store: String { "\(scratch)/dstore" }
    private var template: String { "\(scratch)/dtemplate" }
    private var keyFile: String { "\(scratch)/dstore.key" }
    private var uri: String { "file:\(store)" }
    private var header: String { "\(store)/keepsake.header" }

    /// Runs the loop; prints what it found, as `KillLoop.run` does.
    func run(random: inout SplitMix64) throws -> Outcome {
        for path in [store, template, keyFile] { Files.remove(path) }
        try migrate.must(["init", "--store", uri, "--key-file", keyFile])
        for record in records {
            try migrate.must(["put", record.key, "--store", uri, "--key-file", keyFile], stdin: .file(record.fixture))
        }
        try Files.copyTree(store, to: template)
        let rotate = ["rekey", "--store", uri, "--key-file", keyFile, "--data-key", "--batch-size", "1"]
        let duration = try migrate.timed(rotate)
        try restore()
        let startup = try migrate.timed(["get", records[0].key, "--store", uri, "--key-file", keyFile])
        let low = startup * 4 / 5
        let span = max(duration * 11 / 10 - low, 1)
        let work = max(duration - startup, 5)
        Console.out(
            "crash-loop: datakey: \(records.count) records; a rotation takes \(duration) ms, an open and a read \(startup) ms"
        )

        var (kills, midway, checked, lost, stale) = (0, 0, 0, 0, 0)
        for run in stride(from: 1, through: runs, by: 1) {
            let problem = { (what: String) in Console.error("crash-loop: datakey run \(run): \(what)") }
            try restore()
            // Odd runs: from the start; even runs: within the rotation's own work, counted from its
            // first write (the header with the new data key moves the directory's mtime).
            let fromStart = run % 2 == 1
            let delay = fromStart ? (low + random.below(span)) * 1000 : random.below(work * 1000)
            if try Killer.kill(migrate.command(rotate), afterMicroseconds: delay, watching: fromStart ? nil : store) {
                kills += 1
            }
            // 200 bytes: not begun (format 1); 208 + 36 × keys for format 2: 2 keys is midway.
            if Files.bytes(header)?.count == 208 + 2 * 36 { midway += 1 }
            lost += check(problem, after: "the kill", checked: &checked)
            guard try migrate.succeeds(rotate) else {
                lost += records.count
                problem("the rotation run again does not finish")
                continue
            }
            lost += check(problem, after: "the resumed rotation", checked: &checked)
            lost += checkOneKey(problem)
            if Files.count(in: store, matching: { $0.contains(".tmp-") }) != 0 {
                stale += 1
                problem("temporary files survive the resumed rotation")
            }
        }
        Console.out(
            "crash-loop: datakey: \(runs) runs, \(kills) kills, \(midway) left midway (two data keys), "
                + "\(checked) records checked, \(lost) lost, \(stale) runs with temporary files left")
        return Outcome(store: "datakey", runs: runs, kills: kills, checked: checked, lost: lost, stale: stale)
    }

    /// How many records do not read their exact bytes.
    private func check(_ problem: (String) -> Void, after what: String, checked: inout Int) -> Int {
        var lost = 0
        let value = "\(scratch)/dvalue"
        for record in records {
            checked += 1
            let arguments = ["get", record.key, "--store", uri, "--key-file", keyFile]
            let read = (try? migrate.succeeds(arguments, stdout: .file(value))) ?? false
            if !read || Files.bytes(value) != record.bytes {
                lost += 1
                problem("after \(what), \(record.key) does not read its exact bytes")
            }
        }
        return lost
    }

    /// 0 when the header holds one data key and every record file names its generation; else
    /// the number of records (the rotation did not end where it says it did).
    private func checkOneKey(_ problem: (String) -> Void) -> Int {
        guard let bytes = Files.bytes(header), bytes.count == 208 + 36 else {
            problem("the header does not hold exactly one data key after the rotation finished")
            return records.count
        }
        let primary = Array(bytes[64..<68])
        let files = Files.names(in: store).filter { $0.hasSuffix(".ksr") }
        let under = files.filter { name in
            guard let file = Files.bytes("\(store)/\(name)"), file.count > 14 else { return false }
            return file[8..<10] == [2, 0] && Array(file[10..<14]) == primary
        }
        guard files.count == records.count, under.count == files.count else {
            problem("\(files.count - under.count) of \(files.count) record files are not under the header's data key")
            return records.count
        }
        return 0
    }

    /// The store as seeded: format 1, one data key.
    private func restore() throws {
        Files.remove(store)
        try Files.copyTree(template, to: store)
    }
}
