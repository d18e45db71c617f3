import ArgumentParser
import Foundation
import Keepsake
import KeepsakeSodium
import KeepsakeStores

/// Options every command shares: which store, how keys map to models, the device identity.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The store to use: defaults:PATH, file:DIR or keyring:SERVICE.", valueName: "uri"))
    var store: String

    @OptionGroup(title: "Master key of a file: store (one of)")
    var key: KeySourceOptions

    @Option(name: .long, help: ArgumentHelp(
        "How long a keyring call may take before it fails, in seconds.", valueName: "seconds"))
    var keyringTimeout: Double = 5

    @Option(name: .long, help: ArgumentHelp(
        "Treat KEY as a record of model NAME (repeatable). See `\(CLI.name) models` for names.",
        valueName: "key=name"))
    var model: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "Device identity recorded by migration steps that ask for one (default: derived from /etc/machine-id and --app-id, when a step asks).",
        valueName: "id"))
    var deviceID: String?

    @Option(name: .long, help: ArgumentHelp(
        "App identifier the default device identity is derived with (default: \(CLI.appID)).", valueName: "id"))
    var appID: String?

    func validate() throws {
        let uri = try parsedURI()
        _ = try keyModels()
        if uri.scheme == .memory {
            throw ValidationError("""
                a memory: store lives only inside one process; \(CLI.name) works on defaults:PATH, \
                file:DIR or keyring:SERVICE
                """)
        }
        if uri.scheme != .file && key.given {
            throw ValidationError("--key-file, --keyring-key and the passphrase options are for file: stores")
        }
        _ = try Self.duration(keyringTimeout, option: "--keyring-timeout")
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

    /// `--store`, parsed by the library's ``StoreURI`` (a usage error when it is not a URI).
    func parsedURI() throws -> StoreURI {
        do {
            return try StoreURI(parsing: store)
        } catch {
            throw usageError("--store: \(error.message)")
        }
    }

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

    /// Opens the store through ``StoreURI/open(options:)``, with the master key options for a
    /// `file:` store and `--keyring-timeout`.
    func openStore() throws -> any RecordStore {
        let uri = try parsedURI()
        let timeout = try Self.duration(keyringTimeout, option: "--keyring-timeout")
        let options = StoreOpenOptions(
            masterKey: uri.scheme == .file ? try key.source(for: uri.description, keyringTimeout: timeout) : nil,
            keyringTimeout: timeout)
        return try uri.open(options: options)
    }

    /// The migration context: the system clock, random identifiers, and the device identity —
    /// `--device-id`, or derived from the machine id the first time a step asks for it, so a
    /// machine without `/etc/machine-id` can still migrate records whose steps need none.
    func context() -> MigrationContext {
        if let deviceID { return .live(deviceIdentity: deviceID) }
        return .live(appID: appID ?? CLI.appID)
    }

    func migrator() throws -> Migrator {
        Migrator(store: try openStore(), chains: CLI.chains, context: context(), keyModels: try keyModels())
    }
}

/// `--json`.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print machine-readable JSON instead of a table.")
    var json = false
}

/// Runs `body`, turning a ``KeepsakeError`` into a printed message and its exit code.
func guarded(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as KeepsakeError {
        throw fail(error)
    }
}
