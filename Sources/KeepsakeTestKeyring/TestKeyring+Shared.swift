import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// This process's keyring: started for it, or attached to the runner's.

extension TestKeyring {
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
}
