#if CLI
import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Delete: StoreCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Remove the value under a key.",
                    usage: "\(CLI.name) delete <key> --store <uri> [<options>]")
            }
        }

        @OptionGroup var store: StoreLocationOptions<TheStore>
        @OptionGroup var keyring: KeyringTimeoutOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.", completion: Completions.key)
        var key: String

        func run() throws {
            let store = try openExistingStore()
            let existing = try requireData(store, key)
            let results = try store.commit([StoreWrite(key: key, value: nil, expectation: .unchanged(existing))])
            if results != [.applied] {
                throw KeepsakeError(
                    .conflict, store: store.uri, key: key,
                    "the value changed while it was being deleted; it was kept")
            }
            if output.json {
                printJSON(["store": .string(store.uri), "key": .string(key), "deleted": true] as JSONValue)
            } else {
                say("Deleted '\(key)' from \(store.uri)")
            }
        }
    }
}
#endif
