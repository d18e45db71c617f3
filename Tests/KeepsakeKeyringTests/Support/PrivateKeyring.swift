import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeTestKeyring
import Testing

/// This test process's private keyring (`KeepsakeTestKeyring.TestKeyring.shared()`: the one
/// `keepsake-test-keyring` runs the tests in, or one started in-process when there is none and
/// no other session bus is reachable), and what tests do to it: restart the daemon on the same
/// files, lock the login collection, talk to it with `secret-tool`.
enum PrivateKeyring {
    /// This process's environment now (the in-process keyring changes it when it starts).
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// Why the keyring tests cannot run here (tools missing, or a session bus that is not a
    /// private keyring's is reachable), or `nil`.
    static let unavailableReason = TestKeyring.unavailableReason()

    /// The keyring, started or attached to on first use.
    static var keyring: TestKeyring {
        get throws { try TestKeyring.shared() }
    }

    /// The keyring's scratch directory (the system's temporary directory before one runs).
    static var scratch: URL {
        do {
            return try keyring.scratch
        } catch {
            return URL(fileURLWithPath: NSTemporaryDirectory())
        }
    }

    /// The provider's default collection (gnome-keyring's `login`, KeePassXC's `keepsake`,
    /// KWallet's `kdewallet`).
    static var collection: String {
        get throws { try keyring.collection }
    }

    /// The provider the keyring runs.
    static var provider: TestKeyring.Provider {
        get throws { try keyring.provider }
    }

    /// Tells the keyring's cleanup about a process a test started, so that it is killed at the
    /// end of the run even if the test crashes before stopping it.
    static func register(_ process: Process) throws {
        try keyring.adopt(processID: process.processIdentifier)
    }

    /// A service name no other test uses, so every test starts with no items.
    static func uniqueService(_ purpose: String) -> String {
        "org.keepsake.test.\(purpose).\(UUID().uuidString.prefix(8))"
    }

    /// A new store for a fresh service.
    static func freshStore(_ purpose: String, timeout: Duration = .seconds(10)) throws -> KeyringStore {
        try KeyringStore(service: uniqueService(purpose), timeout: timeout)
    }

    /// The provider this run's keyring runs, as the runner (`--provider`) or
    /// `KEEPSAKE_TEST_KEYRING_PROVIDER` chose it: gnome-keyring unless told otherwise. Read from
    /// the environment, so that a suite's traits can use it before any keyring is started.
    static let runningProvider =
        TestKeyring.Provider(name: ProcessInfo.processInfo.environment[TestKeyring.Variable.provider] ?? "")
        ?? .gnomeKeyring

    /// A trait that skips a test against `provider`, saying why: for behaviour that belongs to
    /// that provider and that the test cannot hold it to (the skip is reported, never counted
    /// as a pass).
    static func notAgainst(_ provider: TestKeyring.Provider, _ why: String) -> ConditionTrait {
        .enabled(
            if: runningProvider != provider, Comment(rawValue: "not run against \(provider.displayName): \(why)"))
    }

    /// Why tests where secret-tool stores over an existing item do not run against KeePassXC.
    static let keePassXCReplaceDialog =
        "secret-tool storing over an item another client created makes KeePassXC ask the user to confirm (a dialog a headless session never answers)"

    /// The attributes a provider adds to every item besides the ones a client gives it:
    /// KeePassXC exposes its entry's fields.
    static var providerAttributes: Set<String> {
        runningProvider == .keePassXC ? ["Title", "UserName", "URL", "Notes", "Path", "Uuid"] : []
    }

    /// How `doctor` names the running provider, and the process it finds behind it.
    static var expectedProvider: (kind: KeyringProvider.Kind, process: String) {
        switch runningProvider {
        case .gnomeKeyring: return (.gnomeKeyring, "gnome-keyring-daemon")
        case .keePassXC: return (.keePassXC, "keepassxc")
        case .kWallet: return (.kWallet, "kwalletd5")
        }
    }

    // MARK: The daemon

    /// Restarts the provider's daemon on the same keyring files and password; returns once
    /// libsecret finds it usable.
    static func restartDaemon() throws {
        try keyring.restartDaemon()
        try waitUntilUsable()
    }

    /// Waits (up to 15 s) until the keyring is usable through libsecret.
    static func waitUntilUsable() throws {
        let start = ContinuousClock.now
        var last = KeyringStore.diagnose(timeout: .seconds(2))
        while !last.isUsable && ContinuousClock.now - start < .seconds(15) {
            Thread.sleep(forTimeInterval: 0.1)
            last = KeyringStore.diagnose(timeout: .seconds(2))
        }
        try #require(last.isUsable, "the private keyring did not come back: \(last)")
    }

    /// Locks the login collection, runs `body`, then unlocks it again whatever `body` did:
    /// later tests always find an unlocked keyring.
    static func whileLocked(_ body: () throws -> Void) throws {
        try keyring.whileLocked(body)
        try waitUntilUsable()
    }

    // MARK: secret-tool, an independent client

