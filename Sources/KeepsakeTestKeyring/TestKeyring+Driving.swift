import Foundation

#if canImport(Glibc)
import Glibc
#endif

// Driving a running keyring: locking, unlocking, restarting its daemon.

extension TestKeyring {
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

    /// Unlocks the provider's collection and returns once it is the unlocked default again (up
    /// to 15 s). KeePassXC unlocks its database in place, given the password over its own D-Bus
    /// interface; gnome-keyring and KWallet have no prompt-free unlock over D-Bus, so their
    /// daemon is restarted with the password (see ``restartDaemon()``).
    ///
    /// KeePassXC is never restarted to unlock it: a KeePassXC 2.7.4 that has just opened its
    /// database at start-up crashes (SIGSEGV) when a client searches it while it is still
    /// showing that database. A keyring watch waits for it to settle before it reads again
    /// (KeepsakeKeyring's `KeyringWatchPolicy`); a test's own reads would not.
    ///
    /// - Throws: Like ``restartDaemon()``; `.operationFailed` when KeePassXC refuses the unlock.
    /// - Important: When it throws, the keyring may have no daemon; a later ``restartDaemon()``
    ///   starts one.
    public func unlock() throws(TestKeyringError) {
        if provider == .keePassXC, try hasOwner(Self.keePassXCWindow) {
            try unlockKeePassXC()
            try waitUntilReady()
        } else {
            try restartDaemon()
        }
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
            kill(pid, SIGCONT)  // after suspendDaemon(): a stopped daemon neither answers nor ends
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

    /// Stops the provider's daemon with `SIGSTOP`: it keeps owning `org.freedesktop.secrets`,
    /// messages to it are queued, and no reply ever comes — a hung provider, for testing a
    /// client's deadlines. ``restartDaemon()`` replaces it with a working one; cleanup kills it.
    ///
    /// - Throws: `.operationFailed` when no daemon of this keyring owns the name.
    /// - Important: When it throws, nothing was stopped.
    public func suspendDaemon() throws(TestKeyringError) {
        guard let pid = try secretsOwner(), processBelongsHere(pid) else {
            throw TestKeyringError(
                .operationFailed, "no daemon of this keyring owns org.freedesktop.secrets to suspend")
        }
        guard kill(pid, SIGSTOP) == 0 else {
            throw TestKeyringError(
                .operationFailed, "could not stop the keyring daemon (\(pid)): \(String(cString: strerror(errno)))")
        }
    }

    func processBelongsHere(_ pid: Int32) -> Bool {
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
    func secretsOwner() throws(TestKeyringError) -> Int32? {
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
    func waitUntilReady() throws(TestKeyringError) {
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
}
