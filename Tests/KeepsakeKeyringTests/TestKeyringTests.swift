import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeKeyring
import KeepsakeTestKeyring
import KeepsakeTesting
import Testing

/// What a child process did with `TestKeyring.shared()` (see ``TestKeyringChild``).
struct TestKeyringChildReport: Codable {
    /// The `TestKeyringError` code, when `shared()` threw.
    var refusal: String?
    var refusalMessage: String?
    /// The keyring's directory, when one was started.
    var root: String?
    var busAddressInEnvironment: String?
    var configHomeInEnvironment: String?
    /// What a store in this process read: after a write, after a restart, while locked, after unlocking.
    var written: String?
    var afterRestart: String?
    var whileLocked: String?
    var afterUnlock: String?
}

enum TestKeyringChildRun {
    static let modeVariable = "KEEPSAKE_TESTKEYRING_CHILD_MODE"
    static let outputVariable = "KEEPSAKE_TESTKEYRING_CHILD_OUTPUT"

    /// Runs this test binary again, only ``TestKeyringChild``, with `environment` exactly.
    static func run(mode: String, environment: [String: String]) throws -> TestKeyringChildReport {
        let output = PrivateKeyring.scratch.appendingPathComponent(
            "testkeyring-child-\(UUID().uuidString.prefix(8)).json")
        var environment = environment
        environment[modeVariable] = mode
        environment[outputVariable] = output.path
        let binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let result = try Shell.run(
            [binary, "--testing-library", "swift-testing", "--filter", "TestKeyringChild"],
            environment: exactly(environment), timeout: .seconds(120))
        let data = try #require(
            FileManager.default.contents(atPath: output.path),
            "the child wrote nothing (status \(result.status)):\n\(result.stdout)\n\(result.stderr)")
        return try JSONDecoder().decode(TestKeyringChildReport.self, from: data)
    }

    /// The changes that turn this process's environment into `environment`.
    static func exactly(_ environment: [String: String]) -> [String: String?] {
        var changes: [String: String?] = [:]
        for name in ProcessInfo.processInfo.environment.keys where environment[name] == nil {
            changes[name] = .some(nil)
        }
        for (name, value) in environment { changes[name] = value }
        return changes
    }

    /// This process's environment without any trace of a private keyring or a session bus (the
    /// provider choice included: the child starts the default one, gnome-keyring; the other
    /// providers are driven through the runner).
    static func bareEnvironment(runtime: URL) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            TestKeyring.Variable.inside, TestKeyring.Variable.root, TestKeyring.Variable.bus,
            TestKeyring.Variable.password, TestKeyring.Variable.scratch, TestKeyring.Variable.provider,
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"
        ] {
            environment[name] = nil
        }
        environment["XDG_RUNTIME_DIR"] = runtime.path
        return environment
    }
}

/// Only in a child process started by ``TestKeyringChildRun/run(mode:environment:)``.
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment[TestKeyringChildRun.modeVariable] != nil,
        "runs only inside a child process started by the TestKeyring tests"))
struct TestKeyringChild {
    @Test("TestKeyring.shared() in this process's environment (child process only)")
    func sharedInThisEnvironment() throws {
        let environment = ProcessInfo.processInfo.environment
        let output = try #require(environment[TestKeyringChildRun.outputVariable])
        var report = TestKeyringChildReport()
        defer {
            // The parent's assertions read this file; a failure to write it fails them.
            if let data = try? JSONEncoder().encode(report) {
                _ = FileManager.default.createFile(atPath: output, contents: data)
            }
        }
        let keyring: TestKeyring
        do {
            keyring = try TestKeyring.shared()
        } catch {
            report.refusal = error.code.rawValue
            report.refusalMessage = error.message
            return
        }
        report.root = keyring.root.path
        report.busAddressInEnvironment = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
        report.configHomeInEnvironment = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"]
        let store = try KeyringStore(service: "org.keepsake.test.in-process", timeout: .seconds(10))
        func read() -> String {
            do throws(KeepsakeError) {
                return (try store.data(forKey: "k")).map { String(decoding: $0, as: UTF8.self) } ?? "<absent>"
            } catch {
                return error.code.rawValue
            }
        }
        try store.setData(Data("in-process".utf8), forKey: "k")
        report.written = read()
        try keyring.restartDaemon()
        report.afterRestart = read()
        try keyring.lock()
        report.whileLocked = read()
        try keyring.unlock()
        report.afterUnlock = read()
    }
}

