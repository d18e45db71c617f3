import Keepsake
import Logging

/// This module's logger, labelled `keepsake.keyring`: the keyring store: calls that ran out of
/// time, a locked or unavailable keyring.
///
/// Log lines name stores, record keys, models, versions and error codes — never a record's
/// value, a secret, a passphrase or key material. A logger is made on each use (cheap: the
/// handler factory is called, nothing is written unless the level is enabled), so that a
/// `LoggingSystem.bootstrap` made after this module was first used still applies.
enum Log {
    static var keyring: Logger { Logger(label: "keepsake.keyring") }
}

extension Logger {
    /// Logs a keyring call that failed (debug: the caller throws it, so the app hears of it
    /// there): past its deadline, the keyring locked or unavailable, anything else.
    func failed(_ error: KeepsakeError, timeout: Duration) {
        var metadata: Logger.Metadata = ["store": "\(error.store ?? "keyring")", "error": "\(error.code.rawValue)"]
        if let key = error.key { metadata["key"] = "\(key)" }
        switch error.code {
        case .timeout:
            debug("keyring call gave up at its deadline of \(timeout)", metadata: metadata)
        case .locked, .unavailable:
            debug("keyring \(error.code == .locked ? "is locked" : "is unavailable")", metadata: metadata)
        default:
            debug("keyring call failed", metadata: metadata)
        }
    }
}
