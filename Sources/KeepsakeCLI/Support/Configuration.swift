#if CLI
import ArgumentParser
import Keepsake
import KeepsakeStores
import Migrations
import Synchronization

/// What one run of the command knows: its name, version, model chains, app id and store
/// backends, and — once the command line is parsed — how it prints.
///
/// ``MigrateCommand/main(chains:commandName:version:appID:backends:keySources:arguments:bootstrapsLogging:)``
/// binds it with ``current`` around parsing and running. ArgumentParser reads a command's
/// `configuration` (its name, its help) statically, with no way to pass a value in: a task-local
/// value reaches it there while staying scoped to the run, where a process-wide variable would
/// be global mutable state.
struct CLIConfiguration: Sendable {
    let chains: [AnyModelChain]
    let commandName: String
    let version: String?
    /// The app id the default device identity is derived with.
    let appID: String
    /// The store kinds `--store`, `--from` and `--to` name: the standard ones and the app's own.
    let backends: StoreBackends
    /// The master key sources of the app's own (`--master-key SCHEME:VALUE`).
    let keySources: [KeySourceKind]
    #if DEBUG
    /// What `copy` calls after each step of its transfer (tests only, debug builds; see ``TestHooks``).
    let copyCheckpoint: (@Sendable (StoreTransfer.Step) -> Void)?
    #endif
    /// Each command's `CommandConfiguration`, built once per run (see ``commandConfiguration(of:_:)``).
    private let commandConfigurations = CommandConfigurations()
    /// Whether `--json` was given: failures are then also printed as one JSON object on
    /// standard output.
    var json = false
    /// Whether `--quiet` was given: no progress, hints or warnings on standard error.
    var quiet = false
    /// The store argument as given (`--store`, else `--from`), for failures that name no store.
    var storeArgument: String?

    /// A checked configuration.
    ///
    /// - Throws: `.invalidArgument` when `commandName` is empty or two chains share a name
    ///   (the ``Migrator`` cannot tell their records apart), or a backend's scheme is taken.
    init(
        chains: [AnyModelChain], commandName: String, version: String?, appID: String,
        backends: [any StoreBackend] = [], keySources: [KeySourceKind] = [],
        copyCheckpoint: (@Sendable (StoreTransfer.Step) -> Void)? = nil
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
        var schemes = KeySourceKind.reserved
        for kind in keySources {
            guard !kind.scheme.isEmpty, !kind.scheme.contains(":"), schemes.insert(kind.scheme).inserted else {
                throw KeepsakeError(
                    .invalidArgument,
                    "\(commandName) was given a master key source '\(kind.scheme):' that is empty, holds a colon or is taken"
                )
            }
        }
        self.keySources = keySources
        #if DEBUG
        self.copyCheckpoint = copyCheckpoint
        #endif
    }

    /// What the commands see when nothing is bound: the name `migrate`, no chains, the
    /// standard backends.
    private init() {
        chains = []
        commandName = "migrate"
        version = nil
        appID = "org.keepsake.migrate"
        backends = .standard
        keySources = []
        #if DEBUG
        copyCheckpoint = nil
        #endif
    }

    /// The configuration of the run on this task; the stock `migrate` with no chains outside one.
    @TaskLocal static var current = CLIConfiguration()

    /// The configuration of the command `type`, built by `build` the first time this run asks.
    /// ArgumentParser reads a command's `configuration` many times while parsing; ours are
    /// computed (they name the configured command), and building them anew each time made every
    /// run several times slower.
    func commandConfiguration(
        of type: any ParsableCommand.Type, _ build: () -> CommandConfiguration
    ) -> CommandConfiguration {
        commandConfigurations.value(for: type, build)
    }
}

/// The command configurations one run has built, by command type.
private final class CommandConfigurations: Sendable {
    private let storage = Mutex<[ObjectIdentifier: CommandConfiguration]>([:])

    func value(for type: any ParsableCommand.Type, _ build: () -> CommandConfiguration) -> CommandConfiguration {
        if let cached = storage.withLock({ $0[ObjectIdentifier(type)] }) { return cached }
        let built = build()
        storage.withLock { $0[ObjectIdentifier(type)] = built }
        return built
    }
}

extension ParsableCommand {
    /// This command's configuration, built by `build` once per run, with its name set when
    /// `build` leaves it out (``derivedCommandName``).
    static func cachedConfiguration(_ build: () -> CommandConfiguration) -> CommandConfiguration {
        CLIConfiguration.current.commandConfiguration(of: Self.self) {
            var configuration = build()
            if configuration.commandName == nil { configuration.commandName = derivedCommandName }
            return configuration
        }
    }

    /// The name ArgumentParser gives a command whose configuration names none — its type's
    /// name, words joined by `-` in lowercase (`Status` → `status`, `KeyCensus` → `key-census`,
    /// `URLCheck` → `url-check`) — made from `_typeName` rather than `String(describing:)`.
    ///
    /// ArgumentParser asks a command's name many times while it parses; `String(describing:)`
    /// of a type first asks the runtime whether the type conforms to three protocols, and each
    /// "no" scans every conformance record in the binary: about 0.8 million instructions per
    /// command type, 26 million of the 450 million a `migrate status` of 10,000 records ran
    /// (callgrind).
    static var derivedCommandName: String {
        let name = Array(_typeName(Self.self, qualified: false))
        var words = ""
        for (index, character) in name.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = name[index - 1]
                let nextIsLower = index + 1 < name.count && name[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    words.append("-")
                }
            }
            words.append(contentsOf: character.lowercased())
        }
        return words
    }
}

/// Shorthands for the values of the run, for help texts and messages.
enum CLI {
    /// The command's name: `migrate`, or the app's.
    static var name: String { CLIConfiguration.current.commandName }
    /// The model chains records are matched to.
    static var chains: [AnyModelChain] { CLIConfiguration.current.chains }
    /// Whether the command carries `trial`: only when its chains include the trial guard's
    /// TrialInfo chain (an app's own `migrate` with no trial has no trial command).
    static var hasTrial: Bool { chains.contains { $0.name == TrialInfo.chain.name } }
    /// The app id the default device identity is derived with.
    static var appID: String { CLIConfiguration.current.appID }
    /// The store kinds this command knows.
    static var backends: StoreBackends { CLIConfiguration.current.backends }
    /// The master key sources of the app's own.
    static var keySources: [KeySourceKind] { CLIConfiguration.current.keySources }
    /// Whether output is JSON (`--json`).
    static var json: Bool { CLIConfiguration.current.json }
    /// Whether `--quiet` was given.
    static var quiet: Bool { CLIConfiguration.current.quiet }
}
#endif
