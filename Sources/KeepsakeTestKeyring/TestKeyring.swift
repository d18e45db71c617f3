import Foundation
import Synchronization

/// A private, throwaway keyring for tests: a D-Bus session bus of its own and a Secret Service
/// provider on it — gnome-keyring-daemon by default, whose `login` collection is created
/// unlocked with a random password, or KeePassXC or KWallet (``Provider``) — all in a
/// temporary directory, never the user's keyring.
///
/// Three ways to use it:
/// - **Around the test command** (what CI does): `keepsake-test-keyring --keep-home -- swift test` starts one,
///   runs the command inside it and cleans up. Inside, ``shared()`` attaches to it.
/// - **From inside the test process**, with no wrapper: the first ``shared()`` call starts one and
///   points this process at it (`DBUS_SESSION_BUS_ADDRESS`, the XDG directories) — it must come
///   before anything in the process uses libsecret, because GLib connects to the session bus once
///   per process and keeps that connection. It stays up until the process exits.
/// - **For child processes**: ``start(provider:)`` starts another one without touching this process's
///   environment; give ``childEnvironment(from:homeDirectories:)`` to the processes that should
///   use it, and ``stop()`` it.
///
/// ```swift
/// @Suite(.serialized, .enabled(if: TestKeyring.unavailableReason() == nil,
///                               Comment(rawValue: TestKeyring.unavailableReason() ?? "")))
/// struct TrialTests {
///     @Test func survivesReinstall() throws {
///         let keyring = try TestKeyring.shared()
///         …
///         try keyring.restartDaemon()
///     }
/// }
/// ```
///
/// It refuses to run where the user's keyring could be reached: when a session bus it did not
/// start is reachable from this process (`DBUS_SESSION_BUS_ADDRESS` set, or
/// `$XDG_RUNTIME_DIR/bus`), ``shared()`` throws ``TestKeyringError/Code/realSession`` instead —
/// unless the process runs inside `keepsake-test-keyring`, whose bus it recognises.
///
/// Cleanup does not depend on the test finishing: a watchdog process, started first, waits for
/// the process that started the keyring to close a socket — on ``stop()``, on exit, on a crash —
/// then kills the bus, the daemon and every process registered with ``adopt(processID:)``, and
/// removes the temporary directory.
///
/// Needs `dbus-daemon` (Debian `dbus`), the provider's programs (``Provider/debianPackages``;
/// `gnome-keyring-daemon` from `gnome-keyring` by default) and `gdbus`
/// (`libglib2.0-bin`) in `PATH`; without them ``unavailableReason(environment:)`` says which are
/// missing, for a test to skip with.
public final class TestKeyring: Sendable {
    /// The environment variables through which a process learns that it runs inside a private
    /// keyring, and how to drive it.
    public enum Variable {
        /// `"1"` inside a private keyring.
        public static let inside = "KEEPSAKE_TEST_KEYRING"
        /// The keyring's temporary directory.
        public static let root = "KEEPSAKE_TEST_KEYRING_ROOT"
        /// The private bus's address (what `DBUS_SESSION_BUS_ADDRESS` must be).
        public static let bus = "KEEPSAKE_TEST_KEYRING_BUS"
        /// The login collection's throwaway password.
        public static let password = "KEEPSAKE_TEST_KEYRING_PASSWORD"
        /// A scratch directory for the tests (`<root>/scratch`), removed with the keyring.
        public static let scratch = "KEEPSAKE_TEST_KEYRING_DIR"
        /// The ``Provider`` to run (`gnome-keyring`, the default; `keepassxc`; `kwallet`); inside,
        /// the one that runs.
        public static let provider = "KEEPSAKE_TEST_KEYRING_PROVIDER"
    }

    /// Variables removed from a process inside the keyring, so that nothing reaches a desktop
    /// session or shows a prompt.
    public static let variablesToUnset = ["DISPLAY", "WAYLAND_DISPLAY", "GNOME_KEYRING_CONTROL", "SSH_AUTH_SOCK"]

