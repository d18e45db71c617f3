#if CLI
import ArgumentParser
import Foundation
import Keepsake
import KeepsakeTrial

extension Migrate {
    struct Trial: ParsableCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Report or start the trial period kept in a store.",
                    discussion: """
                        EXIT CODES
                          0   not started, or active
                          80  expired
                          81  the clock moved back beyond the tolerance
                          82  unknown: the store is locked or unavailable, or the record
                              is unreadable or newer
                        """,
                    subcommands: [TrialStatusCommand.self, TrialStartCommand.self])
            }
        }
    }
}

/// Options shared by `trial status` and `trial start`.
struct TrialOptions: ParsableArguments {
    @Option(name: .long, help: "The trial's length in days.")
    var lengthDays: Int = 14

    @Option(name: .long, help: ArgumentHelp("Evaluate at this time instead of now (ISO 8601).", valueName: "iso8601"))
    var now: String?

    @Option(name: .long, help: ArgumentHelp("The record's key.", valueName: "key"))
    var key: String = "trialInfo"

    @Option(
        name: .long, help: ArgumentHelp("How far the clock may go back unreported, in minutes.", valueName: "minutes"))
    var toleranceMinutes: Int = 60

    /// The longest trial and the largest tolerance accepted: a century, in days and minutes.
    static let maxLengthDays = 36_525
    static let maxToleranceMinutes = 36_525 * 24 * 60

    func validate() throws {
        guard (1...Self.maxLengthDays).contains(lengthDays) else {
            throw ValidationError("--length-days must be between 1 and \(Self.maxLengthDays)")
        }
        guard (0...Self.maxToleranceMinutes).contains(toleranceMinutes) else {
            throw ValidationError("--tolerance-minutes must be between 0 and \(Self.maxToleranceMinutes)")
        }
        if let now { _ = try parsedNow(now) }
    }

    /// `--now` read as Keepsake reads stored dates: a valid calendar date in the years 0001–9999.
    func parsedNow(_ text: String) throws -> Date {
        do throws(ISO8601.Failure) {
            return try ISO8601.date(from: text)
        } catch {
            throw usageError(
                """
                --now must be an ISO 8601 time such as 2026-01-31T12:00:00Z: \(error.reason) \
                (got '\(text)')
                """)
        }
    }

    /// Runs `body` on the guard; a store that cannot be opened (locked, unavailable, a wrong
    /// key) is the trial's `unknown` state, with the cause.
    func evaluate(
        _ command: some StoreCommand, _ device: DeviceOptions, _ body: (TrialGuard) -> TrialStatus
    ) throws -> TrialStatus {
        do {
            return body(try makeGuard(command, device))
        } catch let error as KeepsakeError {
            return .unknown(error)
        }
    }

    func makeGuard(_ command: some StoreCommand, _ device: DeviceOptions) throws -> TrialGuard {
        let store = try command.openStore()
        let context = device.context()
        let fixed = try now.map(parsedNow)
        return TrialGuard(
            store: store, key: key, length: .days(lengthDays),
            rollbackTolerance: TimeInterval(toleranceMinutes) * 60,
            deviceIdentity: try context.requireDeviceIdentity(), clock: { fixed ?? Date() })
    }
}

/// Prints a trial status and exits with its code.
func report(_ status: TrialStatus, json: Bool) throws {
    let iso: (Date) -> String = isoText
    var object: [String: JSONValue] = [:]
    let code: ExitCode
    switch status {
    case .notStarted:
        object = ["state": "notStarted", "startDate": nil, "daysLeft": nil, "expiresAt": nil]
        code = .success
        if !json { say("Trial not started.") }
    case let .active(trial):
        object = [
            "state": "active", "startDate": .string(iso(trial.start)), "daysLeft": .int(trial.daysLeft),
            "expiresAt": .string(iso(trial.expiresAt))
        ]
        code = .success
        if !json {
            say(
                "Trial active: started \(iso(trial.start)), \(trial.daysLeft) whole days left, ends \(iso(trial.expiresAt))."
            )
        }
    case let .expired(since, start):
        object = ["state": "expired", "startDate": .string(iso(start)), "daysLeft": 0, "expiresAt": .string(iso(since))]
        code = ExitCode(80)
        if !json { say("Trial expired on \(iso(since)) (started \(iso(start))).") }
    case let .clockMovedBack(lastSeen, now):
        object = [
            "state": "clockMovedBack", "startDate": nil, "daysLeft": nil, "expiresAt": nil,
            "lastSeen": .string(iso(lastSeen)), "now": .string(iso(now))
        ]
        code = ExitCode(81)
        if !json { say("The clock moved back: it reads \(iso(now)), but \(iso(lastSeen)) was already seen.") }
    case let .unknown(error):
        object = ["state": "unknown", "startDate": nil, "daysLeft": nil, "expiresAt": nil, "error": error.json]
        code = ExitCode(82)
        printError("error: trial state unknown: \(error)")
    }
    object["exitCode"] = .int(Int(code.rawValue))
    if json { printJSON(JSONValue.object(object)) }
    if code != .success { throw code }
}

struct TrialStatusCommand: StoreCommand {
    static var configuration: CommandConfiguration {
        cachedConfiguration {
            CommandConfiguration(
                commandName: "status", abstract: "Report the trial's state; never starts it.",
                usage: "\(CLI.name) trial status --store <uri> [<options>]")
        }
    }
    @OptionGroup var store: StoreLocationOptions<TheStore>
    @OptionGroup var keyring: KeyringTimeoutOptions
    @OptionGroup var device: DeviceOptions
    @OptionGroup var trial: TrialOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        try report(trial.evaluate(self, device) { $0.status() }, json: output.json)
    }
}

struct TrialStartCommand: StoreCommand {
    static var configuration: CommandConfiguration {
        cachedConfiguration {
            CommandConfiguration(
                commandName: "start",
                abstract: "Start the trial if, and only if, no trial record exists; report its state.",
                usage: "\(CLI.name) trial start --store <uri> [<options>]")
        }
    }
    @OptionGroup var store: StoreLocationOptions<TheStore>
    @OptionGroup var keyring: KeyringTimeoutOptions
    @OptionGroup var device: DeviceOptions
    @OptionGroup var trial: TrialOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        try report(trial.evaluate(self, device) { $0.start() }, json: output.json)
    }
}
#endif
