#if CLI
import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Get: StoreCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Print a record's bytes exactly as stored, without migrating them.",
                    usage: "\(CLI.name) get <key> --store <uri> [<options>]",
                    discussion: """
                        With --json: {"store", "key", "bytes": the stored length, "value": the bytes as text, or null when they are not UTF-8, "base64": the bytes in base64 when they are not UTF-8, else null}.
                        """)
            }
        }

        @OptionGroup var store: StoreLocationOptions<TheStore>
        @OptionGroup var keyring: KeyringTimeoutOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.", completion: Completions.key)
        var key: String

        func run() throws {
            let store = try openExistingStore()
            let bytes = try requireData(store, key)
            if output.json {
                let text = String(validating: bytes, as: UTF8.self)
                printJSON(
                    [
                        "store": .string(store.uri), "key": .string(key), "bytes": .int(bytes.count),
                        "value": JSONValue(text), "base64": text == nil ? .string(bytes.base64EncodedString()) : nil
                    ] as JSONValue)
            } else {
                FileHandle.standardOutput.write(bytes)
                if standardErrorIsTerminal && bytes.last != UInt8(ascii: "\n") { print() }
            }
        }
    }
}
#endif
