import Keepsake
import Synchronization

/// What this process's command knows: its name, version and model chains, set by
/// ``MigrateCommand/main(chains:commandName:version:arguments:)`` before parsing.
struct CLIConfiguration: Sendable {
    let chains: [AnyModelChain]
    let commandName: String
    let version: String?
    /// The app id the default device identity is derived with.
    let appID: String

    /// A checked configuration.
    ///
    /// - Throws: `.invalidArgument` when `commandName` is empty or two chains share a name
    ///   (the ``Migrator`` cannot tell their records apart).
    init(chains: [AnyModelChain], commandName: String, version: String?, appID: String) throws(KeepsakeError) {
        guard !commandName.isEmpty, !commandName.contains(where: \.isWhitespace) else {
            throw KeepsakeError(.invalidArgument,
                                "the command name '\(commandName)' must be non-empty and without spaces")
        }
        var seen = Set<String>()
        for chain in chains where !seen.insert(chain.name).inserted {
            throw KeepsakeError(.invalidArgument, """
                \(commandName) was given two model chains named '\(chain.name)'; each chain needs its own \
                name, since records are matched to chains by name
                """)
        }
        self.chains = chains
        self.commandName = commandName
        self.version = version
        self.appID = appID
    }

    /// What the commands see if nothing was configured: the name `migrate` and no chains.
    private init() {
        chains = []
        commandName = "migrate"
        version = nil
        appID = "org.keepsake.migrate"
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
}
