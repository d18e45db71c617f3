/// Why a private test keyring could not be started, attached to or driven.
public struct TestKeyringError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, to match on.
    public enum Code: String, Sendable, Equatable {
        /// `dbus-daemon`, `gnome-keyring-daemon` or `gdbus` is not installed: tests should skip,
        /// saying so (``TestKeyring/unavailableReason(environment:)`` gives the same text).
        case toolsMissing
        /// A session bus this library did not start is reachable from this process (a desktop
        /// session, a systemd user bus): refused, so that no test can touch the user's keyring.
        case realSession
        /// The environment claims to be inside a private keyring but does not describe one
        /// this library started.
        case notInsideHarness
        /// The bus or the daemon did not start, or did not become usable in time.
        case startFailed
        /// Locking, restarting or another operation on a running private keyring failed.
        case operationFailed
        /// A path the reinstall simulator was asked to remove is not inside the private
        /// keyring's temporary directory: nothing was removed.
        case unsafePath
    }

    /// What went wrong.
    public let code: Code
    /// A sentence saying what happened and what to do.
    public let message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `private test keyring: <message>`.
    public var description: String { "private test keyring: \(message)" }
}
