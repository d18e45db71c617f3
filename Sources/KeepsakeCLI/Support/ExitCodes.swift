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
