import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove the value under a key.")

        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.")
        var key: String

        func run() throws {
            try guarded {
                let store = try storeOptions.openStore()
                let existing = try requireData(store, key)
                let results = try store.commit([StoreWrite(key: key, value: nil, expectation: .unchanged(existing))])
                if results != [.applied] {
                    throw KeepsakeError(.conflict, store: store.uri, key: key,
                                        "the value changed while it was being deleted; it was kept")
                }
                if output.json {
                    printJSON(["key": key, "deleted": "true", "store": store.uri])
                } else {
                    say("Deleted '\(key)' from \(store.uri)")
                }
            }
        }
    }
}
