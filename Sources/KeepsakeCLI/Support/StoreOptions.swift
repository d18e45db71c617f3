#if CLI
import ArgumentParser
import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeStores

/// A store URI given on the command line (`--store`, `--from`, `--to`), parsed once, against the
/// backends of the command (the standard ones and the app's own).
struct StoreArgument: Sendable {
    /// The URI as typed.
    let text: String
    /// The URI, parsed.
    let uri: StoreURI

    /// Parses `text` as a URI of one of the command's backends; a leading `~/` in a path is the
    /// home directory.
    ///
    /// - Throws: A usage error saying what a store URI is when `text` is not one.
    init(parsing text: String) throws(ValidationError) {
        self.text = text
        do {
            uri = try CLI.backends.parse(text)
        } catch {
            throw usageError(error.message)
        }
    }

    /// The backend of the URI's scheme.
    var backend: (any StoreBackend)? { CLI.backends.backend(for: uri.scheme) }

    /// Whether the store takes a master key (`file:`).
    var takesMasterKey: Bool { backend?.acceptedOptions.contains(.masterKey) == true }

    /// Whether the store may be sealed with a master key (`postgresql:`): the key is optional.
    var takesSealingKey: Bool { backend?.acceptedOptions.contains(.sealingKey) == true }

    /// `file:`, or every scheme that takes a master key.
    static var masterKeyStores: String {
        CLI.backends.all.filter { $0.acceptedOptions.contains(.masterKey) }.map { "\($0.scheme):" }
            .joined(separator: ", ")
    }

    /// Every scheme whose stores may be sealed with a master key (`postgresql:`), or "".
    static var sealableStores: String {
        CLI.backends.all.filter { $0.acceptedOptions.contains(.sealingKey) }.map { "\($0.scheme):" }
            .joined(separator: ", ")
    }

    /// Every scheme `--master-key` applies to: those that take a master key and those that may
    /// be sealed with one.
    static var keyedStores: String {
        CLI.backends.all.filter { !$0.acceptedOptions.isDisjoint(with: [.masterKey, .sealingKey]) }
            .map { "\($0.scheme):" }.joined(separator: ", ")
    }
}

/// A store option — `--store`, `--from` or `--to` after `Role` — with its master key option:
/// the one definition of a store on the command line, used by every command.
struct StoreLocationOptions<Role: StoreRole>: ParsableArguments {
    @Option(
        name: .customLong(Role.storeOption),
        help: ArgumentHelp(
            "\(Role.noun.prefix(1).uppercased() + Role.noun.dropFirst()): \(CLI.backends.forms(persistentOnly: true)) (a path may start with ~/).",
            valueName: "uri"),
        completion: Completions.store,
        transform: { text in try StoreArgument(parsing: text) })
    var store: StoreArgument

    @OptionGroup var key: KeyOptions<Role>

    /// `--store`, `--from`: the option's name in messages.
    static var optionName: String { "--\(Role.storeOption)" }

    func validate() throws {
        if let backend = store.backend, !backend.persists {
            throw usageError(
                """
                \(Self.optionName): \(withArticle(store.uri.scheme.rawValue)): store lives only inside one process; \(CLI.name) \
                works on \(CLI.backends.forms(persistentOnly: true))
                """)
        }
        if !key.given.isEmpty && !store.takesMasterKey && !store.takesSealingKey {
            throw ValidationError(
                "\(KeyOptions<Role>.optionName) is for \(StoreArgument.keyedStores) stores; \(store.uri.scheme): takes no key"
            )
        }
    }

    /// What the store is opened with: its master key when its backend takes one (read only then),
    /// or may be sealed with one and one was given; the keyring deadline when its backend takes one.
    func openOptions(keyringTimeout: Duration?, requireExisting: Bool = false) throws -> StoreOpenOptions {
        var options = StoreOpenOptions(requireExisting: requireExisting)
        let accepted = store.backend?.acceptedOptions ?? []
        if accepted.contains(.masterKey) {
            options.masterKey = try key.source(
                for: store.uri.description, keyringTimeout: keyringTimeout ?? KeyringStore.defaultTimeout)
        } else if accepted.contains(.sealingKey), !key.given.isEmpty {
            options.sealingKey = try key.source(
                for: store.uri.description, keyringTimeout: keyringTimeout ?? KeyringStore.defaultTimeout)
        }
        if accepted.contains(.keyringTimeout) { options.keyringTimeout = keyringTimeout }
        return options
    }

