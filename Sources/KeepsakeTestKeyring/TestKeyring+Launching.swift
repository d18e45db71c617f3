import Foundation

#if canImport(Glibc)
import Glibc
#endif

// Starting and stopping one: the temporary directory, the bus, the provider, the cleanup.

extension TestKeyring {
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

    /// Starts a new private bus for child processes with no Secret Service on it yet: nothing
    /// owns `org.freedesktop.secrets`, and nothing can be activated there. This process's
    /// environment is not changed. ``restartDaemon()`` starts the provider later;
    /// ``suspendDaemon()`` then makes it a provider that never answers. Stop it with ``stop()``.
    ///
    /// For tests of what a client does with a bus but no provider, or a hung one:
    ///
    /// ```swift
    /// let bus = try TestKeyring.startWithoutProvider()
    /// defer { bus.stop() }
    /// try bus.restartDaemon()  // a provider…
    /// try bus.suspendDaemon()  // …that never answers
    /// // run a child process with DBUS_SESSION_BUS_ADDRESS=bus.busAddress
    /// ```
    ///
    /// - Parameter provider: The provider ``restartDaemon()`` will start.
    /// - Throws: `.toolsMissing`, `.startFailed` (with the bus's output).
    /// - Important: When it throws, nothing is left running and the temporary directory is
    ///   removed.
    public static func startWithoutProvider(provider: Provider = .gnomeKeyring) throws(TestKeyringError) -> TestKeyring
    {
        let tools = try findTools(path: ProcessInfo.processInfo.environment["PATH"], provider: provider)
        return try launch(tools: tools, ownership: .started, provider: provider, startingProvider: false)
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
    func tearDown() {
        closeWatchdog()
        let deadline = ContinuousClock.now + .seconds(10)
        while FileManager.default.fileExists(atPath: root.path) && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// The name of the file in ``root`` that records the bus address: what ``attach(environment:)``
    /// checks to recognise a running private keyring.
    static let markerName = ".keepsake-test-keyring"

    static func launch(
        tools: Tools, ownership: Ownership, provider: Provider, startingProvider: Bool = true
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
            if startingProvider {
                try keyring.startProvider()
                try keyring.waitUntilReady()
            }
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

    static func makeRoot() throws(TestKeyringError) -> URL {
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

    func startBus() throws {
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

    static func removeTree(_ url: URL) {
        // Only our own fresh temporary directory, on a failed start.
        try? FileManager.default.removeItem(at: url)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
