import ArgumentParser
import Foundation

/// The root command. Its name, version and the chains its subcommands use come from
/// ``CLIConfiguration/current``, set by ``MigrateCommand/main(chains:commandName:version:arguments:)``.
struct Migrate: ParsableCommand {
    static var configuration: CommandConfiguration {
        let name = CLI.name
        return CommandConfiguration(
            commandName: name,
            abstract: "Inspect and migrate the versioned records of a Keepsake store.",
            discussion: """
                Every command takes --store URI:
                  defaults:PATH    a defaults-style JSON suite file (created on first write)
                  file:DIR         an encrypted store (libsodium), created by `\(name) init`; give its
                                   master key with --key-file PATH, --passphrase-file PATH,
                                   --passphrase-env VAR, --ask-passphrase or --keyring-key
                  keyring:SERVICE  the desktop keyring (Secret Service, through libsecret): one item
                                   per record with attributes service=SERVICE, username=KEY

                Records are matched to a model by the envelope's schema, else by --model KEY=NAME,
                else by the model's default keys (see `\(name) models`); other keys are unmanaged
                and never touched.

                EXIT CODES
                  0   success (outdated records are not an error for status and plan)
                  1   unexpected internal error
                  64  usage error
                  65  a managed record is unreadable: corrupt, unrecognised, ambiguous, its
                      migration step failed or needs a device identity (it was left untouched)
                  66  no record under the given key
                  67  a managed record was written by a newer release (left untouched)
                  68  the store's own data is corrupt (e.g. a suite file that is not a JSON object)
                  69  the store is unavailable
                  70  the store is locked
                  71  wrong master key or passphrase for a file: store
                  73  a record changed while being migrated, or its backup failed (left untouched)
                  74  an I/O error
                  75  timed out waiting for the store's lock or an answer; try again
                  77  permission denied
                  80–82  `\(name) trial`: expired, clock moved back, unknown (see `\(name) trial --help`)
                  83–86  `\(name) copy`: destination key exists, value the destination cannot hold,
                         destination restored after a failure, records in both stores (see
                         `\(name) copy --help`)
                When records are both unreadable and newer, 65 wins.
                """,
            version: CLIConfiguration.current.version ?? "",
            subcommands: [Status.self, Plan.self, Run.self, Show.self, Get.self, Put.self, Delete.self, Models.self,
                          Init.self, Rekey.self, Copy.self, Trial.self, Doctor.self]
        )
    }
}