extension KeyringTests {
    @Suite("TestKeyring: the private keyring apps test with")
    struct TestKeyringTests {
        @Test("without dbus-daemon, gdbus and the provider's programs in PATH the reason names them and the packages")
        func toolsMissing() throws {
            let empty = PrivateKeyring.scratch.appendingPathComponent("empty-path-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
            let reason = try #require(TestKeyring.unavailableReason(environment: ["PATH": empty.path]))
            #expect(
                reason.hasPrefix(
                    "dbus-daemon, gdbus, gnome-keyring-daemon not found, so no private keyring with gnome-keyring"),
                "\(reason)")
            #expect(reason.contains("apt-get install -y --no-install-recommends dbus libglib2.0-bin gnome-keyring"))
            let kwallet = try #require(
                TestKeyring.unavailableReason(
                    environment: ["PATH": empty.path, TestKeyring.Variable.provider: "kwallet"]))
            #expect(kwallet.hasPrefix("dbus-daemon, gdbus, kwalletd5"), "\(kwallet)")
            #expect(kwallet.contains("libkf5wallet-bin libqca-qt5-2-plugins"), "\(kwallet)")
            let unknown = try #require(
                TestKeyring.unavailableReason(environment: [TestKeyring.Variable.provider: "nope"]))
            #expect(unknown.contains("names no provider; use one of gnome-keyring, keepassxc, kwallet"), "\(unknown)")
            let error = try #require(throws: TestKeyringError.self) {
                _ = try TestKeyring.attach(environment: ["PATH": empty.path])
            }
            #expect(error.code == .toolsMissing)
            // Here they are installed: no reason.
            #expect(TestKeyring.unavailableReason() == nil)
        }

        @Test("refuses a session bus it did not start: DBUS_SESSION_BUS_ADDRESS, or $XDG_RUNTIME_DIR/bus")
        func refusesOtherBus() throws {
            let bus = try PrivateBus()
            defer { bus.stop() }
            let path = ProcessInfo.processInfo.environment["PATH"]
            // Inside the harness, but pointed at another bus.
            var inside = try PrivateKeyring.keyring.childEnvironment()
            inside["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            let attachError = try #require(throws: TestKeyringError.self) {
                _ = try TestKeyring.attach(environment: inside)
            }
            #expect(attachError.code == .realSession)
            #expect(attachError.message.contains(bus.address))
            #expect(
                TestKeyring.unavailableReason(environment: inside)?.hasPrefix(
                    "refused: DBUS_SESSION_BUS_ADDRESS is \(bus.address)") == true)
            // Outside any harness, with the address set.
            let outside = ["PATH": path ?? "", "DBUS_SESSION_BUS_ADDRESS": bus.address]
            #expect(
                TestKeyring.unavailableReason(environment: outside)?.hasPrefix(
                    "refused: DBUS_SESSION_BUS_ADDRESS points at a session bus this library did not start (\(bus.address))"
                ) == true)
            // Outside, with no address but a bus socket in the runtime directory.
            let runtime = PrivateKeyring.scratch.appendingPathComponent("runtime-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            #expect(
                TestKeyring.unavailableReason(environment: ["PATH": path ?? "", "XDG_RUNTIME_DIR": runtime.path]) == nil
            )
            try Data().write(to: runtime.appendingPathComponent("bus"))
            #expect(
                TestKeyring.unavailableReason(environment: ["PATH": path ?? "", "XDG_RUNTIME_DIR": runtime.path])?
                    .hasPrefix("refused: \(runtime.path)/bus is a session bus this library did not start") == true)
            // A marker that names another bus is not a harness.
            inside[TestKeyring.Variable.bus] = bus.address
            let markerError = try #require(throws: TestKeyringError.self) {
                _ = try TestKeyring.attach(environment: inside)
            }
            #expect(markerError.code == .notInsideHarness)
        }

        @Test("a test process pointed at another bus refuses, and starts nothing there")
        func childRefuses() throws {
            let bus = try PrivateBus()
            defer { bus.stop() }
            let runtime = PrivateKeyring.scratch.appendingPathComponent("runtime-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            var environment = TestKeyringChildRun.bareEnvironment(runtime: runtime)
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            let report = try TestKeyringChildRun.run(mode: "shared", environment: environment)
            #expect(report.refusal == "realSession", "\(report)")
            #expect(report.refusalMessage?.contains(bus.address) == true)
            #expect(report.root == nil && report.written == nil)
            let owner = try Shell.run(
                [
                    "gdbus", "call", "--address", bus.address, "--dest", "org.freedesktop.DBus", "--object-path",
                    "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.secrets"
                ])
            #expect(owner.stdout.contains("false"), "nothing took org.freedesktop.secrets: \(owner.stdout)")
        }

        @Test(
            "with no bus around, a test process starts its own keyring in-process: write, restart, lock, unlock; cleaned up at exit"
        )
        func childStartsInProcess() throws {
            let runtime = PrivateKeyring.scratch.appendingPathComponent("runtime-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            let report = try TestKeyringChildRun.run(
                mode: "shared", environment: TestKeyringChildRun.bareEnvironment(runtime: runtime))
            #expect(report.refusal == nil, "\(report)")
            let root = try #require(report.root)
            #expect(report.busAddressInEnvironment == "unix:path=\(root)/bus")
            #expect(report.configHomeInEnvironment == "\(root)/home/config")
            #expect(report.written == "in-process")
            #expect(report.afterRestart == "in-process")
            #expect(report.whileLocked == "locked")
            #expect(report.afterUnlock == "in-process")
            // The watchdog removes the directory once the child has exited.
            let deadline = ContinuousClock.now + .seconds(10)
            while FileManager.default.fileExists(atPath: root) && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(!FileManager.default.fileExists(atPath: root), "\(root) was not cleaned up")
        }

        @Test("start() gives child processes a keyring of their own; stop() kills it and removes its directory")
        func startAndStop() throws {
            let keyring = try TestKeyring.start()
            let root = keyring.root.path
            let environment = keyring.childEnvironment()
            let store = try Shell.run(
                ["secret-tool", "store", "--label=x", "service", "s", "username", "u"],
                stdin: Data("secret".utf8), environment: TestKeyringChildRun.exactly(environment))
            #expect(store.status == 0, "\(store.stderr)")
            try keyring.restartDaemon()
            let lookup = try Shell.run(
                ["secret-tool", "lookup", "service", "s", "username", "u"],
                environment: TestKeyringChildRun.exactly(environment))
            #expect(lookup.stdout == "secret")
            // Not this process's keyring: the test's own keyring does not hold the item.
            #expect(try PrivateKeyring.secretToolLookup(service: "s", key: "u") == nil)
            #expect(try keyring.isLocked() == false)
            try keyring.lock()
            #expect(try keyring.isLocked())
            keyring.stop()
            #expect(!FileManager.default.fileExists(atPath: root))
            let survivors = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { entry in
                guard Int32(entry) != nil, let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ")
                else { return false }
                return environ.range(of: Data(root.utf8)) != nil
            }
            #expect(survivors.isEmpty, "processes of the stopped keyring still run: \(survivors)")
        }

        @Test(
            "startWithoutProvider() gives a bus nobody serves; restartDaemon() starts the provider, suspendDaemon() hangs it; stop() cleans up"
        )
        func busWithoutProvider() throws {
            let keyring = try TestKeyring.startWithoutProvider()
            let root = keyring.root.path
            func secretsOwned() throws -> Bool {
                try Shell.run(
                    [
                        "gdbus", "call", "--address", keyring.busAddress, "--dest", "org.freedesktop.DBus",
                        "--object-path", "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.NameHasOwner",
                        "org.freedesktop.secrets"
                    ]
                ).stdout.contains("true")
            }
            #expect(try !secretsOwned())
            #expect(throws: TestKeyringError.self) { try keyring.suspendDaemon() }
            try keyring.restartDaemon()
            #expect(try keyring.isLocked() == false)
            try keyring.suspendDaemon()
            #expect(try secretsOwned(), "a suspended daemon keeps its name")
            #expect(throws: TestKeyringError.self) { try keyring.isLocked() }
            try keyring.restartDaemon()  // a hung daemon is replaced
            #expect(try keyring.isLocked() == false)
            keyring.stop()
            #expect(!FileManager.default.fileExists(atPath: root))
        }

        @Test("a test that fails inside withPrivateKeyring still stops its keyring")
        func stopsOnFailure() throws {
            struct Failure: Error {}
            var root = ""
            #expect(throws: Failure.self) {
                try TestKeyring.withPrivateKeyring { keyring in
                    root = keyring.root.path
                    throw Failure()
                }
            }
            #expect(!root.isEmpty && !FileManager.default.fileExists(atPath: root))
        }

        @Test("the reinstall simulator wipes the app's four XDG folders only, keeps the keyring, moves the clock")
        func reinstallSimulator() throws {
            let keyring = try PrivateKeyring.keyring
            let app = "com.example.reinstall.\(UUID().uuidString.prefix(8))"
            let other = app + ".other"
            for base in keyring.home.all {
                for name in [app, other] {
                    let folder = base.appendingPathComponent(name)
                    try FileManager.default.createDirectory(
                        at: folder.appendingPathComponent("nested"), withIntermediateDirectories: true)
                    try Data("x".utf8).write(to: folder.appendingPathComponent("nested/file"))
                }
            }
            // Where DefaultsStore(suite:app:) puts it under the keyring's home (named explicitly:
            // other test targets in this process change XDG_CONFIG_HOME).
            let suite = DefaultsStore(path: keyring.home.config.path + "/\(app)/settings.json")
            try suite.set("dark", forKey: "theme")
            let extra = keyring.scratch.appendingPathComponent("extra-\(app)")
            try Data("x".utf8).write(to: extra)
            let item = try KeyringStore(service: app, timeout: .seconds(10))
            try item.setData(Data("kept".utf8), forKey: "trialInfo")

            let clock = TestClock(Date(timeIntervalSince1970: 1_000_000))
            let device = ReinstallSimulator(appID: app, keyring: keyring, clock: clock, alsoRemoving: [extra])
            let report = try device.reinstall(advancingClockBy: 86_400)
            #expect(report.removed.map(\.path) == (keyring.home.appDirectories(app) + [extra]).map(\.path))
            for base in keyring.home.all {
                #expect(!FileManager.default.fileExists(atPath: base.appendingPathComponent(app).path))
                #expect(
                    FileManager.default.fileExists(atPath: base.appendingPathComponent(other).path + "/nested/file"))
            }
            #expect(!FileManager.default.fileExists(atPath: extra.path))
            #expect(clock.now == Date(timeIntervalSince1970: 1_000_000 + 86_400))
            try PrivateKeyring.waitUntilUsable()
            #expect(
                try item.data(forKey: "trialInfo") == Data("kept".utf8), "the keyring kept its item across the restart")
            #expect(try suite.keys() == [])
            // A second uninstall finds nothing to remove.
            #expect(try device.uninstall().removed == [])

            // Nothing outside the keyring's directory, and no app id that is a path.
            let outside = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
                "keepsake-outside-\(UUID().uuidString.prefix(8))")
            try Data("mine".utf8).write(to: outside)
            defer { try? FileManager.default.removeItem(at: outside) }  // this test's own file
            try FileManager.default.createDirectory(
                at: keyring.home.config.appendingPathComponent(app), withIntermediateDirectories: true)
            let unsafe = try #require(throws: TestKeyringError.self) {
                try ReinstallSimulator(appID: app, keyring: keyring, alsoRemoving: [outside]).uninstall()
            }
            #expect(unsafe.code == .unsafePath)
            #expect(FileManager.default.fileExists(atPath: outside.path))
            #expect(
                FileManager.default.fileExists(atPath: keyring.home.config.appendingPathComponent(app).path),
                "nothing was removed")
            for badID in ["", ".", "..", "../\(other)", "a/b"] {
                let error = try #require(throws: TestKeyringError.self) {
                    try ReinstallSimulator(appID: badID, keyring: keyring).uninstall()
                }
                #expect(error.code == .unsafePath, "\(badID)")
            }
            #expect(FileManager.default.fileExists(atPath: keyring.home.config.appendingPathComponent(other).path))
        }

        @Test("keepsake-test-keyring runs a command inside a private keyring and exits with its status")
        func runner() throws {
            let runner = BuiltExecutable(named: "keepsake-test-keyring")
            // Each secret-tool is a new secret session; KWallet gets about one in 256 wrong (its
            // key differs, or its opening is refused): such a call is made again, up to twice.
            let script = """
                printf %s "$KEEPSAKE_TEST_KEYRING_ROOT" > "$1"
                store() { printf %s hello | secret-tool store --label=x service s username u; }
                store || store || store || exit 90
                lookup() { [ "$(secret-tool lookup service s username u)" = hello ]; }
                lookup || lookup || lookup || exit 91
                [ "$DBUS_SESSION_BUS_ADDRESS" = "unix:path=$KEEPSAKE_TEST_KEYRING_ROOT/bus" ] || exit 92
                [ -z "${DISPLAY:-}" ] || exit 93
                # A throwaway home, unless --keep-home: then the caller's (a build tool keeps its caches there).
                if [ "$3" = keep ]; then
                    [ "${XDG_CONFIG_HOME:-unset}" = "$2" ] && [ "$HOME" = "$4" ] || exit 94
                else
                    [ "$XDG_CONFIG_HOME" = "$KEEPSAKE_TEST_KEYRING_ROOT/home/config" ] || exit 95
                    [ "$XDG_DATA_HOME" = "$KEEPSAKE_TEST_KEYRING_ROOT/home/data" ] || exit 96
                    [ "$HOME" = "$KEEPSAKE_TEST_KEYRING_ROOT/home" ] && [ -d "$HOME" ] || exit 97
                    touch "$HOME/.written-inside" "$XDG_CONFIG_HOME/app.json" || exit 98
                fi
                exit 7
                """
            let rootFile = PrivateKeyring.scratch.appendingPathComponent("runner-root-\(UUID().uuidString.prefix(8))")
            let configHome = "/nonexistent/runner-test-config"
            let callerHome = "/nonexistent/runner-test-home"
            let caller = ["DISPLAY": ":99", "XDG_CONFIG_HOME": configHome, "HOME": callerHome]
            let kept = try runner.run(
                ["--keep-home", "--", "sh", "-c", script, "sh", rootFile.path, configHome, "keep", callerHome],
                environment: caller)
            #expect(kept.status == 7, "\(kept.stderr)")
            let result = try runner.run(
                ["--", "sh", "-c", script, "sh", rootFile.path, configHome, "throwaway", callerHome],
                environment: caller)
            #expect(result.status == 7, "\(result.stderr)")
            let root = try String(contentsOf: rootFile, encoding: .utf8)
            let own = try PrivateKeyring.keyring.root.path
            #expect(root.hasPrefix("/") && root != own, "a keyring of its own")
            #expect(!FileManager.default.fileExists(atPath: root), "removed after the command")
            #expect(try runner.run(["sh", "-c", "kill -9 $$"]).status == 137)

            // The runner itself killed (as a crashed CI job would be): the watchdog still cleans up.
            let crashRoot = PrivateKeyring.scratch.appendingPathComponent("runner-crash-\(UUID().uuidString.prefix(8))")
            let crashed = try runner.run([
                "sh", "-c", #"printf %s "$KEEPSAKE_TEST_KEYRING_ROOT" > "$1"; kill -KILL $PPID"#,
                "sh", crashRoot.path
            ])
            #expect(crashed.status == SIGKILL, "Process reports the signal that ended the runner")
            let orphanRoot = try String(contentsOf: crashRoot, encoding: .utf8)
            let deadline = ContinuousClock.now + .seconds(10)
            while FileManager.default.fileExists(atPath: orphanRoot) && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(!FileManager.default.fileExists(atPath: orphanRoot), "the watchdog removed \(orphanRoot)")
            let daemons = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { entry in
                guard Int32(entry) != nil,
                    let name = FileManager.default.contents(atPath: "/proc/\(entry)/comm"),
                    ["dbus-daemon\n", "gnome-keyring-d\n"].contains(String(decoding: name, as: UTF8.self)),
                    let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ"),
                    let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
                else { return false }
                return (environ + cmdline).range(of: Data(orphanRoot.utf8)) != nil
            }
            #expect(daemons.isEmpty, "the crashed runner's bus and daemon were killed: \(daemons)")
            let missing = try runner.run(["--", "no-such-command-here"])
            #expect(missing.status == 127)
            #expect(missing.stderr == "keepsake-test-keyring: no-such-command-here: command not found\n")
            #expect(try runner.run([]).status == 2)
            #expect(try runner.run(["--frobnicate"]).status == 2)
            let unstartable = try runner.run(["true"], environment: ["PATH": PrivateKeyring.scratch.path])
            #expect(unstartable.status == 125)
            #expect(unstartable.stderr.contains("not found, so no private keyring"), "\(unstartable.stderr)")
            let unknown = try runner.run(["--provider", "nope", "--", "true"])
            #expect(unknown.status == 2)
            #expect(unknown.stderr.contains("unknown provider nope"), "\(unknown.stderr)")
        }
    }
}
