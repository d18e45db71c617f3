import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A private, throwaway keyring for tests: a D-Bus session bus of its own and a Secret Service
/// provider on it — gnome-keyring-daemon by default, whose `login` collection is created
/// unlocked with a random password, or KeePassXC or KWallet (``Provider``) — all in a
/// temporary directory, never the user's keyring.
///
/// Three ways to use it:
/// - **Around the test command** (what CI does): `keepsake-test-keyring -- swift test` starts one,
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

    private enum Ownership {
        /// Started by ``start(provider:)``: ``stop()`` ends it.
        case started
        /// Started by ``shared()`` for this process: lives until the process exits.
        case processWide
        /// Started by another process (the runner): that process ends it.
        case attached
    }

    private let ownership: Ownership
    let tools: Tools
    /// The write end of the watchdog's pipe (`-1` once closed, or when attached).
    private let watchdog: Mutex<Int32>

    struct Tools: Sendable {
        var dbusDaemon: String
        var gdbus: String
        /// The provider's programs, by name.
        var programs: [String: String]
        static func names(_ provider: Provider) -> [String] { ["dbus-daemon", "gdbus"] + provider.programs }
        /// The path of the provider's program `name` (found when the tools were).
        func program(_ name: String) -> String { programs[name] ?? name }
    }

    private init(
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

    // MARK: Availability

    /// Why a private keyring cannot be used from a process with `environment`, or `nil` when
    /// ``shared()`` can attach to one or start one: the tools are missing (with the Debian
    /// packages to install), or a session bus this library did not start is reachable.
    ///
    /// Cheap and side-effect free (it only looks at the environment and `PATH`): meant for a
    /// suite's `.enabled(if:)` trait, so that a test skips with this reason.
    public static func unavailableReason(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        let provider: Provider
        do throws(TestKeyringError) {
            provider = try Provider.chosen(in: environment)
        } catch {
            return error.message
        }
        if let missing = missingTools(path: environment["PATH"], provider: provider) { return missing.message }
        if environment[Variable.inside] == "1" {
            do throws(TestKeyringError) {
                _ = try validateHarness(environment)
                return nil
            } catch {
                return error.message
            }
        }
        return realSession(environment)?.message
    }

    static func missingTools(path: String?, provider: Provider) -> TestKeyringError? {
        var missing = Tools.names(provider).filter { Subprocess.which($0, path: path) == nil }
        if let plugin = provider.missingPlugin { missing.append(plugin) }
        guard !missing.isEmpty else { return nil }
        return TestKeyringError(
            .toolsMissing,
            """
            \(missing.joined(separator: ", ")) not found, so no private keyring with \(provider.displayName) \
            can be started (the keyring tests did not run); on Debian: apt-get install -y \
            --no-install-recommends dbus libglib2.0-bin \(provider.debianPackages.joined(separator: " "))
            """)
    }

    static func findTools(path: String?, provider: Provider) throws(TestKeyringError) -> Tools {
        if let missing = missingTools(path: path, provider: provider) { throw missing }
        // Checked just above: every tool was found.
        func find(_ name: String) -> String { Subprocess.which(name, path: path) ?? name }
        var programs: [String: String] = [:]
        for name in provider.programs { programs[name] = find(name) }
        return Tools(dbusDaemon: find("dbus-daemon"), gdbus: find("gdbus"), programs: programs)
    }

    /// A session bus reachable from `environment` that is not a private keyring's.
    static func realSession(_ environment: [String: String]) -> TestKeyringError? {
        let advice = """
            run the tests inside a private keyring instead (`keepsake-test-keyring -- swift test`), \
            or unset DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR for the test run
            """
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            return TestKeyringError(
                .realSession,
                """
                refused: DBUS_SESSION_BUS_ADDRESS points at a session bus this library did not start \
                (\(address)), where the user's own keyring may answer; \(advice)
                """)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty,
            FileManager.default.fileExists(atPath: runtime + "/bus")
        {
            return TestKeyringError(
                .realSession,
                """
                refused: \(runtime)/bus is a session bus this library did not start (GLib connects to it \
                when DBUS_SESSION_BUS_ADDRESS is unset), where the user's own keyring may answer; \(advice)
                """)
        }
        return nil
    }

    // MARK: Getting one

    private static let processWide = Mutex<TestKeyring?>(nil)

    /// This process's private keyring: the one it runs inside (started by `keepsake-test-keyring`
    /// or by ``start(provider:)`` for this process), or else a new one, started now, that this process is
    /// pointed at.
    ///
    /// Either way it points this process's four `XDG_*_HOME` variables at the keyring's
    /// throwaway ``home``, so that the app under test (`DefaultsStore(suite:app:)`, the apps it
    /// starts) keeps its files there, where ``ReinstallSimulator`` wipes them. Starting one also
    /// sets `DBUS_SESSION_BUS_ADDRESS`, `XDG_RUNTIME_DIR` and ``Variable``'s, and removes
    /// ``variablesToUnset``. Call it
    /// before anything in the process uses libsecret — GLib connects to the session bus on the
    /// first call and keeps that connection for the life of the process — and before threads
    /// that read the environment start, if you can. It stays up until the process exits (stopping
    /// the bus under a connected GLib would end the process); its cleanup runs then.
    ///
    /// - Throws: ``TestKeyringError``: `.toolsMissing`; `.realSession` when another session bus
    ///   is reachable (nothing is started, the environment is unchanged); `.notInsideHarness`
    ///   when ``Variable/inside`` is set but the rest does not describe a running private keyring;
    ///   `.startFailed`.
    /// - Important: When it throws, this process's environment is as it was and nothing is left
    ///   running.
    public static func shared() throws(TestKeyringError) -> TestKeyring {
        try processWide.withLock { (current: inout TestKeyring?) throws(TestKeyringError) -> TestKeyring in
            if let current { return current }
            let environment = ProcessInfo.processInfo.environment
            let keyring: TestKeyring
            if environment[Variable.inside] == "1" {
                keyring = try attach(environment: environment)
                for (name, value) in keyring.home.environment { setenv(name, value, 1) }
            } else {
                let provider = try Provider.chosen(in: environment)
                let tools = try findTools(path: environment["PATH"], provider: provider)
                if let refusal = realSession(environment) { throw refusal }
                keyring = try launch(tools: tools, ownership: .processWide, provider: provider)
                for name in variablesToUnset { unsetenv(name) }
                for (name, value) in keyring.environment { setenv(name, value, 1) }
            }
            current = keyring
            return keyring
        }
    }

    /// The private keyring that `environment` describes (as ``environment`` sets it), without
    /// starting anything. Its owner stops it; ``stop()`` on the result does nothing.
    ///
    /// - Throws: `.notInsideHarness` when the variables are missing or do not match a private
    ///   keyring's directory; `.realSession` when `DBUS_SESSION_BUS_ADDRESS` is not the private
    ///   bus; `.toolsMissing`.
    /// - Important: Nothing is started, stopped or changed, whether it returns or throws.
    public static func attach(environment: [String: String]) throws(TestKeyringError) -> TestKeyring {
        let provider = try Provider.chosen(in: environment)
        let tools = try findTools(path: environment["PATH"], provider: provider)
        let (root, bus, password) = try validateHarness(environment)
        return TestKeyring(
            root: root, busAddress: bus, password: password, ownership: .attached, tools: tools, provider: provider,
            watchdog: -1)
    }

    static func validateHarness(_ environment: [String: String]) throws(TestKeyringError) -> (URL, String, String) {
        guard environment[Variable.inside] == "1",
            let rootPath = environment[Variable.root], rootPath.hasPrefix("/"),
            let bus = environment[Variable.bus], !bus.isEmpty,
            let password = environment[Variable.password], !password.isEmpty
        else {
            throw TestKeyringError(
                .notInsideHarness,
                """
                \(Variable.inside), \(Variable.root), \(Variable.bus) and \(Variable.password) must all be \
                set by keepsake-test-keyring (or TestKeyring.start()); some are missing
                """)
        }
        let root = URL(fileURLWithPath: rootPath)
        let marker = root.appendingPathComponent(markerName)
        guard let recorded = try? String(contentsOf: marker, encoding: .utf8), recorded == bus else {
            // An unreadable marker is the same answer as a wrong one: this is not our keyring.
            throw TestKeyringError(
                .notInsideHarness,
                """
                \(rootPath) is not the directory of a running private keyring for the bus \(bus) \
                (its \(markerName) is missing or names another bus)
                """)
        }
        guard environment["DBUS_SESSION_BUS_ADDRESS"] == bus else {
            throw TestKeyringError(
                .realSession,
                """
                refused: DBUS_SESSION_BUS_ADDRESS is \(environment["DBUS_SESSION_BUS_ADDRESS"] ?? "unset"), \
                not the private keyring's bus \(bus); the user's own keyring may answer there
                """)
        }
        return (root, bus, password)
    }

    /// Starts a new private keyring for child processes; this process's environment is not
    /// changed. Stop it with ``stop()`` (or let it go: cleanup also runs when it is released or
    /// when this process exits).
    ///
    /// - Parameter provider: The Secret Service provider to run.
    /// - Throws: `.toolsMissing`, `.startFailed` (with the daemon's output).
    /// - Important: When it throws, nothing is left running and the temporary directory is
    ///   removed.
    public static func start(provider: Provider = .gnomeKeyring) throws(TestKeyringError) -> TestKeyring {
        let tools = try findTools(path: ProcessInfo.processInfo.environment["PATH"], provider: provider)
        return try launch(tools: tools, ownership: .started, provider: provider)
    }

    /// Runs `body` with a new private keyring (``start(provider:)``) and stops it afterwards, whether
    /// `body` returns or throws.
    ///
    /// - Throws: What ``start(provider:)`` throws (then `body` did not run), or what `body` throws.
    /// - Important: Whether `body` returns or throws, the keyring is stopped and its directory
    ///   removed before this returns.
    public static func withPrivateKeyring<T>(_ body: (TestKeyring) throws -> T) throws -> T {
        let keyring = try start()
        defer { keyring.stop() }
        return try body(keyring)
    }

    /// Ends a keyring from ``start(provider:)``: kills the daemon, the bus and every adopted process, and
    /// removes ``root``. Waits (up to 10 s) for the directory to be gone. Does nothing for the
    /// process-wide or an attached keyring, whose cleanup belongs to the process that started it.
    public func stop() {
        guard ownership == .started else { return }
        tearDown()
    }

    /// Closes the watchdog's pipe and waits (up to 10 s) for its cleanup to finish.
    private func tearDown() {
        closeWatchdog()
        let deadline = ContinuousClock.now + .seconds(10)
        while FileManager.default.fileExists(atPath: root.path) && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    private func closeWatchdog() {
        watchdog.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    // MARK: Starting

    static let markerName = ".keepsake-test-keyring"

    private static func launch(
        tools: Tools, ownership: Ownership, provider: Provider
    ) throws(TestKeyringError) -> TestKeyring {
        let root = try makeRoot()
        let bus = "unix:path=\(root.path)/bus"
        var password = ""
        for _ in 0..<18 { password += String(UInt8.random(in: 0...255), radix: 16).leftPadded(to: 2) }
        let watchdog: Int32
        do {
            watchdog = try startWatchdog(root: root)
        } catch {
            removeTree(root)
            throw error
        }
        let keyring = TestKeyring(
            root: root, busAddress: bus, password: password, ownership: ownership,
            tools: tools, provider: provider, watchdog: watchdog)
        do {
            try keyring.startBus()
            try keyring.startProvider()
            try keyring.waitUntilReady()
            try Data(bus.utf8).write(to: root.appendingPathComponent(markerName))
        } catch let error as TestKeyringError {
            keyring.tearDown()
            throw error
        } catch {
            keyring.tearDown()
            throw TestKeyringError(.startFailed, "could not start the private keyring: \(error)")
        }
        return keyring
    }

    private static func makeRoot() throws(TestKeyringError) -> URL {
        var base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        // The bus socket's path must fit in sockaddr_un (108 bytes).
        if base.utf8.count > 60 || !base.hasPrefix("/") { base = "/tmp" }
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array("\(base)/keepsake-keyring.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TestKeyringError(
                .startFailed, "could not create a temporary directory in \(base): \(String(cString: strerror(errno)))")
        }
        let root = URL(fileURLWithPath: String(cString: made))
        let folders = [
            "run", "keyring", "scratch", "scratch/pids", "logs", "home",
            "home/config", "home/data", "home/cache", "home/state"
        ]
        for folder in folders where mkdir(root.path + "/" + folder, 0o700) != 0 {
            let reason = String(cString: strerror(errno))
            removeTree(root)
            throw TestKeyringError(.startFailed, "could not create \(root.path)/\(folder): \(reason)")
        }
        return root
    }

    /// The watchdog: a shell that waits for end-of-file on a socket only this process holds
    /// (close-on-exec, so no child inherits it), then kills every registered process that
    /// still belongs to this keyring (its command line or environment names ``root``) and
    /// removes ``root``. It ignores the signals a terminal sends the whole process group.
    private static func startWatchdog(root: URL) throws(TestKeyringError) -> Int32 {
        var fds: [Int32] = [-1, -1]
        // A socket pair rather than pipe2 (not exported by Glibc's module): created
        // close-on-exec atomically, so no process spawned meanwhile by another thread inherits it.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw TestKeyringError(
                .startFailed, "could not create the watchdog's pipe: \(String(cString: strerror(errno)))")
        }
        let script = #"""
            trap '' INT TERM HUP QUIT
            root=$1
            cat >/dev/null
            for file in "$root"/scratch/pids/*; do
                [ -e "$file" ] || continue
                pid=${file##*/}
                case $pid in ''|*[!0-9]*) continue ;; esac
                if grep -qsF -- "$root" "/proc/$pid/cmdline" "/proc/$pid/environ"; then
                    kill -KILL "$pid" 2>/dev/null
                fi
            done
            rm -rf -- "$root"
            """#
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script, "keepsake-test-keyring-watchdog", root.path]
        process.standardInput = FileHandle(fileDescriptor: fds[0], closeOnDealloc: false)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            close(fds[0])
            close(fds[1])
            throw TestKeyringError(.startFailed, "could not start the watchdog (/bin/sh): \(error)")
        }
        close(fds[0])
        return fds[1]
    }

    private func startBus() throws {
        let config = root.appendingPathComponent("bus.conf")
        // No <servicedir>: nothing is activated on this bus, so no daemon can start without
        // the password.
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(root.path)/bus</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(to: config, atomically: false, encoding: .utf8)
        let process = try spawn(tools.dbusDaemon, ["--config-file=\(config.path)", "--nofork"], log: "dbus-daemon")
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if FileManager.default.fileExists(atPath: root.path + "/bus"),
                (try? gdbus([
                    "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                    "--method", "org.freedesktop.DBus.GetId"
                ]))?.status == 0
            {
                return
            }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw TestKeyringError(.startFailed, "dbus-daemon did not start: \(log("dbus-daemon"))")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    var daemonEnvironment: [String: String] {
        let parent = ProcessInfo.processInfo.environment
        var environment = [
            "DBUS_SESSION_BUS_ADDRESS": busAddress, "XDG_RUNTIME_DIR": runtimeDirectory.path,
            "XDG_DATA_HOME": keyringDataDirectory.path,
            "XDG_CONFIG_HOME": root.appendingPathComponent("keyring/config").path,
            Variable.root: root.path
        ]
        for name in ["PATH", "HOME", "LANG", "LC_ALL"] { environment[name] = parent[name] }
        if provider != .gnomeKeyring {
            // Qt programs: no display, and nothing written outside the keyring's directory.
            let home = keyringDataDirectory.appendingPathComponent("home").path
            environment["HOME"] = home
            environment["QT_QPA_PLATFORM"] = "offscreen"
            environment["XDG_CACHE_HOME"] = home + "/.cache"
            environment["XDG_STATE_HOME"] = home + "/.local/state"
        }
        return environment
    }

    /// Starts `executable` with the daemons' environment, its output in `logs/<log>.log`, and
    /// registers it for cleanup.
    @discardableResult
    func spawn(_ executable: String, _ arguments: [String], log: String, stdin: Data? = nil) throws -> Process {
        let logURL = root.appendingPathComponent("logs/\(log).log")
        if !FileManager.default.fileExists(atPath: logURL.path) { try Data().write(to: logURL) }
        let output = try FileHandle(forWritingTo: logURL)
        output.seekToEndOfFile()
        defer { try? output.close() }  // the child has its own copy
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = daemonEnvironment
        process.standardOutput = output
        process.standardError = output
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        // How it ended, at the end of its log: a provider that crashes says nothing itself.
        process.terminationHandler = { ended in
            let how = ended.terminationReason == .uncaughtSignal ? "signal" : "status"
            if let file = try? FileHandle(forWritingTo: logURL) {  // the log is gone once the keyring is
                file.seekToEndOfFile()
                file.write(Data("[\(log) ended: \(how) \(ended.terminationStatus)]\n".utf8))
                try? file.close()
            }
        }
        try process.run()
        do {
            try adopt(processID: process.processIdentifier)
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw error
        }
        if let stdin {
            input.fileHandleForWriting.write(stdin)
            try input.fileHandleForWriting.close()
        }
        return process
    }

    func log(_ name: String) -> String {
        let text = (try? String(contentsOf: root.appendingPathComponent("logs/\(name).log"), encoding: .utf8)) ?? ""
        return text.isEmpty ? "(no output)" : text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Driving it

    /// Registers a process a test started (a helper daemon, a second bus), so that cleanup
    /// kills it if it still runs — provided its command line or environment names ``root``.
    ///
    /// - Throws: When the registration file cannot be written.
    /// - Important: When it throws, the process is not registered: stop it yourself.
    public func adopt(processID: Int32) throws {
        try Data().write(to: scratch.appendingPathComponent("pids/\(processID)"))
    }

    /// Whether the provider's collection (``collection``) is locked, asked over D-Bus.
    ///
    /// - Throws: `.operationFailed` when the daemon does not answer.
    /// - Important: Only asks; nothing changes, whether it returns or throws.
    public func isLocked() throws(TestKeyringError) -> Bool {
        let result = try gdbusChecked(
            [
                "--dest", "org.freedesktop.secrets", "--object-path", collection,
                "--method", "org.freedesktop.DBus.Properties.Get",
                "org.freedesktop.Secret.Collection", "Locked"
            ], doing: "reading the lock state")
        return result.stdout.contains("true")
    }

    /// gnome-keyring's login collection's D-Bus object path.
    public static let loginCollection = "/org/freedesktop/secrets/collection/login"

    /// Locks the provider's collection (`org.freedesktop.Secret.Service.Lock` over D-Bus, and
    /// the prompt KeePassXC answers it with; `secret-tool lock` would wait for a prompt). Reads
    /// then throw `.locked`; ``unlock()`` undoes it.
    ///
    /// - Throws: `.operationFailed` when the daemon refuses or does not answer, or the
    ///   collection is not locked within 5 s.
    /// - Important: When it throws, the collection may or may not be locked: ``unlock()`` restores it.
    public func lock() throws(TestKeyringError) {
        let result = try gdbusChecked(
            [
                "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.Lock", "['\(collection)']"
            ],
            doing: "locking the collection")
        try runPrompt(in: result.stdout)
        let deadline = ContinuousClock.now + .seconds(5)
        while try !isLocked() {
            guard ContinuousClock.now < deadline else {
                throw TestKeyringError(.operationFailed, "Lock did not lock \(collection): \(result.stdout)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Unlocks the provider's collection. None has a prompt-free unlock over D-Bus, so this
    /// restarts the daemon with the password (see ``restartDaemon()``).
    ///
    /// - Throws: Like ``restartDaemon()``.
    /// - Important: When it throws, the keyring may have no daemon; a later ``restartDaemon()``
    ///   starts one.
    public func unlock() throws(TestKeyringError) {
        try restartDaemon()
    }

    /// Runs `body` with the login collection locked, then unlocks it whatever `body` did, so
    /// that later tests find it unlocked.
    ///
    /// - Throws: What locking, `body` or unlocking throws (`body`'s error first).
    /// - Important: Unlocking is attempted whether locking or `body` failed; when it throws too,
    ///   the keyring may have no daemon until the next ``restartDaemon()``.
    public func whileLocked<T>(_ body: () throws -> T) throws -> T {
        var result: Result<T, any Error>
        do {
            try lock()
            result = .success(try body())
        } catch {
            result = .failure(error)
        }
        do {
            try unlock()
        } catch {
            if case let .failure(bodyError) = result { throw bodyError }
            throw error
        }
        return try result.get()
    }

    /// Stops the keyring daemon and starts a new one on the same keyring files and password —
    /// what a reboot, or a reinstall of the app, looks like to the keyring: every item is read
    /// back from disk, nothing stays cached. Returns once the provider's collection is the
    /// unlocked default again (up to 15 s).
    ///
    /// - Throws: `.operationFailed` when the old daemon does not go away, `.startFailed` when
    ///   the new one does not come up (with its output).
    /// - Important: When it throws, the keyring may have no daemon; a later call starts one.
    public func restartDaemon() throws(TestKeyringError) {
        if let pid = try secretsOwner() {
            // Only a daemon of this keyring: its environment names this directory.
            guard processBelongsHere(pid) else {
                throw TestKeyringError(
                    .operationFailed,
                    "process \(pid) owns org.freedesktop.secrets on the private bus but is not this keyring's daemon")
            }
            if provider == .keePassXC, try !isLocked() {
                // KeePassXC saves a changed database a moment after the change, and always before
                // it locks it: locked, nothing is lost when it is killed.
                try lock()
            }
            if provider == .kWallet {
                // kwalletd5 writes a wallet to disk when it closes it, not on every change.
                _ = try gdbusChecked(
                    [
                        "--dest", "org.kde.kwalletd5", "--object-path", "/modules/kwalletd5",
                        "--method", "org.kde.KWallet.closeAllWallets"
                    ], doing: "closing the KDE wallets")
            }
            kill(pid, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(10)
            var killed = false
            while try secretsOwner() != nil {
                guard ContinuousClock.now < deadline else {
                    throw TestKeyringError(.operationFailed, "the keyring daemon (\(pid)) did not stop")
                }
                // A daemon started from a thread that blocks SIGTERM never sees it.
                if !killed && ContinuousClock.now + .milliseconds(9_500) > deadline {
                    kill(pid, SIGKILL)
                    killed = true
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        do {
            try startProvider()
        } catch {
            throw TestKeyringError(.startFailed, "could not start \(provider.displayName): \(error)")
        }
        try waitUntilReady()
    }

    private func processBelongsHere(_ pid: Int32) -> Bool {
        for file in ["environ", "cmdline"] {
            if let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)"),
                data.range(of: Data(root.path.utf8)) != nil
            {
                return true
            }
        }
        return false
    }

    /// The process that owns `org.freedesktop.secrets` on the private bus, or `nil`.
    private func secretsOwner() throws(TestKeyringError) -> Int32? {
        let owned = try gdbusChecked(
            [
                "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                "--method", "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.secrets"
            ],
            doing: "asking the private bus who owns org.freedesktop.secrets")
        guard owned.stdout.contains("true") else { return nil }
        let result = try gdbusResult([
            "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
            "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID",
            "org.freedesktop.secrets"
        ])
        // The owner went away between the two questions: there is none now.
        if result.status != 0 && result.stderr.contains("NameHasNoOwner") { return nil }
        guard result.status == 0 else {
            throw TestKeyringError(.operationFailed, "asking for the keyring daemon's pid failed: \(result.stderr)")
        }
        // "(uint32 1234,)"
        guard let type = result.stdout.range(of: "uint32 ") else { return nil }
        return Int32(result.stdout[type.upperBound...].prefix { $0.isNumber })
    }

    /// Waits until the provider's collection is the default and unlocked.
    private func waitUntilReady() throws(TestKeyringError) {
        let deadline = ContinuousClock.now + .seconds(15)
        var last = ""
        while ContinuousClock.now < deadline {
            let alias = try gdbusResult([
                "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.ReadAlias", "default"
            ])
            last = alias.stderr + alias.stdout
            if alias.status == 0, alias.stdout.contains(collection), (try? isLocked()) == false {
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestKeyringError(
            .startFailed,
            """
            the private keyring's \(collection) did not become the unlocked default collection within 15 s \
            (last answer: \(last.trimmingCharacters(in: .whitespacesAndNewlines))); \
            \(provider.displayName) said: \(log(provider.logName))
            """)
    }

    private func gdbusResult(_ arguments: [String]) throws(TestKeyringError) -> Subprocess.Result {
        do {
            return try gdbus(arguments)
        } catch {
            throw TestKeyringError(.operationFailed, "could not run gdbus: \(error)")
        }
    }

    func gdbusChecked(_ arguments: [String], doing what: String) throws(TestKeyringError) -> Subprocess.Result {
        let result = try gdbusResult(arguments)
        guard result.status == 0 else {
            throw TestKeyringError(
                .operationFailed, "\(what) failed: \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return result
    }

    private func gdbus(_ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run(
            tools.gdbus, ["call", "--address", busAddress, "--timeout", "5"] + arguments,
            environment: daemonEnvironment, scratch: scratch, timeout: .seconds(10))
    }

    private static func removeTree(_ url: URL) {
        // Only our own fresh temporary directory, on a failed start.
        try? FileManager.default.removeItem(at: url)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
