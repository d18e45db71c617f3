#if CLI
import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Show: MigratorCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Print a record migrated in memory to its latest version; nothing is written.",
                    usage: "\(CLI.name) show <key> --store <uri> [<options>]")
            }
        }

        @OptionGroup var store: StoreLocationOptions<TheStore>
        @OptionGroup var keyring: KeyringTimeoutOptions
        @OptionGroup var models: ModelMappingOptions
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.", completion: Completions.key)
        var key: String

        func run() throws {
            let migrator = try migrator()
            guard let (report, latest) = try migrator.preview(key: key) else {
                throw KeepsakeError(.notFound, store: migrator.store.uri, key: key, "no record under this key")
            }
            if let error = report.error { throw error }
            guard let latest else {
                throw KeepsakeError(
                    .invalidArgument, store: migrator.store.uri, key: key,
                    """
                    this key is not matched to a model; name one with --model \(key)=NAME \
                    (see `\(CLI.name) models`), or use `\(CLI.name) get \(key)` for the raw value
                    """)
            }
            let record = try JSONParser.parse(latest)
            if output.json {
                printJSON(
                    [
                        "store": .string(migrator.store.uri), "key": .string(key),
                        "schema": JSONValue(report.schema),
                        "storedVersion": JSONValue(report.storedVersion),
                        "latestVersion": JSONValue(report.latestVersion),
                        "state": .string(report.state.rawValue), "record": record
                    ] as JSONValue)
            } else {
                let change =
                    report.state == .outdated
                    ? "\(report.storedText) (\(report.formText)) → \(report.latestText), migrated in memory; nothing written"
                    : "\(report.latestText), current"
                if !CLI.quiet { printError("\(key): \(report.schema ?? "-") \(change)") }
                printJSON(record)
            }
        }
    }
}
#endif