    /// Opens the store with the command's backends.
    ///
    /// With `requireExisting`, a store that is not there is not created: a `defaults:` suite
    /// file that does not exist would otherwise read as an empty store (a mistyped path would
    /// say "no records"). Commands that only read or change what exists (status, plan, run,
    /// show, get, delete) ask for that; `put` and `trial start` create the file instead.
    ///
    /// - Throws: `.notFound` naming the store when it must exist and does not; what the backend
    ///   throws.
    func open(keyringTimeout: Duration?, requireExisting: Bool = false) throws -> any RecordStore {
        do {
            return try CLI.backends.open(
                store.uri, options: openOptions(keyringTimeout: keyringTimeout, requireExisting: requireExisting))
        } catch let error as KeepsakeError where error.code == .notFound && requireExisting {
            // The backend says how such a store comes to be; say which command does that here.
            var located = error
            if located.message.hasSuffix(")") {
                located.message.removeLast()
                located.message += ", such as `\(CLI.name) put`)"
            }
            throw located
        }
    }
}

/// `--keyring-timeout`: how long a keyring call may take.
struct KeyringTimeoutOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("How long a keyring call may take before it fails, in seconds.", valueName: "seconds"))
    var keyringTimeout: Double = 5

    func validate() throws { _ = try timeout() }

    /// The deadline (checked by ``validate()``).
    func timeout() throws -> Duration { try timeoutDuration(keyringTimeout, option: "--keyring-timeout") }
}

/// The longest deadline a `--…timeout` option accepts, in seconds (an hour).
let maxTimeoutSeconds = 3600.0

/// A timeout option in seconds as a `Duration`: a usage error unless it is a number from a
/// millisecond to ``maxTimeoutSeconds`` (not `inf`, `nan`, zero or negative).
func timeoutDuration(_ seconds: Double, option: String) throws -> Duration {
    guard seconds.isFinite, seconds >= 0.001, seconds <= maxTimeoutSeconds else {
        throw ValidationError("\(option) must be a number of seconds from 0.001 to \(Int(maxTimeoutSeconds))")
    }
    return .milliseconds(Int64((seconds * 1000).rounded()))
}

/// `--model KEY=NAME` and `--models FILE`: records matched to a model by their key, or by a
/// key pattern (`--model 'tenant-*=Tenant'`: every key that starts with `tenant-`).
struct ModelMappingOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            """
            Treat KEY as a record of model NAME; a KEY ending in * is a pattern ('tenant-*=Tenant': every key \
            that starts with tenant-). Repeatable; see `\(CLI.name) models`.
            """,
            valueName: "key=name"), completion: Completions.model)
    var model: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("A file of KEY=NAME lines (patterns too), each read as a --model.", valueName: "path"),
        completion: .file())
    var models: String?

    /// The most `--model` options taken: ArgumentParser's parsing grows with the square of the
    /// arguments (8,000 take seconds), so more go in a `--models` file — or one pattern.
    static let maxModelOptions = 1000

    func validate() throws {
        if model.count > Self.maxModelOptions {
            throw ValidationError(
                """
                \(model.count) --model options are more than \(Self.maxModelOptions); map many keys with one pattern \
                (--model 'tenant-*=NAME'), or put them in a file, one KEY=NAME a line, and give --models FILE
                """
            )
        }
        _ = try mapping()
    }

    /// Every `KEY=NAME` from `--models` then `--model`, names checked against the known models
    /// (a later one for the same key or pattern wins): exact keys, and patterns (a KEY that
    /// ends in `*`).
    func mapping() throws -> (keys: [String: String], patterns: [KeyPattern: String]) {
        var pairs: [(String, String, String)] = []
        if let models {
            let text: String
            do {
                text = try String(contentsOfFile: models, encoding: .utf8)
            } catch {
                throw usageError("cannot read the --models file \(models): \(error.localizedDescription)")
            }
            for line in text.split(whereSeparator: \.isNewline) where !line.allSatisfy(\.isWhitespace) {
                let option = "--models \(models)"
                let (key, name) = try Self.pair(String(line), option: option)
                pairs.append((key, name, option))
            }
        }
        for pair in model {
            let (key, name) = try Self.pair(pair, option: "--model")
            pairs.append((key, name, "--model"))
        }
        let chains = CLI.chains
        var keys: [String: String] = [:]
        var patterns: [KeyPattern: String] = [:]
        for (key, name, option) in pairs {
            guard chains.contains(where: { $0.name == name }) else {
                let names = chains.isEmpty ? "none" : chains.map(\.name).joined(separator: ", ")
                throw usageError("unknown model '\(name)' in \(option); known models: \(names)")
            }
            if KeyPattern.isPattern(key) {
                do {
                    patterns[try KeyPattern(parsing: key)] = name
                } catch {
                    throw usageError("\(option): \(error.message)")
                }
            } else {
                keys[key] = name
            }
        }
        return (keys, patterns)
    }

    private static func pair(_ text: String, option: String) throws -> (String, String) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty else {
            throw usageError("\(option) takes KEY=NAME or PATTERN=NAME (got '\(text)')")
        }
        return (parts[0], parts[1])
    }
}

