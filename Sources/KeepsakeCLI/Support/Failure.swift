#if CLI
import ArgumentParser
import Foundation
import Keepsake

/// How a command that failed says so: on standard error for a person, every line starting
/// `error:` (and `hint:` where there is something to do), and — with `--json` — also as one
/// object on standard output, `{"error": {code, exitCode, message, store, key, cause, hint, mayHaveBeenApplied}}`.
enum Failure {
    /// The `code` of a usage error (exit 64) in `--json` output.
    static let usageCode = "usage"
    /// The `code` of an unexpected error (exit 1) in `--json` output.
    static let internalCode = "internal"

    /// `configuration` with what a failure report quotes from `arguments` before (or without)
    /// a parsed command: whether `--json` was given, and the `--store` argument as typed. Only
    /// the report reads these; the command itself reads its parsed options.
    static func context(_ configuration: CLIConfiguration, arguments: [String]) -> CLIConfiguration {
        var context = configuration
        let options = arguments.prefix { $0 != "--" }
        context.json = options.contains("--json")
        for (index, option) in options.enumerated() {
            if option == "--store", index + 1 < options.count {
                context.storeArgument = StoreURI.redactingSecrets(options[index + 1])
            }
            if option.hasPrefix("--store=") {
                context.storeArgument = StoreURI.redactingSecrets(String(option.dropFirst("--store=".count)))
            }
        }
        return context
    }

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

    /// Reports a command line ArgumentParser refused (exit 64): its message and the usage of the
    /// command it was parsing, as ArgumentParser words them. A first word that names no command
    /// gets the closest command instead of a complaint about the option after it.
    static func parseError(_ error: any Error, arguments: [String]) -> Int32 {
        if let (message, command) = unknownCommand(in: arguments) {
            return usage(message, command: command)
        }
        var lines = Migrate.fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
        if let first = lines.first, first.hasPrefix("Error: ") { lines[0] = "error: " + first.dropFirst(7) }
        for line in lines where !line.isEmpty { printError(line) }
        let help = lines.last { $0.contains("See '") }.flatMap { line -> String? in
            guard let start = line.range(of: "See '"),
                let end = line.range(of: "'", range: start.upperBound..<line.endIndex)
            else { return nil }
            return String(line[start.upperBound..<end.lowerBound])
        }
        emitUsage(Migrate.message(for: error), help: help ?? "\(CLI.name) --help")
        return ExitCode.validationFailure.rawValue
    }

    /// Reports a usage error found once `command` was parsed: the message, then its usage.
    static func usage(_ message: String, command: any ParsableCommand.Type) -> Int32 {
        let path = ([CLI.name] + (commandPath(to: command) ?? [])).joined(separator: " ")
        // ArgumentParser's messages may span lines: each line is escaped on its own.
        for (index, line) in message.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            printError(index == 0 ? "error: \(line)" : "  \(line)")
        }
        FileHandle.standardError.write(
            Data(
                """
                Usage: \(Migrate.usageString(for: command).replacingOccurrences(of: "\n", with: "\n       "))
                  See '\(path) --help' for more information.

                """.utf8))
        emitUsage(message, help: "\(path) --help")
        return ExitCode.validationFailure.rawValue
    }

    private static func emitUsage(_ message: String, help: String) {
        guard CLI.json else { return }
        JSONOutput.emit(
            [
                "error": [
                    "code": .string(usageCode), "exitCode": .int(Int(ExitCode.validationFailure.rawValue)),
                    "message": .string(message), "store": JSONValue(CLIConfiguration.current.storeArgument),
                    "key": nil, "cause": nil, "hint": .string("see '\(help)'"), "mayHaveBeenApplied": false
                ]
            ] as JSONValue)
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
                        "hint": nil, "mayHaveBeenApplied": false
                    ]
                ] as JSONValue)
        }
        return ExitCode.failure.rawValue
    }

    /// The subcommand names that lead from the root to `command`, if it is one of ours.
    static func commandPath(to command: any ParsableCommand.Type, from root: any ParsableCommand.Type = Migrate.self)
        -> [String]?
    {
        if command == root { return [] }
        for subcommand in root.configuration.subcommands {
            if let path = commandPath(to: command, from: subcommand) { return [subcommand._commandName] + path }
        }
        return nil
    }

    /// When the first word where a command is expected names none (`statsu`, `trial strat`):
    /// what to say, with the closest command, and the command it was expected under.
    /// ArgumentParser would complain about the option after the word instead.
    static func unknownCommand(in arguments: [String]) -> (String, any ParsableCommand.Type)? {
        var command: any ParsableCommand.Type = Migrate.self
        var path = [CLI.name]
        for word in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !word.hasPrefix("-"), word != "help" else { return nil }
            if let next = subcommands.first(where: { subcommand in subcommand._commandName == word }) {
                command = next
                path.append(word)
                continue
            }
            var names: [String] = []
            for subcommand in subcommands where subcommand.configuration.shouldDisplay {
                names.append(subcommand._commandName)
            }
            let commandName = path.joined(separator: " ")
            if let guess = suggestion(for: word, among: names) {
                return ("'\(word)' is not \(withArticle(commandName)) command; did you mean '\(guess)'?", command)
            }
            return (
                "'\(word)' is not \(withArticle(commandName)) command; the commands are \(names.joined(separator: ", "))",
                command
            )
        }
        return nil
    }
}

/// What to suggest for a mistyped command: the closest of `candidates`, when it is close enough
/// (an edit distance of at most a third of its length, transpositions counting once, or a
/// unique prefix).
func suggestion(for typed: String, among candidates: [String]) -> String? {
    let prefixed = candidates.filter { $0.hasPrefix(typed) }
    if typed.count >= 2, prefixed.count == 1 { return prefixed[0] }
    var best: (candidate: String, distance: Int)?
    for candidate in candidates {
        let distance = editDistance(typed, candidate)
        let allowed = max(1, min(3, candidate.count / 3))
        if distance <= allowed, distance < (best?.distance ?? .max) { best = (candidate, distance) }
    }
    return best?.candidate
}

/// The optimal-string-alignment distance: insertions, deletions, substitutions and adjacent
/// transpositions each count 1. Quadratic, on words of a command line (capped at 64 characters).
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.prefix(64)), b = Array(b.prefix(64))
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { table[i][0] = i }
    for j in 0...b.count { table[0][j] = j }
    for i in 1...a.count {
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
            }
        }
    }
    return table[a.count][b.count]
}
#endif
