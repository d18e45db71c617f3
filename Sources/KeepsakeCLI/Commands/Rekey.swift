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
                    abstract:
                        "Change a file: store's master key or data key, or re-seal a sealed table under its new key.",
                    usage: """
                        \(CLI.name) rekey --store <uri> --master-key <old> --new-master-key <new>
                          \(CLI.name) rekey --store <uri> --master-key <key> --data-key
                          \(CLI.name) rekey --store <sealed table uri> [--batch-size <n>]
                        """,
                    discussion: """
                        A file: store: only the store's header is rewritten, in one atomic replace: if interrupted, the store opens with the old key or the new one, and every record is intact.

                        A file: store with --data-key: a new random data key is added to the header and writes use it from then on (apps that have the store open pick it up at their next write); every record is then sealed again under it, a batch per turn of the store's lock, while apps keep reading and writing; when none is left under the old data key, the header drops it, so a copy of an old header no longer opens new records. Killed, it resumes where it stopped when run again. The first rotation moves the store to format 2, which releases before this one cannot read.

                        A sealed table (postgresql:): every value not sealed under the store's primary key (sealkey_file= or sealkey_env=, or --master-key) is opened with its previous keys (sealkey_previous_file=, or VAR_PREVIOUS beside sealkey_env=VAR) and sealed again under the primary key, a batch at a time, each batch one compare-and-swap transaction, while apps keep reading and writing: give them the same key set first. A value another writer changes meanwhile keeps that writer's bytes. When no value is left under another key, the table's seal keeps only the primary key, and a writer that holds only an old key is refused from then on. Killed, it resumes where it stopped when run again. Exit 65 when some values open with no key given (they are left as they are and named), 75 when values under an old key are left (a writer still writes with it).

                        Examples:
                          \(CLI.name) rekey --store file:DIR --master-key file:OLD.key \\
                            --new-master-key file:NEW.key
                          \(CLI.name) rekey --store file:DIR --master-key passphrase-env:OLD_PW \\
                            --new-master-key passphrase-env:NEW_PW
                          \(CLI.name) rekey --store file:DIR --master-key file:OLD.key \\
                            --new-master-key keyring
                          \(CLI.name) rekey --store file:DIR --master-key keyring \\
                            --new-master-key file:NEW.key
                          \(CLI.name) rekey --store file:DIR --master-key file:KEY --data-key
                          \(CLI.name) rekey \\
                            --store "$DB&sealkey_file=new.key&sealkey_previous_file=old.key"
                        Rekeying to the keyring (from it too) makes a new key and keeps the item's earlier keys after it: a rekey interrupted before the header was rewritten, or a copy of an older header, still opens. Rekeying away from the keyring leaves the keyring's item as it is. $DB is a sealed table's postgresql:// URI, with its ?table=.
                        """)
            }
        }

        @OptionGroup var storeOptions: StoreLocationOptions<TheStore>
        @OptionGroup var output: OutputOptions

        @OptionGroup(title: "New master key")
        var newKey: KeyOptions<NewKey>

        @Flag(name: .long, help: "Rotate a file: store's data key, sealing every record again.")
        var dataKey = false

        @Option(name: .long, help: ArgumentHelp("Values re-sealed per batch (data key, sealed table).", valueName: "n"))
        var batchSize = 512

        func validate() throws {
            guard storeOptions.store.takesMasterKey || storeOptions.store.takesSealingKey else {
                throw ValidationError(
                    "rekey works on \(StoreArgument.masterKeyStores) stores and sealed \(StoreArgument.sealableStores) tables"
                )
            }
            guard (1...10_000).contains(batchSize) else { throw ValidationError("--batch-size takes 1 to 10000") }
            if dataKey {
                guard storeOptions.store.takesMasterKey else {
                    throw ValidationError("--data-key works on \(StoreArgument.masterKeyStores) stores")
                }
                guard newKey.given.isEmpty else {
                    throw ValidationError("--data-key keeps the master key; change it in a run of its own")
                }
            }
        }

        func run() throws {
            let store = try storeOptions.open(keyringTimeout: nil)
            if dataKey, let fileStore = store as? SodiumFileStore {
                try fileStore.beginDataKeyRotation()
                try ResealOutput.run(fileStore, batchSize: batchSize, output: output, verb: "re-sealing") {
                    "Removed from the store's header: \($0) — a copy of an old header no longer opens new records."
                }
                return
            }
            if !(store is any MasterKeyedStore), let sealed = store as? any ResealableStore {
                guard newKey.given.isEmpty else {
                    throw usageError(
                        """
                        a sealed table's new key is its primary key (sealkey_file= or sealkey_env= in the URI, or \
                        --master-key) and its old keys are its previous keys (sealkey_previous_file=); \
                        --new-master-key is for file: stores
                        """)
                }
                guard sealed.writtenKeyID != "plain" else {
                    throw usageError(
                        """
                        \(sealed.uri) has no master key to re-seal under; give one (sealkey_file=, sealkey_env= or \
                        --master-key) — unsealing a table is `\(CLI.name) seal --allow-plaintext`
                        """)
                }
                try ResealOutput.run(sealed, batchSize: batchSize, output: output, verb: "re-sealing")
                return
            }
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
