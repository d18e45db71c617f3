import ArgumentParser
import Foundation

/// The commands and options of this process's CLI, as ArgumentParser describes them: what the
/// checks before parsing (``Preflight``), the man page and the completions read. A command's
/// options are read from ArgumentParser only when asked for, one command at a time: describing
/// every command costs more than a whole `migrate status`.
final class CommandTree {
    /// One argument, as ArgumentParser's `--experimental-dump-help` describes it.
    struct Argument: Decodable, Sendable {
        struct Name: Decodable, Sendable {
            let kind: String
            let name: String

            /// `--store`, `-h`.
            var spelled: String { kind == "short" ? "-" + name : (kind == "long" ? "--" : "-") + name }
        }

        let kind: String
        let names: [Name]?
        let isRepeating: Bool
        let isOptional: Bool
        let shouldDisplay: Bool
        let valueName: String?
        let abstract: String?
        let sectionTitle: String?
        let defaultValue: String?

        var isOption: Bool { kind == "option" }
        var isFlag: Bool { kind == "flag" }
        var isPositional: Bool { kind == "positional" }
        var longNames: [String] { (names ?? []).filter { $0.kind == "long" }.map(\.spelled) }
        /// The first long name, else the first name.
        var preferred: String { longNames.first ?? names?.first?.spelled ?? "<\(valueName ?? "value")>" }
    }

    private struct Dump: Decodable {
        struct Command: Decodable {
            let arguments: [Argument]?
        }
        let command: Command
    }

    let type: any ParsableCommand.Type

    init(_ type: any ParsableCommand.Type) {
        self.type = type
    }

    /// The root command.
    static var root: CommandTree { CommandTree(Migrate.self) }

    var commandName: String { type._commandName }
    var abstract: String { type.configuration.abstract }
    var discussion: String { type.configuration.discussion }
    var shouldDisplay: Bool { type.configuration.shouldDisplay }

    /// The subcommands, hidden ones included (not ArgumentParser's `help`).
    private(set) lazy var subcommands: [CommandTree] = type.configuration.subcommands.map(CommandTree.init)

    /// The subcommands a user may type.
    var visibleSubcommands: [CommandTree] { subcommands.filter(\.shouldDisplay) }

    func subcommand(named name: String) -> CommandTree? {
        subcommands.first { $0.commandName == name }
    }

    /// Every argument of this command, hidden ones included.
    private(set) lazy var arguments: [Argument] = {
        do {
            return try JSONDecoder().decode(Dump.self, from: Data(type._dumpHelp().utf8)).command.arguments ?? []
        } catch {
            // ArgumentParser's own description of our commands: failing to read it is a bug here.
            preconditionFailure("cannot read the options of \(commandName): \(error)")
        }
    }()

    /// The named options and flags, hidden ones included.
    var namedArguments: [Argument] { arguments.filter { !$0.isPositional } }

    /// The argument `spelled` (`--store`) names, if any.
    func argument(spelled: String) -> Argument? {
        namedArguments.first { argument in (argument.names ?? []).contains { $0.spelled == spelled } }
    }
}

/// What to suggest for a mistyped word: the closest of `candidates`, when it is close enough
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

/// Checks made on the command line before ArgumentParser reads it, for what it does not say
/// well: a mistyped command (`statsu`) or option (`--stor`), with a "did you mean"; an option
/// the command does not take; a single-value option given twice, which ArgumentParser would
/// silently resolve by keeping the last.
enum Preflight {
    /// A usage problem, with the command path it is about (`["trial", "status"]`).
    struct Problem: Error {
        let message: String
        let path: [String]
    }

    /// The words that lead ArgumentParser elsewhere than to one of our commands: help, version,
    /// completion scripts and completion requests.
    static let passThrough: Set<String> = [
        "-h", "--help", "-help", "--version", "--generate-completion-script", "---completion",
        "--experimental-dump-help"
    ]

    /// The subcommand path the arguments name, as far as they name one.
    static func path(of arguments: [String], tree: CommandTree) -> [String] {
        var node = tree
        var path: [String] = []
        for argument in arguments {
            if argument == "--" || argument.hasPrefix("-") { break }
            guard let next = node.subcommand(named: argument) else { break }
            path.append(argument)
            node = next
        }
        return path
    }

    /// Returns the first problem with `arguments`, or `nil` when ArgumentParser may read them.
    static func check(_ arguments: [String], tree: CommandTree) -> Problem? {
        if arguments.contains(where: passThrough.contains) || arguments.first == "help" { return nil }
        var node = tree
        var path: [String] = []
        var counts: [String: (count: Int, spelled: String)] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { break }
            if argument.hasPrefix("--") {
                let spelled = String(argument.prefix { $0 != "=" })
                guard let definition = node.argument(spelled: spelled) else {
                    return unknownOption(spelled, node: node, path: path, tree: tree)
                }
                if definition.isOption && !argument.contains("=") { index += 1 }
                if !definition.isRepeating {
                    let identity = definition.preferred
                    let seen = counts[identity, default: (0, spelled)]
                    if seen.count >= 1 {
                        let other = seen.spelled == spelled ? "" : " (as \(seen.spelled))"
                        return Problem(
                            message: "\(spelled) was given more than once\(other); give it at most once",
                            path: path)
                    }
                    counts[identity] = (1, spelled)
                }
                continue
            }
            if argument.hasPrefix("-"), argument.count > 1, Double(argument) == nil {
                continue  // short options (-h): ArgumentParser's own
            }
            // A word: a subcommand where one is expected, else a positional argument.
            guard !node.subcommands.isEmpty else { continue }
            if let next = node.subcommand(named: argument) {
                node = next
                path.append(argument)
                counts = [:]
                continue
            }
            let names = node.visibleSubcommands.map(\.commandName)
            let command = ([CLI.name] + path).joined(separator: " ")
            if let guess = suggestion(for: argument, among: names) {
                return Problem(
                    message: "'\(argument)' is not a \(command) command; did you mean '\(guess)'?",
                    path: path)
            }
            return Problem(
                message: "'\(argument)' is not a \(command) command; the commands are \(names.joined(separator: ", "))",
                path: path)
        }
        return nil
    }

    private static func unknownOption(_ spelled: String, node: CommandTree, path: [String], tree: CommandTree)
        -> Problem
    {
        let command = ([CLI.name] + path).joined(separator: " ")
        if !node.subcommands.isEmpty {
            let takers = node.visibleSubcommands.filter { $0.argument(spelled: spelled) != nil }.map(\.commandName)
            if !takers.isEmpty {
                return Problem(
                    message: "\(spelled) goes after a command: \(command) \(takers[0]) \(spelled) ...",
                    path: path)
            }
        }
        let names = node.namedArguments.filter(\.shouldDisplay).flatMap(\.longNames)
        if let guess = suggestion(for: spelled, among: names) {
            return Problem(message: "\(command) has no option \(spelled); did you mean \(guess)?", path: path)
        }
        return Problem(message: "\(command) has no option \(spelled); see '\(command) --help'", path: path)
    }
}
