#if CLI
import ArgumentParser
import Foundation
import Keepsake
import KeepsakeSodium

extension Migrate {
    struct Init: OutputCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Create an encrypted file: store.",
                    usage: "\(CLI.name) init --store file:<dir> <master key option> [<options>]",
                    discussion: """
                        With --master-key file:PATH, a new key file (32 random bytes, mode 0600) is created at PATH if nothing is there; keep it apart from the store. With --master-key keyring, a new random key is kept in the desktop keyring, as an item naming the store's id. With a passphrase (--master-key passphrase-file:PATH, passphrase-env:VAR or ask) instead, the store is protected by the passphrase (Argon2id, moderate limits).

                        Example:
                          \(CLI.name) init --store file:/var/lib/app/records \\
                            --master-key file:/etc/app/records.key
                        """)
            }
        }

        @OptionGroup var storeOptions: StoreLocationOptions<TheStore>
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard storeOptions.store.uri.scheme == SodiumFileBackend().scheme else {
                throw ValidationError("init creates file: stores; a defaults: suite is created by its first write")
            }
        }

        func run() throws {
            let uri = storeOptions.store.uri
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
#endif