    /// Runs secret-tool, each run a new secret session; on KWallet, again when the session was
    /// one of the one in 256 it gets wrong. A refused session — its opening refused ("Client
    /// public key size is invalid": libsecret's public key was short) or its secrets refused
    /// ("Can't find session") — is no answer at all, and is run again up to 5 more times. An
    /// undecodable secret (the session's key differs from KWallet's: see
    /// LibsecretCall.undecodable) is silent — a lookup exits 1 printing nothing, a search prints
    /// an item without its `secret` line — and cannot be told from a lookup that found nothing:
    /// such an answer is asked for twice more, and the last answer stands.
    static func secretTool(_ arguments: [String], stdin: Data? = nil, timeout: Duration = .seconds(60)) throws
        -> Shell.Result
    {
        var result = try Shell.run(arguments, stdin: stdin, timeout: timeout)
        guard runningProvider == .kWallet else { return result }
        var refused = 0
        var silent = 0
        while true {
            if sessionRefused(result) {
                guard refused < 5 else { return result }
                refused += 1
            } else if silentlyUndecodable(arguments, result) {
                guard silent < 2 else { return result }
                silent += 1
            } else {
                return result
            }
            result = try Shell.run(arguments, stdin: stdin, timeout: timeout)
        }
    }

    private static func sessionRefused(_ result: Shell.Result) -> Bool {
        let output = result.stderr + result.stdout
        return result.status != 0
            && (output.contains("Client public key size is invalid") || output.contains("Can't find session"))
    }

    private static func silentlyUndecodable(_ arguments: [String], _ result: Shell.Result) -> Bool {
        let command = arguments.joined(separator: " ")
        if command.contains("secret-tool lookup") && result.status != 0 && result.stderr.isEmpty {
            return true
        }
        if command.contains("secret-tool search") {
            let lines = result.stdout.split(separator: "\n")
            return lines.filter { $0.hasPrefix("[") }.count != lines.filter { $0.hasPrefix("secret = ") }.count
        }
        return false
    }

    /// `secret-tool store --label=LABEL attribute value …` with `secret` on stdin.
    static func secretToolStore(label: String, attributes: [(String, String)], secret: String) throws {
        let result = try secretTool(
            ["secret-tool", "store", "--label=\(label)"] + attributes.flatMap { [$0.0, $0.1] },
            stdin: Data(secret.utf8), timeout: .seconds(15))
        try #require(result.status == 0, "secret-tool store failed: \(result.stderr)")
    }

    /// `secret-tool lookup service S username KEY`: the secret, or `nil` when secret-tool finds none.
    static func secretToolLookup(service: String, key: String) throws -> String? {
        let result = try secretTool(["secret-tool", "lookup", "service", service, "username", key])
        if result.status != 0 {
            try #require(result.stderr.isEmpty, "secret-tool lookup failed: \(result.stderr)")
            return nil
        }
        return result.stdout
    }

    /// One item as `secret-tool search --all` prints it.
    struct ListedItem: Equatable {
        var label: String
        var secret: String
        var attributes: [String: String]
    }

    /// Every item with `service` (and `username`, when given), as secret-tool sees them.
    static func secretToolSearch(service: String, key: String? = nil) throws -> [ListedItem] {
        var query = ["service", service]
        if let key { query += ["username", key] }
        // secret-tool prints attributes on stderr and the rest on stdout: one stream, line
        // buffered, keeps each item's lines together.
        let result = try secretTool(
            ["/bin/sh", "-c", #"exec stdbuf -oL secret-tool search --all "$@" 2>&1"#, "sh"] + query)
        var items: [ListedItem] = []
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = String(line)
            if line.hasPrefix("[") {
                items.append(ListedItem(label: "", secret: "", attributes: [:]))
            } else if let range = line.range(of: " = "), !items.isEmpty {
                let name = String(line[..<range.lowerBound])
                let value = String(line[range.upperBound...])
                switch name {
                case "label": items[items.count - 1].label = value
                case "secret": items[items.count - 1].secret = value
                case "schema": items[items.count - 1].attributes["xdg:schema"] = value
                case _ where name.hasPrefix("attribute."):
                    items[items.count - 1].attributes[String(name.dropFirst("attribute.".count))] = value
                default: break
                }
            }
        }
        return items
    }
}

/// Running a command and collecting what it printed.
enum Shell {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `arguments` (looked up in PATH), with `environment` changes (`nil` unsets), and
    /// waits for it; kills it after `timeout`.
    ///
    /// Output goes to files, not pipes: a daemon the command starts may keep the descriptors
    /// open, and a pipe would then never reach end-of-file.
    static func run(
        _ arguments: [String], stdin: Data? = nil, environment changes: [String: String?] = [:],
        timeout: Duration = .seconds(60)
    ) throws -> Result {
        let directory = PrivateKeyring.scratch.appendingPathComponent("shell-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }  // scratch files only
        let outURL = directory.appendingPathComponent("stdout"), errURL = directory.appendingPathComponent("stderr")
        let inURL = directory.appendingPathComponent("stdin")
        try (stdin ?? Data()).write(to: inURL)
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        let input = try FileHandle(forReadingFrom: inURL)
        defer {
            try? out.close()
            try? err.close()
            try? input.close()
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in changes { environment[name] = value }
        process.environment = environment
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        // SIGKILL: a process started from a test thread inherits its blocked signal mask, SIGTERM included.
        let killer = DispatchWorkItem { [process] in if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(timeout.components.seconds)), execute: killer)
        process.waitUntilExit()
        killer.cancel()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }
}
