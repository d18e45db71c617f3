import Logging

/// The toolkit's logger, labelled `keepsake.engine` — the engine's label: the waits for a
/// store's lock (``StoreLock``) are the engine's log lines, whichever store takes the lock.
///
/// Log lines name lock files, never a record's value or a secret. A logger is made on each use
/// (cheap: the handler factory is called, nothing is written unless the level is enabled), so
/// that a `LoggingSystem.bootstrap` made after this module was first used still applies.
enum Log {
    static var engine: Logger { Logger(label: "keepsake.engine") }
}
