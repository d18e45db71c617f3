import ArgumentParser
import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeSodium
import KeepsakeStores

/// `--store` and how to open it: the master key options (for `file:` stores) and
/// `--keyring-timeout`. What `get`, `put`, `delete` and `trial` take.
struct StoreAccessOptions: ParsableArguments {
    @Option(name: .long, help: StoreLocator.storeHelp, completion: Completions.store)
    var store: String

    @OptionGroup(title: "Master key of a file: store (one of)")
    var key: KeySourceOptions

    @Option(name: .long, help: StoreLocator.keyringTimeoutHelp)
    var keyringTimeout: Double = 5

    var locator: StoreLocator { StoreLocator(store: store, key: key, keyringTimeout: keyringTimeout) }

    func validate() throws { try locator.validate() }
    func parsedURI() throws -> StoreURI { try locator.parsedURI() }
    func openStore() throws -> any RecordStore { try locator.openStore() }
    func openExistingStore() throws -> any RecordStore { try locator.openExistingStore() }
}

/// `--store`, the master key options and `--keyring-timeout` as given, and how to open the
/// store they name. (The option groups declare the options themselves rather than nesting a
/// group: ArgumentParser's cost grows steeply with the depth of nested groups.)
struct StoreLocator {
    let store: String
    let key: KeySourceOptions
    let keyringTimeout: Double

    static var storeHelp: ArgumentHelp {
        ArgumentHelp(
            "The store: \(CLI.backends.forms(persistentOnly: true)) (a path may start with ~/).", valueName: "uri")
    }
    static let keyringTimeoutHelp = ArgumentHelp(
        "How long a keyring call may take before it fails, in seconds.", valueName: "seconds")

    func validate() throws {
        let uri = try parsedURI()
        try Self.checkPersists(uri, option: "--store")
        if key.given && !Self.takesMasterKey(uri) {
            throw ValidationError(
                "--key-file, --keyring-key and the passphrase options are for \(Self.masterKeyStores) stores")
        }
        _ = try StoreOptions.duration(keyringTimeout, option: "--keyring-timeout")
    }

    /// `--store`, parsed by the library's ``StoreURI`` (a usage error when it is not a URI).
    /// A leading `~/` in a path is the home directory.
    func parsedURI() throws -> StoreURI {
        try Self.parse(store, option: "--store")
    }

    /// `text` parsed as a URI of one of the command's backends (a usage error naming `option`
    /// when it is not one).
    static func parse(_ text: String, option: String) throws -> StoreURI {
        do {
            return try CLI.backends.parse(text)
        } catch {
            throw usageError("\(option): \(error.message)")
        }
    }

    /// A usage error when `uri`'s backend keeps nothing after the process ends (`memory:`).
    static func checkPersists(_ uri: StoreURI, option: String) throws {
        guard let backend = CLI.backends.backend(for: uri.scheme), !backend.persists else { return }
        throw ValidationError(
            """
            \(option): a \(uri.scheme): store lives only inside one process; \(CLI.name) works on \
            \(CLI.backends.forms(persistentOnly: true))
            """)
    }

    /// Whether `uri`'s backend takes a master key (`file:`).
    static func takesMasterKey(_ uri: StoreURI) -> Bool {
        CLI.backends.backend(for: uri.scheme)?.acceptedOptions.contains(.masterKey) == true
    }

    /// `file:`, or every scheme that takes a master key.
    static var masterKeyStores: String {
        CLI.backends.all.filter { $0.acceptedOptions.contains(.masterKey) }.map { "\($0.scheme):" }
            .joined(separator: ", ")
    }

    /// The options to open `uri` with: its master key from `key` when its backend takes one,
    /// the keyring deadline when its backend takes one.
    static func openOptions(
        for uri: StoreURI, key: KeySourceOptions, keyringTimeout: Duration?, requireExisting: Bool = false
    ) throws -> StoreOpenOptions {
        var options = StoreOpenOptions(requireExisting: requireExisting)
        let accepted = CLI.backends.backend(for: uri.scheme)?.acceptedOptions ?? []
        if accepted.contains(.masterKey) {
            options.masterKey = try key.source(
                for: uri.description, keyringTimeout: keyringTimeout ?? KeyringStore.defaultTimeout)
        }
        if accepted.contains(.keyringTimeout) { options.keyringTimeout = keyringTimeout }
        return options
    }

    /// Opens the store with the command's backends, with the master key options when its
    /// backend takes a master key and `--keyring-timeout`.
    func openStore() throws -> any RecordStore {
        try open(requireExisting: false)
    }

    private func open(requireExisting: Bool) throws -> any RecordStore {
        let uri = try parsedURI()
        let timeout = try StoreOptions.duration(keyringTimeout, option: "--keyring-timeout")
        return try CLI.backends.open(
            uri,
            options: Self.openOptions(for: uri, key: key, keyringTimeout: timeout, requireExisting: requireExisting))
    }

