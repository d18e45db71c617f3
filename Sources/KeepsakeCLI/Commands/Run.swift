#if CLI
import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Run: MigratorCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Migrate every outdated record to its latest version and write it back.",
                    usage: "\(CLI.name) run --store <uri> [--dry-run] [--backup] [<options>]",
                    discussion: """
                        Each record is migrated in memory, verified, and written back in one atomic write, only if it still holds the bytes that were read. Current, newer, unreadable and unmanaged records are never written. A record that fails is reported and left as it was; the others still migrate.

                        With --backup, the original bytes of every migrated record are first saved, in one durable write, to <suite>.backups/<UTC time>/records.jsonl beside a defaults suite (or under --backup-dir); each run gets a folder of its own (<UTC time>-2 for a second run in the same second). Restore one record with:
                          \(CLI.name) put KEY --store URI --from-backup BACKUP
                        (BACKUP is the run's folder; folders of earlier releases, one <key>.json per record, work too.)

                        Another writer (an instance of the app) may change a record while the run migrates it: the run never writes over that change. It reads the record again and reports it as it now stands, with a note: current when the other writer brought it to the latest version ("brought to the latest version by another writer while it was being migrated"), newerReadable, or removed when it was deleted; one the other writer left outdated is migrated again from what that writer stored (at most 3 writes in all). Only a record still outdated after the run is reported outdated, with exit 73.

                        A defaults: suite file that does not exist is reported as such (exit 66) and is not created. On a terminal, progress (records done, rate, time left) is shown on standard error; never with --json, --quiet or when standard error is not a terminal.
                        """)
            }
        }

        @OptionGroup var store: StoreLocationOptions<TheStore>
        @OptionGroup var keyring: KeyringTimeoutOptions
        @OptionGroup var models: ModelMappingOptions
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        @Flag(name: .long, help: "Show what would be migrated; write nothing.")
        var dryRun = false

        @Flag(name: .long, help: "Save each record's original bytes before replacing it.")
        var backup = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Where --backup puts its timestamped folder (default: beside the suite file).", valueName: "dir"))
        var backupDir: String?

        func validate() throws {
            if backupDir != nil && !backup { throw ValidationError("--backup-dir needs --backup") }
            if dryRun && backup { throw ValidationError("--dry-run writes nothing, so --backup has nothing to save") }
        }

        func run() throws {
            try perform()
        }

        private func perform() throws {
            let migrator = try migrator()
            if dryRun {
                let reports = try migrator.planReports()
                try finish(
                    reports, store: migrator.store.uri, json: output.json,
                    extra: ["dryRun": true, "backupDirectory": nil]
                ) {
                    say("Dry run on \(migrator.store.uri): nothing is written")
                    printPlan(reports)
                }
                return
            }
            // A directory of this run's own, created now: another run in the same second gets another.
            let destination = backup ? try BackupDirectory.create(in: try backupParent(migrator.store)) : nil
            let meter =
                ProgressDisplay.isShown(
                    standardErrorIsTerminal: standardErrorIsTerminal, json: output.json,
                    quiet: output.quiet) ? ProgressMeter() : nil
            let reports: RecordReports
            do {
                reports = try Self.run(migrator, backup: destination, meter: meter)
            } catch {
                meter?.finish()
                destination?.removeIfEmpty()
                throw error
            }
            meter?.finish()
            // A report with a backup path is held whole: only those are looked at.
            let backedUp = reports.containsWhole { $0.backupPath != nil }
            if let destination, !backedUp { destination.removeIfEmpty() }
            let kept = destination.flatMap { backedUp ? $0.path : nil }
            try finish(
                reports, store: migrator.store.uri, json: output.json,
                extra: ["dryRun": false, "backupDirectory": JSONValue(kept)]
            ) {
                say("Run on \(migrator.store.uri)")
                if !reports.isEmpty {
                    printTable(
                        ["KEY", "MODEL", "FROM", "TO", "STATE", "NOTE"], count: reports.count,
                        measure: reports.measuringFirstColumns
                    ) {
                        // Most records of a run take the same steps: each list is spelled once (by
                        // each thread building rows), found again by its number, not by hashing it.
                        let notes = StepNotes()
                        return { index, cells in
                            let row = reports.row(at: index)
                            var note = ""
                            if let report = row.whole {
                                note = report.errorText ?? ""
                                if report.errorText == nil, report.state == .migrated { note = stepsNote(report.steps) }
                                // What became of a record another writer changed meanwhile, before the rest.
                                if let changed = report.note { note = note.isEmpty ? changed : changed + "; " + note }
                            } else if row.state == .migrated {
                                note = notes.text(ofList: row.stepList, in: reports)
                            }
                            // Appended one by one: an array literal would be one more allocation per row.
                            cells.append(row.key)
                            cells.append(row.schema ?? "-")
                            cells.append(row.storedText)
                            cells.append(row.latestText)
                            cells.append(row.state.rawValue)
                            cells.append(note)
                        }
                    }
                }
                if let hint = unmanagedHint(reports) { say(hint) }
                say(summary(reports))
                if let kept { say("Backups in \(kept)") }
            }
        }

        /// Runs the migrator, feeding `meter` with records checked and, through the store's
        /// ``CommitProgress`` reports, records written.
        private static func run(
            _ migrator: Migrator, backup: BackupDirectory?, meter: ProgressMeter?
        ) throws -> RecordReports {
            guard let meter else { return try migrator.runReports(backup: backup) }
            let written: @Sendable (Int, Int) -> Void = { done, total in
                meter.update("writing", done: done, total: total)
            }
            return try CommitProgress.$observer.withValue(written) {
                try migrator.runReports(backup: backup) { progress in
                    if !progress.written {
                        meter.update("checking", done: progress.evaluated, total: progress.total)
                    }
                }
            }
        }

        private func backupParent(_ store: any RecordStore) throws -> String {
            if store.capabilities.contains(.encryptedAtRest) {
                // A backup holds the bytes `get` shows: for an encrypted store, plaintext.
                throw usageError(
                    """
                    backups of \(store.uri) would put its secrets on disk in plaintext; back up the \
                    store itself instead (a file: store's directory stays encrypted: cp -a DIR DIR.bak)
                    """)
            }
            if let backupDir { return backupDir }
            if let place = store.defaultBackupDirectory { return place }
            throw ValidationError("this store has no default backup place; pass --backup-dir DIR")
        }
    }
}

/// The NOTE of a migrated record: the versions its steps led to.
private func stepsNote(_ steps: [Int]) -> String {
    "steps " + steps.map { "v\($0)" }.joined(separator: ", ")
}

/// Each list of steps of a run spelled once, by its number among the run's lists (one per
/// thread that builds rows; a class, so the row function updates it without the checks a
/// captured variable costs).
private final class StepNotes {
    @exclusivity(unchecked) private var texts: [Int: String] = [:]

    func text(ofList list: Int, in reports: RecordReports) -> String {
        if let known = texts[list] { return known }
        let text = stepsNote(list < 0 ? [] : reports.steps(ofList: list))
        texts[list] = text
        return text
    }
}
#endif
