import ArgumentParser
import Keepsake
import KeepsakeStores
import Synchronization

/// What this process's command knows: its name, version and model chains, set by
/// ``MigrateCommand/main(chains:commandName:version:arguments:)`` before parsing.
struct CLIConfiguration: Sendable {
    let chains: [AnyModelChain]
    let commandName: String
    let version: String?
    /// The app id the default device identity is derived with.
    let appID: String
    /// The store kinds `--store`, `--from` and `--to` name: the standard ones and the app's own.
    let backends: StoreBackends
    /// The `--model KEY=NAME` values, taken out of the arguments before parsing.
    var modelOptions: [String] = []
    /// Whether `--json` was given: failures are then also printed as one JSON object on
    /// standard output, even those found before the command is parsed.
    var json = false
    /// Whether `--quiet` was given: no progress, hints or warnings on standard error.
    var quiet = false
    /// The `--store` argument as given, for failures that happen before it is parsed.
    var storeArgument: String?

    /// A checked configuration.
    ///
    /// - Throws: `.invalidArgument` when `commandName` is empty or two chains share a name
    ///   (the ``Migrator`` cannot tell their records apart).
    init(
        chains: [AnyModelChain], commandName: String, version: String?, appID: String,
        backends: [any StoreBackend] = []
    ) throws(KeepsakeError) {
        guard !commandName.isEmpty, !commandName.contains(where: \.isWhitespace) else {
            throw KeepsakeError(
                .invalidArgument,
                "the command name '\(commandName)' must be non-empty and without spaces")
        }
        var seen = Set<String>()
        for chain in chains where !seen.insert(chain.name).inserted {
            throw KeepsakeError(
                .invalidArgument,
                """
                \(commandName) was given two model chains named '\(chain.name)'; each chain needs its own \
                name, since records are matched to chains by name
                """)
        }
        self.chains = chains
        self.commandName = commandName
        self.version = version
        self.appID = appID
        self.backends = try StoreBackends.standard.adding(contentsOf: backends)
    }

    /// What the commands see if nothing was configured: the name `migrate` and no chains.
    private init() {
        chains = []
        commandName = "migrate"
        version = nil
        appID = "org.keepsake.migrate"
        backends = .standard
    }

    /// The process-wide configuration. ArgumentParser reads a command's `configuration` as a
    /// static property, with no way to pass a value in, so the chains and the name must be
    /// reachable statically. It is written once, before parsing, and only read afterwards; a
    /// `Mutex` rather than `nonisolated(unsafe)` lets the compiler check that instead of
    /// taking it on trust, at the cost of an uncontended lock per read.
    private static let storage = Mutex(CLIConfiguration())

    static var current: CLIConfiguration {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// Shorthands for the configured values, for help texts and messages.
enum CLI {
    /// The command's name: `migrate`, or the app's.
    static var name: String { CLIConfiguration.current.commandName }
    /// The model chains records are matched to.
    static var chains: [AnyModelChain] { CLIConfiguration.current.chains }
    /// The app id the default device identity is derived with.
    static var appID: String { CLIConfiguration.current.appID }
    /// The store kinds this command knows.
    static var backends: StoreBackends { CLIConfiguration.current.backends }
    /// The `--model KEY=NAME` values given on the command line.
    static var modelOptions: [String] { CLIConfiguration.current.modelOptions }
    /// Whether output is JSON (`--json`).
    static var json: Bool { CLIConfiguration.current.json }
    /// Whether `--quiet` was given.
    static var quiet: Bool { CLIConfiguration.current.quiet }
}

/// `--model KEY=NAME` and `--model=KEY=NAME`, taken out of a command line in one pass.
enum ModelOptions {
    /// The values of every `--model` before a `--`, and the other arguments in their order. A
    /// `--model` with no value after it is left in place, for the parser to report.
    static func extract(from arguments: [String]) -> (models: [String], rest: [String]) {
        var models: [String] = []
        var rest: [String] = []
        rest.reserveCapacity(arguments.count)
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" {
                rest += arguments[index...]
                break
            }
            if argument == "--model", arguments.index(after: index) < arguments.endIndex {
                models.append(arguments[arguments.index(after: index)])
                index = arguments.index(index, offsetBy: 2)
                continue
            }
            if argument.hasPrefix("--model=") {
                models.append(String(argument.dropFirst("--model=".count)))
            } else {
                rest.append(argument)
            }
            index = arguments.index(after: index)
        }
        return (models, rest)
    }
}

/// Each command's `CommandConfiguration`, built once. ArgumentParser reads a command's
/// `configuration` many times while parsing; ours are computed (they name the configured
/// command), and building them anew each time made every run several times slower.
enum ConfigurationCache {
    private static let storage = Mutex<[ObjectIdentifier: CommandConfiguration]>([:])

    static func configuration(
        of type: Any.Type, _ build: () -> CommandConfiguration
    ) -> CommandConfiguration {
        if let cached = storage.withLock({ $0[ObjectIdentifier(type)] }) { return cached }
        let built = build()
        storage.withLock { $0[ObjectIdentifier(type)] = built }
        return built
    }
}
