import Foundation

/// The crash loop: each store named on the command line under `kill -9`, then the summary.
enum CrashLoop {
    /// Runs the command line: the exit status (0: every store passed; 1: a record was lost or
    /// torn, or a temporary file survived; 2: a usage error; a `migrate` command the loop needs
    /// that fails ends it with that command's status, as `set -e` ended the script; 128 plus
    /// the signal for SIGINT, SIGTERM, SIGHUP).
    static func main(_ arguments: [String]) -> Int32 {
        let options: Options
        switch Options.parse(arguments, environment: ProcessInfo.processInfo.environment) {
        case .help:
            Console.out(Options.usage)
            return 0
        case .usageError(let message):
            Console.error("crash-loop: \(message)")
            return 2
        case .run(let parsed):
            options = parsed
        }
        Cleanup.shared.handleSignals()
        defer { Cleanup.shared.run() }
        do {
            return try run(options)
        } catch let abort as Abort {
            if let message = abort.message { Console.error("crash-loop: \(message)") }
            return abort.status
        } catch {
            Console.error("crash-loop: \(error)")
            return 1
        }
    }

    private static func run(_ options: Options) throws -> Int32 {
        try enterRepository()
        var random = SplitMix64(seed: options.seed)
        let migrate = try Migrate.resolve(options.binary)
        let scratch = try makeScratch()
        Cleanup.shared.removeAtEnd(scratch)
        let records = try SeedRecord.make(count: options.records)
        let service = "keepsake-crash-loop-\(getpid())"

        var failures = 0
        var summary: [String] = []
        for kind in options.stores {
            let outcome: Outcome
            switch kind {
            case .rekey:
                let loop = RekeyLoop(records: records, migrate: migrate, scratch: scratch, runs: options.runs)
                outcome = try loop.run(random: &random)
            case .datakey:
                let loop = DataKeyLoop(records: records, migrate: migrate, scratch: scratch, runs: options.runs)
                outcome = try loop.run(random: &random)
            case .defaults, .file, .keyring:
                let storeKind = RecordStore.Kind(rawValue: kind.rawValue)!
                // In the keyring every run puts the records again through D-Bus: 6 at most.
                let seeded = storeKind == .keyring ? Array(records.prefix(6)) : records
                let store = RecordStore(
                    kind: storeKind, records: seeded, migrate: migrate, scratch: scratch, service: service)
                if storeKind == .keyring { Cleanup.shared.deleteAtEnd(store.keys, from: store.uri, with: migrate) }
                var loop = KillLoop(store: store, runs: options.runs)
                outcome = try loop.run(random: &random)
                Cleanup.shared.deleteKeyringRecords()
            }
            summary.append(outcome.summary)
            if outcome.failed { failures += 1 }
        }
        Console.out(
            "crash-loop summary (seed \(options.seed)): \(summary.joined(separator: ", ")); \(failures) store(s) failing"
        )
        return failures == 0 ? 0 : 1
    }

    /// Makes the repository root the current directory: it is already when run by
    /// scripts/crash-loop; else the first directory above the executable that holds the fixtures.
    private static func enterRepository() throws {
        let manager = FileManager.default
        if manager.fileExists(atPath: SeedRecord.fixtures) { return }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        while directory.path != "/" {
            if manager.fileExists(atPath: directory.appendingPathComponent(SeedRecord.fixtures).path) {
                guard manager.changeCurrentDirectoryPath(directory.path) else { break }
                return
            }
            directory = directory.deletingLastPathComponent()
        }
        throw Abort(
            message: "run it from the repository root (scripts/crash-loop does): no \(SeedRecord.fixtures) here")
    }

    /// A new scratch directory under TMPDIR (default /tmp).
    private static func makeScratch() throws -> String {
        var base = ProcessInfo.processInfo.environment["TMPDIR"] ?? ""
        if base.isEmpty { base = "/tmp" }
        var template = Array("\(base)/keepsake-crash-loop.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Abort(message: "cannot make a scratch directory under \(base): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}
