import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Put: ParsableCommand {
        static var configuration: CommandConfiguration {
            ConfigurationCache.configuration(of: Self.self) {
                CommandConfiguration(
                    abstract: "Store standard input under a key, exactly as given (to seed or restore records).",
                    usage: "\(CLI.name) put <key> --store <uri> [--string] [<options>]",
                    discussion: """
                        Nothing is migrated or checked beyond what the store needs (a defaults suite holds JSON values). Use --string to store the input as a JSON string, the way UserDefaults-era apps stored JSON records. A defaults: suite file is created if it does not exist.

                        Example:
                          echo '{"name":"Ada","age":"36"}' | \(CLI.name) put person --store defaults:suite.json
                        """)
            }
        }

        @OptionGroup var storeOptions: StoreAccessOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.", completion: Completions.key)
        var key: String

        @Flag(name: .long, help: "Store the input text as a JSON string value.")
        var string = false

        func run() throws {
            try guarded {
                let store = try storeOptions.openStore()
                var bytes = FileHandle.standardInput.readDataToEndOfFile()
                if string {
                    var text = String(decoding: bytes, as: UTF8.self)
                    while text.last == "\n" { text.removeLast() }
                    bytes = try JSONEncoder().encode(text)
                } else {
                    while bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
                }
                try store.setData(bytes, forKey: key)
                if output.json {
                    printJSON(
                        ["store": .string(store.uri), "key": .string(key), "bytes": .int(bytes.count)] as JSONValue)
                } else {
                    say("Stored \(bytes.count) bytes under '\(key)' in \(store.uri)")
                }
            }
        }
    }
}