    /// Opens the store, first making sure a `defaults:` suite file exists: reading a suite that
    /// is not there would otherwise look like an empty store (a mistyped path would say "no
    /// records"). Commands that only read or change what exists (status, plan, run, show, get,
    /// delete) use this; `put` and `trial start` create the file instead.
    ///
    /// - Throws: `.notFound` naming the store when the suite file does not exist.
    func openExistingStore() throws -> any RecordStore {
        do {
            return try open(requireExisting: true)
        } catch let error as KeepsakeError where error.code == .notFound {
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

/// `--store` and the master key, for the commands that work on `file:` stores only (`init`,
/// `rekey`).
struct FileStoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The encrypted store: file:DIR (DIR may start with ~/).", valueName: "uri"), completion: Completions.store)
    var store: String

    @OptionGroup(title: "Master key of the store (one of)")
    var key: KeySourceOptions

    func parsedURI() throws -> StoreURI { try StoreLocator.parse(store, option: "--store") }

    /// Opens the store with its master key.
    func openStore() throws -> any RecordStore {
        let uri = try parsedURI()
        return try CLI.backends.open(uri, options: StoreLocator.openOptions(for: uri, key: key, keyringTimeout: nil))
    }
}

/// `--device-id` and `--app-id`: the device identity migration steps and the trial guard record.
struct DeviceOptions: ParsableArguments {
    @Option(name: .long, help: deviceIDHelp)
    var deviceID: String?

    @Option(name: .long, help: appIDHelp)
    var appID: String?

    static let deviceIDHelp = ArgumentHelp(
        "Device identity recorded by steps that ask for one (default: derived from /etc/machine-id and --app-id).",
        valueName: "id")
    static var appIDHelp: ArgumentHelp {
        ArgumentHelp(
            "App identifier the default device identity is derived with (default: \(CLI.appID)).",
            valueName: "id")
    }

    func context() -> MigrationContext { Self.context(deviceID: deviceID, appID: appID) }

    /// The migration context: the system clock, random identifiers, and the device identity —
    /// `--device-id`, or derived from the machine id the first time a step asks for it, so a
    /// machine without `/etc/machine-id` can still migrate records whose steps need none.
    static func context(deviceID: String?, appID: String?) -> MigrationContext {
        if let deviceID { return .live(deviceIdentity: deviceID) }
        return .live(appID: appID ?? CLI.appID)
    }
}

/// What the commands that match records to models take (`status`, `plan`, `run`, `show`): the
/// store, `--model`, and the device identity.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: StoreLocator.storeHelp, completion: Completions.store)
    var store: String

    @OptionGroup(title: "Master key of a file: store (one of)")
    var key: KeySourceOptions

    @Option(name: .long, help: StoreLocator.keyringTimeoutHelp)
    var keyringTimeout: Double = 5

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Treat KEY as a record of model NAME (repeatable; see `\(CLI.name) models`).",
            valueName: "key=name"), completion: Completions.model)
    var model: [String] = []

    @Option(name: .long, help: DeviceOptions.deviceIDHelp)
    var deviceID: String?

    @Option(name: .long, help: DeviceOptions.appIDHelp)
    var appID: String?

    var locator: StoreLocator { StoreLocator(store: store, key: key, keyringTimeout: keyringTimeout) }

    func validate() throws {
        try locator.validate()
        _ = try keyModels()
    }

    /// The longest deadline a `--…timeout` option accepts, in seconds (an hour).
    static let maxTimeoutSeconds = 3600.0

    /// A timeout option in seconds as a `Duration`: a usage error unless it is a number from a
    /// millisecond to ``maxTimeoutSeconds`` (not `inf`, `nan`, zero or negative).
    static func duration(_ seconds: Double, option: String) throws -> Duration {
        guard seconds.isFinite, seconds >= 0.001, seconds <= maxTimeoutSeconds else {
            throw ValidationError("\(option) must be a number of seconds from 0.001 to \(Int(maxTimeoutSeconds))")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    func parsedURI() throws -> StoreURI { try locator.parsedURI() }

    /// `--model key=name` as a dictionary, names checked against the known models.
    func keyModels() throws -> [String: String] {
        var result: [String: String] = [:]
        let chains = CLI.chains
        for pair in model + CLI.modelOptions {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw usageError("--model takes KEY=NAME (got '\(pair)')")
            }
            guard chains.contains(where: { $0.name == parts[1] }) else {
                let names = chains.isEmpty ? "none" : chains.map(\.name).joined(separator: ", ")
                throw usageError("unknown model '\(parts[1])' in --model; known models: \(names)")
            }
            result[parts[0]] = parts[1]
        }
        return result
    }

    /// Opens the store (see ``StoreLocator/openStore()``).
    func openStore() throws -> any RecordStore { try locator.openStore() }

    func context() -> MigrationContext { DeviceOptions.context(deviceID: deviceID, appID: appID) }

    /// A migrator on the store, which must exist (see ``StoreLocator/openExistingStore()``).
    func migrator() throws -> Migrator {
        Migrator(
            store: try locator.openExistingStore(), chains: CLI.chains, context: context(),
            keyModels: try keyModels())
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

/// Runs `body`. Errors it throws are reported by the runner (``MigrateCommand``): a
/// ``KeepsakeError`` with its message and exit code, as JSON too with `--json`.
func guarded(_ body: () throws -> Void) throws {
    try body()
}
