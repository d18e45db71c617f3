import ArgumentParser
import Foundation

/// The root command. Its name, version and the chains its subcommands use come from
/// ``CLIConfiguration/current``, set by ``MigrateCommand/main(chains:commandName:version:arguments:)``.
struct Migrate: ParsableCommand {
    static var configuration: CommandConfiguration {
        ConfigurationCache.configuration(of: Self.self) { configuration(name: CLI.name) }
    }

    private static func configuration(name: String) -> CommandConfiguration {
        CommandConfiguration(
            commandName: name,
            abstract: "Inspect and migrate the versioned records of a Keepsake store.",
            discussion: """
                Every command but models and doctor takes --store URI:
                  defaults:PATH    a defaults-style JSON suite file (created by its first
                                   write; a PATH may start with ~/)
                  file:DIR         an encrypted store (libsodium), created by
                                   `\(name) init`; its master key comes from --key-file,
                                   --passphrase-file, --passphrase-env, --ask-passphrase
                                   or --keyring-key
                  keyring:SERVICE  the desktop keyring (Secret Service, through libsecret):
                                   one item per record, attributes service=SERVICE and
                                   username=KEY

                Records are matched to a model by the envelope's schema, else by --model KEY=NAME, else by the model's default keys (see `\(name) models`); other keys are unmanaged and never touched.

                Every command takes --json (one JSON object or array on standard output, failures included), --verbose (log what is migrated, written and waited for) and --quiet.

                EXIT CODES
                \(Exit.helpText())
                When records are both unreadable and newer, 65 wins.
                """,
            version: CLIConfiguration.current.version ?? "",
            subcommands: [
                Status.self, Plan.self, Run.self, Show.self, Get.self, Put.self, Delete.self, Models.self,
                Init.self, Rekey.self, Copy.self, Trial.self, Doctor.self
            ]
        )
    }
}
