#if CLI
import ArgumentParser
import Foundation
import Keepsake
import KeepsakeSodium

extension Migrate {
    struct Rekey: OutputCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Change the master key (or passphrase) of an encrypted file: store.",
                    usage: "\(CLI.name) rekey --store <uri> --master-key <old> --new-master-key <new>",
                    discussion: """
                        Only the store's header is rewritten, in one atomic replace: if interrupted, the store opens with the old key or the new one, and every record is intact.

                        Examples:
                          \(CLI.name) rekey --store file:DIR --master-key file:OLD.key \\
                            --new-master-key file:NEW.key
                          \(CLI.name) rekey --store file:DIR --master-key passphrase-env:OLD_PW \\
                            --new-master-key passphrase-env:NEW_PW
                          \(CLI.name) rekey --store file:DIR --master-key file:OLD.key \\
                            --new-master-key keyring
                          \(CLI.name) rekey --store file:DIR --master-key keyring \\
                            --new-master-key file:NEW.key
                        Rekeying away from the keyring leaves the keyring's item as it is.
                        """)
            }
        }

        @OptionGroup var storeOptions: StoreLocationOptions<TheStore>
        @OptionGroup var output: OutputOptions

        @OptionGroup(title: "New master key")
        var newKey: KeyOptions<NewKey>

        func validate() throws {
            guard storeOptions.store.takesMasterKey else {
                throw ValidationError("rekey works on \(StoreArgument.masterKeyStores) stores")
            }
        }

        func run() throws {
            let store = try storeOptions.open(keyringTimeout: nil)
            guard let fileStore = store as? any MasterKeyedStore else {
                throw ValidationError("rekey works on \(StoreArgument.masterKeyStores) stores")
            }
            let newSource = try newKey.source(for: fileStore.uri)
            try fileStore.changeMasterKey(to: newSource)
            let generation = try fileStore.keyGeneration()
            if output.json {
                printJSON(
                    [
                        "store": .string(fileStore.uri), "masterKey": .string(newSource.description),
                        "keyGeneration": .int(Int(generation))
                    ] as JSONValue)
            } else {
                say("\(fileStore.uri) is now protected by \(newSource) (key generation \(generation))")
            }
        }
    }
}
#endif
