import Logging

/// This module's logger, labelled `keepsake.sodium`: the encrypted file store: stores created,
/// master keys changed.
///
/// Log lines name stores, record keys, models, versions and error codes — never a record's
/// value, a secret, a passphrase or key material. A logger is made on each use (cheap: the
/// handler factory is called, nothing is written unless the level is enabled), so that a
/// `LoggingSystem.bootstrap` made after this module was first used still applies.
enum Log {
    static var sodium: Logger { Logger(label: "keepsake.sodium") }
}
