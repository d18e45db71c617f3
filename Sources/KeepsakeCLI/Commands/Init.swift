import ArgumentParser
import Foundation
import Keepsake
import KeepsakeSodium

extension Migrate {
    struct Init: ParsableCommand {
        static var configuration: CommandConfiguration {
            ConfigurationCache.configuration(of: Self.self) {
                CommandConfiguration(
                    abstract: "Create an encrypted file: store.",
                    usage: "\(CLI.name) init --store file:<dir> <master key option> [<options>]",
                    discussion: """
                        With --key-file PATH, a new key file (32 random bytes, mode 0600) is created at PATH if nothing is there; keep it apart from the store. With --keyring-key, a new random key is kept in the desktop keyring, as an item naming the store's id. With a passphrase option instead, the store is protected by the passphrase (Argon2id, moderate limits).

                        Example:
                          \(CLI.name) init --store file:/var/lib/app/records \\
                            --key-file /etc/app/records.key
                        """)
            }
        }

        @OptionGroup var storeOptions: FileStoreOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard try storeOptions.parsedURI().scheme == SodiumFileBackend().scheme else {
                throw ValidationError("init creates file: stores; a defaults: suite is created by its first write")
            }
        }

        func run() throws {
            try guarded {
                let uri = try storeOptions.parsedURI()
                let source = try storeOptions.key.source(for: uri.description)
                let store = try SodiumFileStore.create(directory: uri.location, key: source)
                if output.json {
                    printJSON(
                        [
                            "store": .string(store.uri), "id": .string(store.identifier),
                            "masterKey": .string(source.description)
                        ] as JSONValue)
                } else {
                    say("Created \(store.uri) (id \(store.identifier)), protected by \(source)")
                }
            }
        }
    }
}
