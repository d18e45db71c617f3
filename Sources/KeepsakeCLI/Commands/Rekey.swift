import ArgumentParser
import Foundation
import Keepsake
import KeepsakeSodium

extension Migrate {
    struct Rekey: ParsableCommand {
        static var configuration: CommandConfiguration {
            ConfigurationCache.configuration(of: Self.self) {
                CommandConfiguration(
                    abstract: "Change the master key (or passphrase) of an encrypted file: store.",
                    usage: "\(CLI.name) rekey --store file:<dir> <key option> <new key option>",
                    discussion: """
                        Only the store's header is rewritten, in one atomic replace: if interrupted, the store opens with the old key or the new one, and every record is intact.

                        Examples:
                          \(CLI.name) rekey --store file:DIR --key-file OLD.key --new-key-file NEW.key
                          \(CLI.name) rekey --store file:DIR --passphrase-env OLD_PW \\
                            --new-passphrase-env NEW_PW
                          \(CLI.name) rekey --store file:DIR --key-file OLD.key --new-keyring-key
                          \(CLI.name) rekey --store file:DIR --keyring-key --new-key-file NEW.key
                        Rekeying away from the keyring leaves the keyring's item as it is.
                        """)
            }
        }

        @OptionGroup var storeOptions: FileStoreOptions
        @OptionGroup var output: OutputOptions

        @Option(name: .long, help: ArgumentHelp("The new key file (created 0600 if absent).", valueName: "path"))
        var newKeyFile: String?

        @Option(name: .long, help: ArgumentHelp("A file holding the new passphrase.", valueName: "path"))
        var newPassphraseFile: String?

        @Option(
            name: .long, help: ArgumentHelp("An environment variable holding the new passphrase.", valueName: "var"))
        var newPassphraseEnv: String?

        @Flag(name: .long, help: "Ask for the new passphrase on the terminal, without echo.")
        var askNewPassphrase = false

        @Flag(
            name: .long,
            help: "Keep the new master key in the keyring (a new random key, unless it holds one for this store).")
        var newKeyringKey = false

        func validate() throws {
            guard StoreLocator.takesMasterKey(try storeOptions.parsedURI()) else {
                throw ValidationError("rekey works on \(StoreLocator.masterKeyStores) stores")
            }
        }

        func run() throws {
            try guarded {
                let store = try storeOptions.openStore()
                guard let fileStore = store as? any MasterKeyedStore else {
                    throw ValidationError("rekey works on \(StoreLocator.masterKeyStores) stores")
                }
                let newSource = try KeySourceOptions.source(
                    keyFile: newKeyFile, passphraseFile: newPassphraseFile, passphraseEnv: newPassphraseEnv,
                    ask: askNewPassphrase, keyring: newKeyringKey, prefix: "new-", askOption: "ask-new-passphrase",
                    store: fileStore.uri)
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
}
