#if CLI
import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Put: StoreCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Store standard input under a key, exactly as given (to seed or restore records).",
                    usage: """
                        \(CLI.name) put <key> --store <uri> [--string] [--strip-newline]
                        \(CLI.name) put <key> --store <uri> --from-backup <path>
                        """,
                    discussion: """
                        The bytes read are stored exactly, a trailing newline included; --strip-newline removes one trailing newline (what echo adds). Nothing is migrated or checked beyond what the store needs (a defaults suite holds JSON values). Use --string to store the input as a JSON string, the way UserDefaults-era apps stored JSON records. A defaults: suite file is created if it does not exist.

                        With --from-backup, the record's original bytes are taken from a run --backup folder (its records.jsonl, or the <key>.json files earlier releases wrote), or from one such file, exactly as they were stored, instead of from standard input.

                        Examples:
                          printf '%s' '{"name":"Ada","age":"36"}' | \(CLI.name) put person --store defaults:suite.json
                          echo '{"name":"Ada","age":"36"}' | \(CLI.name) put person --store defaults:suite.json --strip-newline
                          \(CLI.name) put person --store defaults:suite.json --from-backup suite.backups/20261121T094500Z
                        """)
            }
        }

        @OptionGroup var store: StoreLocationOptions<TheStore>
        @OptionGroup var keyring: KeyringTimeoutOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The record's key.", completion: Completions.key)
        var key: String

        @Flag(name: .long, help: "Store the input text as a JSON string value.")
        var string = false

        @Flag(name: .long, help: "Remove one trailing newline from standard input (what echo adds).")
        var stripNewline = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Store the key's original bytes from this backup folder or file instead of standard input.",
                valueName: "path"),
            completion: .file())
        var fromBackup: String?

        func validate() throws {
            if string && fromBackup != nil { throw ValidationError("--string and --from-backup cannot be combined") }
            if stripNewline && fromBackup != nil {
                throw ValidationError("--strip-newline applies to standard input; a backup is stored exactly")
            }
        }

        func run() throws {
            // A backup is read before the store is opened: one that does not hold the key writes nothing.
            let original = try fromBackup.map { path in try BackupDirectory.original(forKey: key, at: path) }
            let store = try openStore()
            var bytes = original?.bytes ?? FileHandle.standardInput.readDataToEndOfFile()
            // Exactly as read (or as backed up); one newline goes only when asked.
            if stripNewline, bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
            if string {
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw KeepsakeError(
                        .valueRefused, store: store.uri, key: key,
                        "--string needs UTF-8 text on standard input; these bytes are not UTF-8")
                }
                bytes = try JSONEncoder().encode(text)
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
#endif
