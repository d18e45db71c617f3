import Foundation
import Keepsake
import KeepsakeSodium
import Synchronization
import Testing

@testable import KeepsakeCLI

@Suite("migrate run: progress on a terminal only")
struct ProgressCLITests {
    @Test("the progress line says records done, the rate and the time left")
    func line() {
        #expect(
            ProgressDisplay.line("writing", done: 1200, total: 5000, elapsed: 4)
                == "writing 1200/5000 records, 300/s, about 13 s left")
        #expect(
            ProgressDisplay.line("writing", done: 5000, total: 5000, elapsed: 13.6)
                == "writing 5000/5000 records, 368/s, done in 14 s")
        #expect(
            ProgressDisplay.line("checking", done: 3, total: 100_000, elapsed: 2)
                == "checking 3/100000 records, 1.5/s, about 18 h 31 min left")
        #expect(ProgressDisplay.line("checking", done: 0, total: 10, elapsed: 5) == "checking 0/10 records")
        #expect(ProgressDisplay.line("checking", done: 4, total: 10, elapsed: 0.01) == "checking 4/10 records")
        #expect(ProgressDisplay.duration(59.2) == "1 min 0 s")
        #expect(ProgressDisplay.duration(125) == "2 min 5 s")
    }

    @Test("progress is shown only on a terminal, and never with --json or --quiet")
    func gating() {
        #expect(ProgressDisplay.isShown(standardErrorIsTerminal: true, json: false, quiet: false))
        #expect(!ProgressDisplay.isShown(standardErrorIsTerminal: false, json: false, quiet: false))
        #expect(!ProgressDisplay.isShown(standardErrorIsTerminal: true, json: true, quiet: false))
        #expect(!ProgressDisplay.isShown(standardErrorIsTerminal: true, json: false, quiet: true))
    }

    @Test("KEEPSAKE_PROGRESS_DELAY sets the delay to 0–60 seconds; anything else keeps a quarter of a second")
    func delayFromEnvironment() {
        #expect(ProgressMeter.delay(environment: [:]) == 0.25)
        #expect(ProgressMeter.delay(environment: ["KEEPSAKE_PROGRESS_DELAY": "0"]) == 0)
        #expect(ProgressMeter.delay(environment: ["KEEPSAKE_PROGRESS_DELAY": "2.5"]) == 2.5)
        for text in ["-1", "61", "inf", "nan", "soon", ""] {
            #expect(ProgressMeter.delay(environment: ["KEEPSAKE_PROGRESS_DELAY": text]) == 0.25, "\(text)")
        }
    }

    @Test("the meter draws nothing for a short phase, then at most ten times a second, and ends its line")
    func meter() {
        let written = Mutex<[String]>([])
        let meter = ProgressMeter { text in written.withLock { $0.append(text) } }
        let start = Date(timeIntervalSinceReferenceDate: 1000)
        meter.update("checking", done: 10, total: 10, now: start)  // a phase done at once: nothing
        meter.update("writing", done: 1, total: 100, now: start)
        meter.update("writing", done: 2, total: 100, now: start + 0.2)  // under a quarter second
        meter.update("writing", done: 30, total: 100, now: start + 0.3)
        meter.update("writing", done: 31, total: 100, now: start + 0.35)  // throttled
        meter.update("writing", done: 100, total: 100, now: start + 0.4)  // the end is always drawn
        meter.finish()
        #expect(
            written.withLock { $0 } == [
                "\r\u{1B}[Kwriting 30/100 records, 100/s, about 1 s left",
                "\r\u{1B}[Kwriting 100/100 records, 250/s, done in 1 s",
                "\n"
            ])
    }

    /// A file store of `count` Person records at version 0 (in envelopes, so that each is matched
    /// to its model whatever its key), seeded in-process, and its `--key-file`.
    func seededFileStore(_ count: Int) throws -> (store: String, key: [String]) {
        let directory = try Suite().directory
        let keyPath = directory + "/records.key"
        let store = try SodiumFileStore.create(directory: directory + "/records", key: .keyFile(path: keyPath))
        let writes = (0..<count).map { index in
            StoreWrite(
                key: String(format: "person-%05d", index),
                value: Data(#"{"schema":"Person","version":0,"data":{"name":"P\#(index)","age":"3"}}"#.utf8))
        }
        #expect(try store.commit(writes).allSatisfy { $0 == .applied })
        return (store.uri, ["--key-file", keyPath])
    }

    @Test("on a terminal, run shows records checked and written with rate and time left; piped, nothing")
    func onTerminal() throws {
        // Enough records that writing them takes over a tenth of a second (the rate is shown),
        // with progress drawn from the start (KEEPSAKE_PROGRESS_DELAY=0): a group commit writes
        // a few hundred records faster than the usual quarter-second delay.
        let (store, key) = try seededFileStore(3000)
        // Piped: no progress, and the records migrate.
        let piped = try migrate(["run", "--store", store, "--dry-run"] + key)
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(!piped.stderr.contains("records,"), "\(piped.stderr)")

        // On a terminal (script(1) gives the command one): both phases are drawn.
        let command = ([migrateBinary, "run", "--store", store] + key)
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let terminal = try runBinary(
            "/usr/bin/script", ["-qefc", command + " >/dev/null", "/dev/null"],
            environment: ["KEEPSAKE_PROGRESS_DELAY": "0"])
        #expect(terminal.status == 0, "\(terminal.stderr)")
        #expect(terminal.stdout.contains("writing 3000/3000 records"), "\(terminal.stdout.suffix(400))")
        #expect(
            terminal.stdout.range(
                of: #"writing \d+/3000 records, [0-9.]+/s, (about .* left|done in .*)"#,
                options: .regularExpression) != nil)
        let status = try migrate(["status", "--store", store, "--json"] + key)
        let totals = try #require(try decodeJSON(status.stdout) as? [String: Any])["totals"] as? [String: Any]
        #expect(totals?["current"] as? Int == 3000)

        // --quiet on a terminal: nothing.
        let quiet = try runBinary(
            "/usr/bin/script", ["-qefc", command + " --quiet >/dev/null", "/dev/null"],
            environment: ["KEEPSAKE_PROGRESS_DELAY": "0"])
        #expect(quiet.status == 0)
        #expect(!quiet.stdout.contains("records"), "\(quiet.stdout.suffix(400))")
    }
}
