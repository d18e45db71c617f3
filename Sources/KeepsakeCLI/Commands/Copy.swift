#if CLI
import ArgumentParser
import Foundation
import Keepsake
import KeepsakeSodium
import KeepsakeStores

extension Migrate {
    struct Copy: OutputCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Copy or move records from one store to another, verified before anything is removed.",
                    usage:
                        "\(CLI.name) copy --from <uri> --to <uri> [<key> ...] [--move] [--migrate] [--overwrite] [<options>]",
                    discussion: """
                        Copies the named keys, or with no KEY every managed record (--all: every key, plain values too), from --from to --to. Each record is read, migrated to its latest version with --migrate, written, then read back and compared. Only when every record matched does --move remove them from the source. If a write or a read-back fails, the destination gets back exactly what it held before and the source is not touched. A key the destination already holds is refused unless --overwrite; one that holds exactly the same bytes is not, so a move that was interrupted can simply be run again. Plain values are copied as their bytes where the destination can hold them: a defaults: suite holds JSON values, the keyring UTF-8 text; another value is refused before anything is written. Records of a store that encrypts them (the keyring, a file: store, a sealed table, OpenBao) are not written to one that does not (a defaults: suite, a plain table) unless --allow-plaintext.

                        Each side takes its own master key: --from-master-key SOURCE for a file: source, --to-master-key SOURCE for a file: destination (SOURCE: \(KeySource.forms)).

                        Moves from one store take turns: a --move holds a lock on its source (shared by every Keepsake process of this user) from its first read to its last removal, so two moves from one store never both copy a record. A second move waits for the first (up to --lock-timeout seconds; then exit 75, nothing copied) and then moves what the source still holds. If another writer removes a record from the source after it was copied, the record is reported moved, with a note that the destination holds it; if another writer changes it, it is reported inBoth, naming both stores.

                        States: planned (--dry-run), copied, moved, exists (the destination holds another value), failed, reverted (written, then taken back), notCopied (another record failed first), inBoth (copied but not removed from the source, or not taken back).

                        Exit codes besides those of `\(CLI.name) --help`: 83 a destination key holds another value (give --overwrite) or a newer version than the one copied (give --migrate); 84 a value the destination cannot hold; 85 a write or read-back failed, the destination was restored and the source untouched; 86 some records are in both stores. Nothing is written for 83 and 84. Any other refusal exits with its record's code (66 a named key the source does not hold, 65 a record that cannot be read or migrated, 69, 70, 71 a store that cannot be used), and nothing is written then either.

                        Example:
                          \(CLI.name) copy --from defaults:~/.config/app/settings.json \\
                            --to keyring:com.example.app apiToken person --move --migrate
                        """)
            }
        }

        @OptionGroup(title: "Source")
        var source: StoreLocationOptions<CopySource>

        @OptionGroup(title: "Destination")
        var destination: StoreLocationOptions<CopyDestination>

        @Argument(
            help: ArgumentHelp(
                "The keys to copy (default: every managed record); a key ending in * is a pattern ('tenant-*').",
                valueName: "key"))
        var keys: [String] = []

        @Flag(name: .long, help: "Also copy unmanaged values (every key of the source); only without KEY.")
        var all = false

        @Flag(name: .long, help: "Remove the records from the source once every one is verified in the destination.")
        var move = false

        @Flag(name: .long, help: "Write outdated records at their latest version.")
        var migrate = false

        @Flag(name: .long, help: "Replace values the destination already holds under the same keys.")
        var overwrite = false

        @Flag(
            name: .long,
            help: "Copy from a store that encrypts its records (keyring, file:, sealed) to one that does not.")
        var allowPlaintext = false

        @Flag(name: .long, help: "Check everything and show what would be done; write nothing.")
        var dryRun = false

        @OptionGroup var keyring: KeyringTimeoutOptions

        @Option(
            name: .long,
            help: ArgumentHelp(
                "How long --move waits for another move from the same source to finish, in seconds.",
                valueName: "seconds"))
        var lockTimeout: Double = 60

        @OptionGroup var models: ModelMappingOptions
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if all && !keys.isEmpty { throw ValidationError("--all copies every key; give either --all or KEYs") }
            _ = try timeoutDuration(lockTimeout, option: "--lock-timeout")
        }

        func run() throws {
            try perform()
        }

        /// `keys` with each pattern (`tenant-*`) replaced by the source's keys it matches, in
        /// order, each key once.
        static func expanding(_ keys: [String], in source: any RecordStore) throws -> [String] {
            var expanded: [String] = []
            var seen = Set<[UInt8]>()  // keys are exact strings: compared by their bytes
            for key in keys {
                var matched = [key]
                if KeyPattern.isPattern(key) {
                    let pattern: KeyPattern
                    do throws(KeepsakeError) {
                        pattern = try KeyPattern(parsing: key)
                    } catch {
                        throw usageError(error.message)
                    }
                    matched = try source.keys(matching: pattern)
                }
                for key in matched where seen.insert(Array(key.utf8)).inserted { expanded.append(key) }
            }
            return expanded
        }

        private func perform() throws {
            let timeout = try keyring.timeout()
            let mapping = try models.mapping()
            let transfer = StoreTransfer(
                from: try source.open(keyringTimeout: timeout), to: try destination.open(keyringTimeout: timeout),
                chains: CLI.chains, context: device.context(), keyModels: mapping.keys, patternModels: mapping.patterns)
            let selection: StoreTransfer.Selection =
                keys.isEmpty ? (all ? .all : .managed) : .keys(try Self.expanding(keys, in: transfer.source))
            let options = StoreTransfer.Options(
                move: move, migrate: migrate, overwrite: overwrite,
                lockTimeout: try timeoutDuration(lockTimeout, option: "--lock-timeout"), allowPlaintext: allowPlaintext)
            #if DEBUG
            let checkpoint = CLIConfiguration.current.copyCheckpoint  // the test build's pause points
            #else
            let checkpoint: (@Sendable (StoreTransfer.Step) -> Void)? = nil
            #endif
            let report =
                dryRun
                ? try transfer.plan(selection, options: options)
                : try transfer.run(selection, options: options, checkpoint: checkpoint)
            let code = Self.exitCode(for: report)
            if output.json {
                printJSON(report.json(dryRun: dryRun, exitCode: code))
            } else {
                printTransfer(report)
            }
            if code != .success { throw code }
        }

        private func printTransfer(_ report: TransferReport) {
            let verb = report.move ? "Move" : "Copy"
            say(
                "\(dryRun ? "Dry run: \(verb.lowercased())" : verb) \(report.source) → \(report.destination)"
                    + (dryRun ? " (nothing is written)" : ""))
            if !report.records.isEmpty {
                printTable(
                    ["KEY", "MODEL", "FROM", "TO", "STATE", "NOTE"],
                    report.records.map { record in
                        [
                            record.key, record.schema ?? "-",
                            record.storedVersion.map { "v\($0)" } ?? "-", record.writtenVersion.map { "v\($0)" } ?? "-",
                            record.state.rawValue, note(record)
                        ]
                    })
            }
            let counts = TransferRecord.State.allCases.compactMap { state -> String? in
                let count = report.records.filter { $0.state == state }.count
                return count == 0 ? nil : "\(count) \(state.rawValue)"
            }
            say(counts.isEmpty ? "no records" : counts.joined(separator: ", "))
            switch report.outcome {
            case .planned, .completed: break
            case .refused: say("Nothing was written.")
            case .reverted: say("The destination was restored to what it held before; the source was not touched.")
            case .incomplete: say("Records marked inBoth are in both stores; nothing was lost.")
            case .partial: say("Records marked failed could not be read and were left in the source as they are.")
            }
        }

        private func note(_ record: TransferRecord) -> String {
            if record.state == .exists {
                // A newer version in the destination: --overwrite is not the way (it never puts an
                // older version over a newer one); say so, and what does work.
                if let error = record.error, error.code == .newerVersion {
                    if migrate || record.schema == nil {
                        return error.message
                            + "; an older version is never copied over a newer one, even with --overwrite"
                    }
                    return error.message
                        + "; an older version is never copied over a newer one, even with --overwrite: give --migrate (and --overwrite) to copy it at its latest version"
                }
                return "the destination holds another value under this key; give --overwrite to replace it"
            }
            if let error = record.error {
                var text = error.store.map { "\($0): " } ?? ""
                text += error.message
                if let cause = error.cause { text += " (\(cause))" }
                return text
            }
            var notes: [String] = []
            if let note = record.note { notes.append(note) }
            if record.unmanaged { notes.append("plain value, copied as its bytes") }
            if record.migrated { notes.append("migrated") }
            if record.replaced { notes.append("replaced the destination's value") }
            if record.alreadyPresent { notes.append("already in the destination") }
            return notes.joined(separator: "; ")
        }

        /// The exit code of a finished copy (see the discussion above).
        static func exitCode(for report: TransferReport) -> ExitCode {
            switch report.outcome {
            case .planned, .completed, .partial:
                // A record of the source that could not be read stays there: its own code (65).
                if let failed = report.records.first(where: { $0.state == .failed })?.error {
                    return Exit.code(for: failed)
                }
                return .success
            case .incomplete:
                return Exit.inBoth
            case .reverted:
                return Exit.restored
            case .refused:
                if report.records.contains(where: { $0.state == .exists }) { return Exit.exists }
                if let other = report.records.compactMap(\.error).first(where: { $0.code != .valueRefused }) {
                    return Exit.code(for: other)
                }
                return Exit.cannotHold
            }
        }
    }
}

extension TransferReport {
    /// `copy --json`: the stores, the outcome, every record, the number of records in each
    /// state (zeros included) and the exit code.
    func json(dryRun: Bool, exitCode: ExitCode) -> JSONValue {
        [
            "source": .string(source),
            "destination": .string(destination),
            "move": .bool(move),
            "dryRun": .bool(dryRun),
            "outcome": .string(outcome.rawValue),
            "records": .array(records.map(\.json)),
            "totals": totalsJSON(records.map(\.state)),
            "exitCode": .int(Int(exitCode.rawValue))
        ]
    }
}

extension TransferRecord {
    /// One record of `copy --json`.
    var json: JSONValue {
        [
            "key": .string(key),
            "schema": JSONValue(schema),
            "storedVersion": JSONValue(storedVersion),
            "writtenVersion": JSONValue(writtenVersion),
            "state": .string(state.rawValue),
            "migrated": .bool(migrated),
            "unmanaged": .bool(unmanaged),
            "replaced": .bool(replaced),
            "alreadyPresent": .bool(alreadyPresent),
            "note": JSONValue(note),
            "error": error?.json ?? .null
        ]
    }
}
#endif
