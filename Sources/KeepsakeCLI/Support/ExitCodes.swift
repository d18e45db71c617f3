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
    /// `copy`: a value (or key) the destination cannot hold; nothing was written.
    static let cannotHold = ExitCode(84)
    /// `copy`: a write or read-back failed; the destination was restored, the source untouched.
    static let restored = ExitCode(85)
    /// `copy`: some records are in both stores (not removed from the source, or not restored).
    static let inBoth = ExitCode(86)

    /// The exit code for an error that stopped a command.
    static func code(for error: KeepsakeError) -> ExitCode {
        switch error.code {
        case .corruptRecord, .unrecognisedRecord, .ambiguousRecord, .schemaMismatch, .migrationFailed,
             .verificationFailed, .encodingFailed, .deviceIdentityUnavailable:
            return unreadable
        case .newerVersion: return newer
        case .notFound: return notFound
        case .corruptStore: return corruptStore
        case .unavailable: return unavailable
        case .locked: return locked
        case .conflict, .backupFailed: return conflict
        case .lockTimeout, .timeout: return temporary
        case .permissionDenied: return permission
        case .invalidArgument: return .validationFailure
        case .io: return io
        case .wrongKey: return wrongKey
        default: return .failure
        }
    }

    /// The exit code for a finished status, plan or run.
    static func code(for reports: [RecordReport]) -> ExitCode {
        if reports.contains(where: { $0.state == .unreadable }) { return unreadable }
        if reports.contains(where: { $0.state == .newer }) { return newer }
        if let failed = reports.first(where: { $0.error != nil }), let error = failed.error {
            return code(for: error)
        }
        return .success
    }
}

/// Prints `error` for a person and exits with its code.
func fail(_ error: KeepsakeError) -> ExitCode {
    printError("error: \(error)")
    if let hint = hint(for: error) { printError("hint: \(hint)") }
    return Exit.code(for: error)
}

private func hint(for error: KeepsakeError) -> String? {
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
