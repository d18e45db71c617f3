import ArgumentParser
import Foundation
import Keepsake

/// How a command that failed says so: on standard error for a person, every line starting
/// `error:` (and `hint:` where there is something to do), and — with `--json` — also as one
/// object on standard output, `{"error": {code, exitCode, message, store, key, cause, hint}}`.
enum Failure {
    /// The `code` of a usage error (exit 64) in `--json` output.
    static let usageCode = "usage"
    /// The `code` of an unexpected error (exit 1) in `--json` output.
    static let internalCode = "internal"

    /// Reports a ``KeepsakeError`` and returns its exit code.
    static func report(_ error: KeepsakeError) -> Int32 {
        var error = error
        if error.store == nil, let store = CLIConfiguration.current.storeArgument, error.code != .invalidArgument {
            error.store = store
        }
        printError("error: \(error)")
        if !CLI.quiet, let hint = hint(for: error) { printError("hint: \(hint)") }
        if CLI.json { JSONOutput.emit(["error": error.json] as JSONValue) }
        return Exit.code(for: error).rawValue
    }

    /// Reports a usage error: the message, then the usage of the command at `path` (`["run"]`).
    static func usage(_ message: String, path: [String]) -> Int32 {
        let code = ExitCode.validationFailure.rawValue
        let command = ([CLI.name] + path).joined(separator: " ")
        let usage = usageText(path: path)
        // ArgumentParser's messages may span lines: each line is escaped on its own.
        for (index, line) in message.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            printError(index == 0 ? "error: \(line)" : "  \(line)")
        }
        FileHandle.standardError.write(
            Data(
                """
                Usage: \(usage.replacingOccurrences(of: "\n", with: "\n       "))
                  See '\(command) --help' for more information.

                """.utf8))
        if CLI.json {
            JSONOutput.emit(
                [
                    "error": [
                        "code": .string(usageCode), "exitCode": .int(Int(code)), "message": .string(message),
                        "store": JSONValue(CLIConfiguration.current.storeArgument), "key": nil, "cause": nil,
                        "hint": .string("see '\(command) --help'")
                    ]
                ] as JSONValue)
        }
        return code
    }

    /// Reports an error no command expected (exit 1).
    static func unexpected(_ error: any Error) -> Int32 {
        let message = String(describing: error)
        printError("error: \(message)")
        if CLI.json {
            JSONOutput.emit(
                [
                    "error": [
                        "code": .string(internalCode), "exitCode": 1, "message": .string(message),
                        "store": JSONValue(CLIConfiguration.current.storeArgument), "key": nil, "cause": nil,
                        "hint": nil
                    ]
                ] as JSONValue)
        }
        return ExitCode.failure.rawValue
    }

    /// The usage line of the command at `path`, as its `--help` shows it.
    static func usageText(path: [String]) -> String {
        var type: any ParsableCommand.Type = Migrate.self
        for name in path {
            guard let next = type.configuration.subcommands.first(where: { $0._commandName == name }) else { break }
            type = next
        }
        return Migrate.usageString(for: type)
    }
}
