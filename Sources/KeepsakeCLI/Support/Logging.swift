#if CLI
import Foundation
import Logging

/// The command line's log output: one line per entry on standard error, `LEVEL LABEL: message
/// [key=value …]`, escaped for the terminal. Keepsake logs stores, keys, models, versions and
/// error codes, never a record's value or a secret (see each module's `Log`).
struct CLILogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        printError(
            Self.format(
                level: event.level, label: label, message: event.message,
                metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
    }

    /// `notice keepsake.engine: record left untouched: newer [key=person store=defaults:/x.json]`.
    static func format(
        level: Logger.Level, label: String, message: Logger.Message, metadata: Logger.Metadata
    ) -> String {
        var text = "\(level) \(label): \(message)"
        if !metadata.isEmpty {
            text +=
                " [" + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") + "]"
        }
        return text
    }

    /// The level the command logs at: `--verbose` debug (each record migrated, each wait for a
    /// lock), `--quiet` critical (nothing Keepsake logs), else error (Keepsake's warnings are
    /// already the command's own error messages);
    /// `KEEPSAKE_LOG_LEVEL` (trace, debug, info, notice, warning, error, critical) overrides
    /// all three.
    static func level(verbose: Bool, quiet: Bool, environment: [String: String]) -> Logger.Level {
        if let name = environment["KEEPSAKE_LOG_LEVEL"], let level = Logger.Level(rawValue: name.lowercased()) {
            return level
        }
        if quiet { return .critical }
        return verbose ? .debug : .error
    }

    /// Sends every logger of this process to standard error at `level`. Called once, by the
    /// runner, before a command runs.
    static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in CLILogHandler(label: label, logLevel: level) }
    }
}
#endif
