import Logging

/// This module's logger, labelled `keepsake.engine`: the engine: migrations, write-backs,
/// conflicts, and waits for a store's lock.
///
/// Log lines name stores, record keys, models, versions and error codes — never a record's
/// value, a secret, a passphrase or key material. A logger is made on each use (cheap: the
/// handler factory is called, nothing is written unless the level is enabled), so that a
/// `LoggingSystem.bootstrap` made after this module was first used still applies.
enum Log {
    static var engine: Logger { Logger(label: "keepsake.engine") }
}
