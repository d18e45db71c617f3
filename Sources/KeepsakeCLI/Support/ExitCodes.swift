#if CLI
import ArgumentParser
import Keepsake
import KeepsakeSodium

/// The CLI's documented exit codes (see `migrate --help`), chosen by ``KeepsakeError/Code``.
enum Exit {
    static let unreadable = ExitCode(65)
    static let notFound = ExitCode(66)
    static let newer = ExitCode(67)
    static let corruptStore = ExitCode(68)
    static let unavailable = ExitCode(69)
    static let locked = ExitCode(70)
    static let wrongKey = ExitCode(71)
    static let conflict = ExitCode(73)
    static let io = ExitCode(74)
    static let temporary = ExitCode(75)
    static let permission = ExitCode(77)
    /// `copy`: a destination key holds another value; nothing was written.
    static let exists = ExitCode(83)
    /// A value the store (`put`) or the destination (`copy`) cannot hold; nothing was written.
    static let cannotHold = ExitCode(84)
    /// `copy`: a write or read-back failed; the destination was restored, the source untouched.
    static let restored = ExitCode(85)
    /// `copy`: some records are in both stores (not removed from the source, or not restored).
    static let inBoth = ExitCode(86)

    /// Every exit code with what it means, as `--help` and the man page list them.
    static var documented: [(code: Int, meaning: String)] {
        let trial: [(code: Int, meaning: String)] =
            CLI.hasTrial
            ? [
                (80, "`\(CLI.name) trial`: the trial expired"),
                (81, "`\(CLI.name) trial`: the clock moved back beyond the tolerance"),
                (82, "`\(CLI.name) trial`: the trial's state is unknown")
            ] : []
        return [
            (0, "success (outdated records are not an error for status and plan)"),
            (1, "unexpected internal error"),
            (64, "usage error"),
            (
                65,
                """
                a managed record is unreadable: corrupt, unrecognised, ambiguous, its migration step failed or \
                needs a device identity (it was left untouched)
                """
            ),
            (66, "no record under the given key, or no suite file at PATH"),
            (67, "a managed record was written by a newer release (left untouched)"),
            (68, "the store's own data is corrupt (e.g. a suite file that is not a JSON object)"),
            (69, "the store is unavailable"),
            (70, "the store is locked"),
            (
                71,
                """
                wrong master key or passphrase for a file: store; for a PostgreSQL table, a master key (or none) \
                its seal refuses: nothing was written
                """
            ),
            (
                73,
                """
                a record changed while being migrated and is still outdated after the run, or its backup failed \
                (left untouched); one another writer brought up to date is not an error
                """
            ),
            (74, "an I/O error"),
            (75, "timed out waiting for the store's lock or an answer; try again"),
            (77, "permission denied")
        ] + trial + [
            (
                83,
                "`\(CLI.name) copy`: a destination key holds another value (give --overwrite) or a newer version (give --migrate); nothing was written"
            ),
            (84, "a value the store cannot hold as given (put, copy); nothing was written"),
            (85, "`\(CLI.name) copy`: a write or read-back failed; the destination was restored, the source untouched"),
            (86, "`\(CLI.name) copy`: some records are in both stores (not removed from the source, or not restored)")
        ]
    }

    /// The width help texts are wrapped to: narrower than a terminal's 80 columns, so that the
    /// man page made from them keeps their lines too.
    static let helpWidth = 72

    /// ``documented`` as a help section: `  65  text`, wrapped to `width` columns under the text.
    static func helpText(width: Int = helpWidth) -> String {
        documented.map { code, meaning in
            let number = String(code).padding(toLength: 4, withPad: " ", startingAt: 0)
            return wrap(meaning, width: width - 6).enumerated().map { index, line in
                (index == 0 ? "  " + number : "      ") + line
            }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// The exit code for an error that stopped a command.
    static func code(for error: KeepsakeError) -> ExitCode {
        switch error.code {
        case .corruptRecord, .unrecognisedRecord, .ambiguousRecord, .schemaMismatch, .migrationFailed,
            .verificationFailed, .encodingFailed, .deviceIdentityUnavailable:
            return unreadable
        case .newerVersion, .mergeRefused: return newer
        case .notFound: return notFound
        case .corruptStore: return corruptStore
        case .unavailable: return unavailable
        case .locked: return locked
        case .conflict, .backupFailed: return conflict
        case .lockTimeout, .timeout: return temporary
        case .permissionDenied: return permission
        case .invalidArgument: return .validationFailure
        case .valueRefused: return cannotHold
        case .io: return io
        case .wrongKey: return wrongKey
        default: return .failure
        }
    }

    /// The exit code for a finished status, plan or run.
    static func code(for reports: some Collection<RecordReport>) -> ExitCode {
        if let compact = reports as? RecordReports {
            if compact.count(of: .unreadable) > 0 { return unreadable }
            if compact.count(of: .newer) > 0 { return newer }
            return compact.firstError.map { code(for: $0) } ?? .success
        }
        if reports.contains(where: { $0.state == .unreadable }) { return unreadable }
        if reports.contains(where: { $0.state == .newer }) { return newer }
        if let failed = reports.first(where: { $0.error != nil }), let error = failed.error {
            return code(for: error)
        }
        return .success
    }
}

/// What to do about `error`, when there is something to say.
func hint(for error: KeepsakeError) -> String? {
    switch error.code {
    case .corruptStore:
        return "the file was not changed; inspect it, restore a backup, or point --store elsewhere"
    case .lockTimeout:
        return "wait for the other writer to finish, then run the command again"
    case .permissionDenied:
        return "check the owner and mode of the store's files (Keepsake creates them 0600 in a 0700 directory)"
    case .deviceIdentityUnavailable:
        return "name this device with --device-id ID (or --app-id ID on a machine with /etc/machine-id)"
    case .newerVersion:
        return "use a release of the app or of \(CLI.name) that knows this version; the record was left as it was"
    default:
        return nil
    }
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word keeps its own line).
func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
        if !line.isEmpty, line.count + 1 + word.count > width {
            lines.append(line)
            line = ""
        }
        line += (line.isEmpty ? "" : " ") + word
    }
    if !line.isEmpty { lines.append(line) }
    return lines
}
#endif
