import Keepsake
import Logging

/// This module's logger, labelled `keepsake.trial`: the trial guard: trials started, expired, the
/// clock moved back, unknown states.
///
/// Log lines name stores, record keys, models, versions and error codes — never a record's
/// value, a secret, a passphrase or key material. A logger is made on each use (cheap: the
/// handler factory is called, nothing is written unless the level is enabled), so that a
/// `LoggingSystem.bootstrap` made after this module was first used still applies.
enum Log {
    static var trial: Logger { Logger(label: "keepsake.trial") }
}

extension Logger {
    /// Logs a trial state — read (trace), expired, unknown (a locked keyring, say) or the clock
    /// moved back (debug: the app gets the state as the value it asked for, and acts on it
    /// there) — and returns it.
    func reported(_ status: TrialStatus, store: String, key: String) -> TrialStatus {
        var metadata: Logger.Metadata = ["store": "\(store)", "key": "\(key)"]
        switch status {
        case .notStarted, .active:
            trace("trial state read", metadata: metadata)
        case .expired:
            debug("trial expired", metadata: metadata)
        case .clockMovedBack:
            debug("the clock moved back beyond the tolerance; the trial is not extended", metadata: metadata)
        case let .unknown(error):
            metadata["error"] = "\(error.code.rawValue)"
            debug("trial state unknown", metadata: metadata)
        }
        return status
    }
}
