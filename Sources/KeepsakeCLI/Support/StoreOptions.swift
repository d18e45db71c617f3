import ArgumentParser
import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeSodium
import Migrations

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
        "Treat KEY as a record of model NAME (repeatable). See `migrate models` for names.",
        valueName: "key=name"))
    var model: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "Device identity recorded by migration steps (default: derived from /etc/machine-id and --app-id).",
        valueName: "id"))
    var deviceID: String?

    @Option(name: .long, help: ArgumentHelp(
        "App identifier the default device identity is derived with.", valueName: "id"))
    var appID: String = "org.keepsake.migrate"

    func validate() throws {
        let (scheme, _) = try parsedURI()
        _ = try keyModels()
        if scheme != "file" && key.given {
            throw ValidationError("--key-file and the passphrase options are for file: stores")
        }
        guard keyringTimeout > 0 else { throw ValidationError("--keyring-timeout must be more than 0") }
    }

    /// The store URI split into scheme and location.
    func parsedURI() throws -> (scheme: String, location: String) {
        guard let colon = store.firstIndex(of: ":") else {
            throw ValidationError("--store must look like defaults:PATH, file:DIR or keyring:SERVICE (got '\(store)')")
        }
        let scheme = String(store[..<colon])
        var location = String(store[store.index(after: colon)...])
        guard !location.isEmpty else { throw ValidationError("--store \(scheme): needs a location after the colon") }
        if location.hasPrefix("~/"), let home = ProcessInfo.processInfo.environment["HOME"] {
            location = home + location.dropFirst()
        }
        switch scheme {
        case "defaults", "file": return (scheme, location)
        case "keyring": return (scheme, String(store[store.index(after: colon)...]))
        default:
            throw ValidationError("unknown store kind '\(scheme)'; use defaults:PATH, file:DIR or keyring:SERVICE")
        }
    }

    /// `--model key=name` as a dictionary, names checked against the known models.
    func keyModels() throws -> [String: String] {
        var result: [String: String] = [:]
        for pair in model {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ValidationError("--model takes KEY=NAME (got '\(pair)')")
            }
            guard SampleModels.all.contains(where: { $0.name == parts[1] }) else {
                let names = SampleModels.all.map(\.name).joined(separator: ", ")
                throw ValidationError("unknown model '\(parts[1])' in --model; known models: \(names)")
            }
            result[parts[0]] = parts[1]
        }
        return result
    }

    /// Opens the store.
    func openStore() throws -> any RecordStore {
        let (scheme, location) = try parsedURI()
        switch scheme {
        case "file":
            return try SodiumFileStore(directory: location, key: try key.source(for: store))
        case "keyring":
            return try KeyringStore.open(service: location, timeout: .milliseconds(Int(keyringTimeout * 1000)))
        default:
            return DefaultsStore(path: location)
        }
    }

    /// The migration context: the system clock, random identifiers, the device identity.
    func context() throws(KeepsakeError) -> MigrationContext {
        if let deviceID { return .live(deviceIdentity: deviceID) }
        do throws(KeepsakeError) {
            return .live(deviceIdentity: try DeviceIdentity.derived(appID: appID))
        } catch {
            var error = error
            error.message += "; pass --device-id ID to name this device"
            throw error
        }
    }

    func migrator() throws -> Migrator {
        Migrator(store: try openStore(), chains: SampleModels.all, context: try context(), keyModels: try keyModels())
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
