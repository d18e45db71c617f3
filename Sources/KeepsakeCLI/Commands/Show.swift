import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a record migrated in memory to its latest version; nothing is written.")

        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.")
        var key: String

        func run() throws {
            try guarded {
                let migrator = try storeOptions.migrator()
                guard let (report, latest) = try migrator.preview(key: key) else {
                    throw KeepsakeError(.notFound, store: migrator.store.uri, key: key, "no record under this key")
                }
                if let error = report.error { throw error }
                guard let latest else {
                    throw KeepsakeError(.invalidArgument, store: migrator.store.uri, key: key, """
                        this key is not matched to a model; name one with --model \(key)=NAME \
                        (see `\(CLI.name) models`), or use `\(CLI.name) get \(key)` for the raw value
                        """)
                }
                let record = try JSONSerialization.jsonObject(with: latest)
                if output.json {
                    let object: [String: Any] = [
                        "key": key, "schema": report.schema ?? NSNull(),
                        "storedVersion": report.storedVersion ?? NSNull(),
                        "latestVersion": report.latestVersion ?? NSNull(),
                        "state": report.state.rawValue, "record": record,
                    ]
                    writeJSON(try JSONSerialization.data(
                        withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
                } else {
                    let change = report.state == .outdated
                        ? "\(report.storedText) (\(report.formText)) → \(report.latestText), migrated in memory; nothing written"
                        : "\(report.latestText), current"
                    printError("\(key): \(report.schema ?? "-") \(change)")
                    writeJSON(try JSONSerialization.data(
                        withJSONObject: record, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
                }
            }
        }
    }
}
