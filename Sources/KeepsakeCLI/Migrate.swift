#if CLI
import ArgumentParser
import Foundation
import Keepsake

/// The root command. Its name, version and the chains its subcommands use come from
/// ``CLIConfiguration/current``, bound by ``MigrateCommand`` around the parse and the run.
struct Migrate: ParsableCommand {
    static var configuration: CommandConfiguration {
        cachedConfiguration { configuration(name: CLI.name) }
    }

    /// The stores the command takes, one backend a row: its form, then what it is, wrapped to
    /// ``Exit/helpWidth`` (the width the man page keeps too).
    /// " A table that may be sealed (postgresql:, postgres:) takes one the same way…", or "".
    private static var sealableSentence: String {
        let sealable = StoreArgument.sealableStores
        guard !sealable.isEmpty else { return "" }
        return """
             A store that may be sealed (\(sealable)) takes its key the same way when it is sealed (or in its URI: \
            sealkey_file=PATH, sealkey_env=VAR).
            """
    }

    private static var storeForms: String {
        CLI.backends.all.filter(\.persists).map { backend in
            let form = "\(backend.scheme):\(backend.locationName)"
            let indent = String(repeating: " ", count: 19)
            var lines = wrap(backend.summary, width: Exit.helpWidth - 19).map { indent + $0 }
            if form.count <= 15, !lines.isEmpty {
                lines[0] = "  " + form.padding(toLength: 17, withPad: " ", startingAt: 0) + lines[0].dropFirst(19)
            } else {
                lines.insert("  " + form, at: 0)
            }
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    private static func configuration(name: String) -> CommandConfiguration {
        CommandConfiguration(
            commandName: name,
            abstract: "Inspect and migrate the versioned records of a Keepsake store.",
            discussion: """
                Every command but models and doctor takes --store URI:
                \(Self.storeForms)

                A store that takes a master key (\(StoreArgument.masterKeyStores)) gets it from --master-key SOURCE: file:PATH (a key file), passphrase-file:PATH, passphrase-env:VAR, ask (a prompt) or keyring; `\(name) init` creates an encrypted store.\(Self.sealableSentence) A PATH or DIR may start with ~/.

                Records are matched to a model by the envelope's schema, else by --model KEY=NAME, else by the model's default keys (see `\(name) models`); other keys are unmanaged and never touched.

                Every command takes --json (one JSON object or array on standard output, failures included), --verbose (log what is migrated, written and waited for) and --quiet.

                EXIT CODES
                \(Exit.helpText())

                When records are both unreadable and newer, 65 wins.
                """,
            version: CLIConfiguration.current.version ?? "",
            subcommands: [
                Status.self, Plan.self, Run.self, Show.self, Get.self, Put.self, Delete.self, Models.self,
                Init.self, Rekey.self, Seal.self, Copy.self, Watch.self
            ] + (CLI.hasTrial ? [Trial.self] : []) + [Doctor.self]
        )
    }
}
#endif