/// `--device-id` and `--app-id`: the device identity migration steps and the trial guard record.
struct DeviceOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Device identity recorded by steps that ask for one (default: derived from /etc/machine-id and --app-id).",
            valueName: "id"))
    var deviceID: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "App identifier the default device identity is derived with (default: \(CLI.appID)).", valueName: "id"))
    var appID: String?

    /// The migration context: the system clock, random identifiers, and the device identity —
    /// `--device-id`, or derived from the machine id the first time a step asks for it, so a
    /// machine without `/etc/machine-id` can still migrate records whose steps need none.
    func context() -> MigrationContext {
        if let deviceID { return .live(deviceIdentity: deviceID) }
        return .live(appID: appID ?? CLI.appID)
    }
}

/// A command that matches records to models (`status`, `plan`, `run`, `show`): the store,
/// `--model`, and the device identity. (Each group is declared by the command itself, not
/// nested in another: ArgumentParser's cost grows steeply with the depth of nested groups.)
protocol MigratorCommand: OutputCommand {
    var store: StoreLocationOptions<TheStore> { get }
    var keyring: KeyringTimeoutOptions { get }
    var models: ModelMappingOptions { get }
    var device: DeviceOptions { get }
}

extension MigratorCommand {
    /// A migrator on the store, which must exist.
    func migrator() throws -> Migrator {
        let mapping = try models.mapping()
        return Migrator(
            store: try store.open(keyringTimeout: keyring.timeout(), requireExisting: true), chains: CLI.chains,
            context: device.context(), keyModels: mapping.keys, patternModels: mapping.patterns)
    }
}

/// A command that opens one store (`get`, `put`, `delete`, `trial`).
protocol StoreCommand: OutputCommand {
    var store: StoreLocationOptions<TheStore> { get }
    var keyring: KeyringTimeoutOptions { get }
}

extension StoreCommand {
    /// The store, created by its first write if it does not exist (`put`, `trial start`).
    func openStore() throws -> any RecordStore {
        try store.open(keyringTimeout: keyring.timeout())
    }

    /// The store, which must exist (see ``StoreLocationOptions/open(keyringTimeout:requireExisting:)``).
    func openExistingStore() throws -> any RecordStore {
        try store.open(keyringTimeout: keyring.timeout(), requireExisting: true)
    }
}

/// `--json`, `--verbose` and `--quiet`: what every command prints, and how much.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print one JSON object (or array) on standard output, failures included.")
    var json = false

    @Flag(name: .long, help: "Log migrations, writes, conflicts and waits on standard error.")
    var verbose = false

    @Flag(name: .long, help: "Print only errors on standard error: no progress, hints or warnings.")
    var quiet = false

    func validate() throws {
        if verbose && quiet { throw ValidationError("--verbose and --quiet cannot be given together") }
    }
}

/// A command that runs: it prints as its ``OutputOptions`` say.
protocol OutputCommand: ParsableCommand {
    var output: OutputOptions { get }
}
#endif
