#if CLI
import ArgumentParser
import Foundation
import Keepsake

extension Migrate {
    struct Seal: OutputCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Seal a table's plain values in place while apps serve it (or unseal it).",
                    usage: "\(CLI.name) seal --store <uri> [--allow-plaintext] [--batch-size <n>]",
                    discussion: """
                        Brings every value of the table to what the store writes: sealed under its master key (sealkey_file= or sealkey_env= in the URI, or --master-key), a batch at a time, each batch one compare-and-swap transaction. Apps keep reading and writing meanwhile when they hold the same key set: the key, and sealkey_previous=plain so that they read the values not sealed yet. When every value is sealed, the table's seal records it sealed, and a writer without the key is refused from then on. Killed, it resumes where it stopped when run again.

                        Unsealing — a store with no master key, only previous keys (sealkey_previous_file=) — writes the table's secrets in plain text, so it is refused without --allow-plaintext.

                        Exit 65 when some values open with no key given (left as they are and named), 75 when values are left because a writer still writes the other way.

                        Examples:
                          \(CLI.name) seal --store 'postgresql://app@db/app?sealkey_file=/keys/records.key&sealkey_previous=plain'
                          \(CLI.name) seal --store 'postgresql://app@db/app?sealkey_previous_file=/keys/records.key' --allow-plaintext
                        """)
            }
        }

        @OptionGroup var storeOptions: StoreLocationOptions<TheStore>

        @Flag(name: .long, help: "Unseal: write the table's values in plain text (a store with only previous keys).")
        var allowPlaintext = false

        @Option(name: .long, help: ArgumentHelp("Values sealed per transaction.", valueName: "n"))
        var batchSize = 512

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard storeOptions.store.takesSealingKey else {
                throw ValidationError("seal works on \(StoreArgument.sealableStores) tables")
            }
            guard (1...10_000).contains(batchSize) else { throw ValidationError("--batch-size takes 1 to 10000") }
        }

        func run() throws {
            let store = try storeOptions.open(keyringTimeout: nil)
            guard let sealed = store as? any ResealableStore else {
                throw ValidationError("seal works on \(StoreArgument.sealableStores) tables")
            }
            if sealed.writtenKeyID == "plain" && !allowPlaintext {
                throw usageError(
                    """
                    \(sealed.uri) has no master key, so sealing it would write every value in plain text; give its \
                    key (sealkey_file=, sealkey_env= or --master-key), or --allow-plaintext to unseal the table
                    """)
            }
            try ResealOutput.run(sealed, batchSize: batchSize, output: output, verb: "sealing")
        }
    }
}
#endif
