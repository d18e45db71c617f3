import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a record's bytes exactly as stored, without migrating them.")

        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.")
        var key: String

        func run() throws {
            try guarded {
                let store = try storeOptions.openStore()
                let bytes = try requireData(store, key)
                if output.json {
                    printJSON(["key": key, "value": String(decoding: bytes, as: UTF8.self)])
                } else {
                    FileHandle.standardOutput.write(bytes)
                    if standardErrorIsTerminal && bytes.last != UInt8(ascii: "\n") { print() }
                }
            }
        }
    }
}
