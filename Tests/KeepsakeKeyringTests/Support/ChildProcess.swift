import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeTrial
import Testing

/// Runs store calls in a child process with another session bus.
///
/// GLib connects to the session bus once per process and keeps that connection, so "no bus",
/// "no provider" and "a hung provider" can only be met by a process that starts in such an
/// environment. The child is this test binary again, running only
/// ``KeyringChildProcess/callsInThisEnvironment()``, which writes what each call did to a file.
enum ChildProcess {
    static let outputVariable = "KEEPSAKE_KEYRING_CHILD_OUTPUT"
    static let timeoutVariable = "KEEPSAKE_KEYRING_CHILD_TIMEOUT_MS"

    /// Whether this process is such a child.
    static var isChild: Bool { ProcessInfo.processInfo.environment[outputVariable] != nil }

    /// What one call did in the child.
    struct Outcome: Codable, Equatable, CustomStringConvertible {
        /// `KeepsakeError.Code.rawValue`, or `nil` when the call succeeded.
        var code: String?
        var message: String?
        var store: String?
        var key: String?
        /// The GError kept as the cause.
        var domain: String?
        var causeCode: Int?
        var causeMessage: String?
        /// For `diagnose`: the diagnosis status.
        var status: String?
        var seconds: Double

        var description: String {
            "\(status ?? code ?? "ok") after \(seconds) s: \(message ?? "") [\(domain ?? "-") \(causeCode ?? 0): \(causeMessage ?? "")]"
        }
    }

    static let calls = ["diagnose", "open", "data", "keys", "setData", "trial"]

    /// Starts the child with `changes` to this process's environment, waits for it, and
    /// returns each call's outcome by name.
    static func run(environment changes: [String: String?], timeoutMilliseconds: Int) throws -> [String: Outcome] {
        let output = PrivateKeyring.scratch.appendingPathComponent("child-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: output) }
        var environment = changes
        environment[outputVariable] = output.path
        environment[timeoutVariable] = String(timeoutMilliseconds)
        // This test binary: swift-testing runs it with `--testing-library swift-testing`.
        let binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let result = try Shell.run(
            [binary, "--testing-library", "swift-testing", "--filter", "KeyringChildProcess"],
            environment: environment, timeout: .seconds(120))
        guard FileManager.default.fileExists(atPath: output.path) else {
            Issue.record(
                "the child process wrote no outcomes (status \(result.status)):\n\(result.stdout)\n\(result.stderr)")
            return [:]
        }
        return try JSONDecoder().decode([String: Outcome].self, from: Data(contentsOf: output))
    }

    /// The child's side: runs every call with the deadline it was given and writes the outcomes.
    static func performCalls() throws {
        let environment = ProcessInfo.processInfo.environment
        let path = try #require(environment[outputVariable])
        let milliseconds = Int(environment[timeoutVariable] ?? "") ?? 1000
        let timeout = Duration.milliseconds(milliseconds)
        let service = "org.keepsake.test.child"
        var outcomes: [String: Outcome] = [:]

        func measure(_ name: String, _ body: () throws(KeepsakeError) -> Void) {
            let start = ContinuousClock.now
            var outcome = Outcome(seconds: 0)
            do throws(KeepsakeError) {
                try body()
            } catch {
                outcome.code = error.code.rawValue
                outcome.message = error.message
                outcome.store = error.store
                outcome.key = error.key
                if case let .library(domain, code, message)? = error.cause {
                    outcome.domain = domain
                    outcome.causeCode = code
                    outcome.causeMessage = message
                }
            }
            let elapsed = ContinuousClock.now - start
            outcome.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            outcomes[name] = outcome
        }

        let store = try KeyringStore(service: service, timeout: timeout)
        let start = ContinuousClock.now
        let diagnosis = KeyringStore.diagnose(timeout: timeout)
        let elapsed = ContinuousClock.now - start
        var diagnosed = Outcome(
            status: diagnosis.status.rawValue,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        if let error = diagnosis.error {
            diagnosed.code = error.code.rawValue
            diagnosed.message = error.message
            if case let .library(domain, code, message)? = error.cause {
                diagnosed.domain = domain
                diagnosed.causeCode = code
                diagnosed.causeMessage = message
            }
        }
        outcomes["diagnose"] = diagnosed
        measure("open") { () throws(KeepsakeError) in _ = try KeyringStore.open(service: service, timeout: timeout) }
        measure("data") { () throws(KeepsakeError) in _ = try store.data(forKey: "trialInfo") }
        measure("keys") { () throws(KeepsakeError) in _ = try store.keys() }
        measure("setData") { () throws(KeepsakeError) in try store.setData(Data("{}".utf8), forKey: "trialInfo") }
        measure("trial") { () throws(KeepsakeError) in
            let status = TrialGuard(store: store, length: .days(14), deviceIdentity: "d").status()
            if case let .unknown(error) = status { throw error }
        }
        try JSONEncoder().encode(outcomes).write(to: URL(fileURLWithPath: path))
    }
}

/// Only in a child process started by ``ChildProcess/run(environment:timeoutMilliseconds:)``.
@Suite(
    .enabled(
        if: ChildProcess.isChild,
        "runs only inside a child process started by the no-bus, no-provider and hung-provider keyring tests"))
struct KeyringChildProcess {
    @Test("store calls in this process's environment (child process only)")
    func callsInThisEnvironment() throws {
        try ChildProcess.performCalls()
    }
}
