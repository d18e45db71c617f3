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
                                   --passphrase-file, --passphrase-env or --ask-passphrase
                  keyring:SERVICE  the desktop keyring (Secret Service, through libsecret):
                                   one item per record, attributes service=SERVICE and
                                   username=KEY

                Records are matched to a model by the envelope's schema, else by --model KEY=NAME, else by the model's default keys (see `\(name) models`); other keys are unmanaged and never touched.

                Every command takes --json (one JSON object or array on standard output, failures included), --verbose (log what is migrated, written and waited for) and --quiet.

                EXIT CODES
                  0   success (outdated records are not an error for status and plan)
                  1   unexpected internal error
                  64  usage error
                  65  a managed record is unreadable: corrupt, unrecognised,
                      ambiguous, its migration step failed or needs a device
                      identity (it was left untouched)
                  66  no record under the given key, or no suite file at PATH
                  67  a managed record was written by a newer release (left untouched)
                  68  the store's own data is corrupt (e.g. a suite file that is not
                      a JSON object)
                  69  the store is unavailable
                  70  the store is locked
                  71  wrong master key or passphrase for a file: store
                  73  a record changed while being migrated, or its backup failed
                      (left untouched)
                  74  an I/O error
                  75  timed out waiting for the store's lock or an answer; try again
                  77  permission denied
                  80  `\(name) trial`: the trial expired
                  81  `\(name) trial`: the clock moved back
                  82  `\(name) trial`: the trial's state is unknown
                When records are both unreadable and newer, 65 wins.
                """,
            version: CLIConfiguration.current.version ?? "",
            subcommands: [Status.self, Plan.self, Run.self, Show.self, Get.self, Put.self, Delete.self, Models.self,
                          Init.self, Rekey.self, Trial.self, Doctor.self]
        )
    }
}