    /// The temporary directory holding everything: the bus socket, the keyring files, the XDG
    /// directories, scratch space. Mode 0700; removed by cleanup.
    public let root: URL
    /// The private bus's address.
    public let busAddress: String
    /// The login collection's password (random, throwaway).
    public let password: String
    /// The daemon's `XDG_DATA_HOME`: the keyring files are in its `keyrings/` folder. A
    /// reinstall never touches it; ``restartDaemon()`` reloads them.
    public let keyringDataDirectory: URL
    /// The runtime directory (mode 0700) of processes inside.
    public let runtimeDirectory: URL
    /// Scratch space for tests, removed with the keyring.
    public let scratch: URL
    /// The Secret Service provider it runs.
    public let provider: Provider
    /// The D-Bus object path of the provider's default collection (``Provider/collection``):
    /// what ``lock()`` locks.
    public var collection: String { provider.collection }
    /// Throwaway XDG base directories: the "home" of the apps under test.
    public let home: XDGDirectories

    enum Ownership {
        /// Started by ``start(provider:)``: ``stop()`` ends it.
        case started
        /// Started by ``shared()`` for this process: lives until the process exits.
        case processWide
        /// Started by another process (the runner): that process ends it.
        case attached
    }

    let ownership: Ownership
    let tools: Tools
    /// The write end of the watchdog's pipe (`-1` once closed, or when attached).
    let watchdog: Mutex<Int32>

    struct Tools: Sendable {
        var dbusDaemon: String
        var gdbus: String
        /// The provider's programs, by name.
        var programs: [String: String]
        static func names(_ provider: Provider) -> [String] { ["dbus-daemon", "gdbus"] + provider.programs }
        /// The path of the provider's program `name` (found when the tools were).
        func program(_ name: String) -> String { programs[name] ?? name }
    }

    init(
        root: URL, busAddress: String, password: String, ownership: Ownership, tools: Tools, provider: Provider,
        watchdog: Int32
    ) {
        self.provider = provider
        self.root = root
        self.busAddress = busAddress
        self.password = password
        keyringDataDirectory = root.appendingPathComponent("keyring")
        runtimeDirectory = root.appendingPathComponent("run")
        scratch = root.appendingPathComponent("scratch")
        home = XDGDirectories(under: root.appendingPathComponent("home"))
        self.ownership = ownership
        self.tools = tools
        self.watchdog = Mutex(watchdog)
    }

    deinit {
        // Only a keyring from start() that nobody stopped: end it now rather than at exit.
        if ownership == .started { closeWatchdog() }
    }

    /// What a process needs in its environment to be inside this keyring (and to attach to it
    /// with ``shared()``): the bus, the runtime and XDG directories, and ``Variable``'s. Remove
    /// ``variablesToUnset`` too.
    public var environment: [String: String] {
        home.environment.merging([
            "DBUS_SESSION_BUS_ADDRESS": busAddress,
            "XDG_RUNTIME_DIR": runtimeDirectory.path,
            Variable.inside: "1",
            Variable.root: root.path,
            Variable.bus: busAddress,
            Variable.password: password,
            Variable.scratch: scratch.path,
            Variable.provider: provider.rawValue
        ]) { $1 }
    }

    /// `environment` (by default this process's) with this keyring's variables set and
    /// ``variablesToUnset`` removed: the environment of a child process inside it.
    ///
    /// - Parameters:
    ///   - base: The environment to start from.
    ///   - homeDirectories: Whether to point the child's `XDG_*_HOME` at ``home`` too. The runner
    ///     does not, because its command is usually a build tool (`swift test`), which keeps its
    ///     caches and configuration there; ``shared()`` does it in the test process.
    public func childEnvironment(
        from base: [String: String] = ProcessInfo.processInfo.environment, homeDirectories: Bool = true
    ) -> [String: String] {
        var result = base
        for name in Self.variablesToUnset { result[name] = nil }
        var added = environment
        if !homeDirectories { for name in home.environment.keys { added[name] = nil } }
        return result.merging(added) { $1 }
    }
}
