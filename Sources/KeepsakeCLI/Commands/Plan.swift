#if CLI
import ArgumentParser
import Keepsake

extension Migrate {
    struct Plan: MigratorCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Show what `run` would do to each record, step by step; nothing is written.",
                    usage: "\(CLI.name) plan --store <uri> [<options>]",
                    discussion: """
                        Every step runs in memory and its result is verified, so a record that would fail shows here as unreadable, with the reason.
                        """)
            }
        }

        @OptionGroup var store: StoreLocationOptions<TheStore>
        @OptionGroup var keyring: KeyringTimeoutOptions
        @OptionGroup var models: ModelMappingOptions
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            let migrator = try migrator()
            let reports = try migrator.planReports()
            try finish(reports, store: migrator.store.uri, json: output.json) {
                say("Plan for \(migrator.store.uri) (nothing is written)")
                printPlan(reports)
            }
        }
    }
}

/// One line per record: what `run` does with it. Keys are escaped for the terminal before they
/// are padded, so the columns line up and no key can fake a line.
func printPlan(_ reports: some Collection<RecordReport>) {
    let keys = reports.map { escapedForTerminal($0.key) }
    let width = keys.map(\.count).max() ?? 0
    for (report, escapedKey) in zip(reports, keys) {
        let key = escapedKey.padding(toLength: width, withPad: " ", startingAt: 0)
        let model = report.schema ?? "-"
        switch report.state {
        case .outdated, .migrated:
            let path = ([report.storedVersion ?? 0] + report.steps).map { "v\($0)" }.joined(separator: " → ")
            say("  \(key)  \(model) \(path)  (\(report.formText))")
        case .current:
            say("  \(key)  \(model) \(report.latestText)  up to date, nothing to do")
        case .newerReadable:
            say(
                "  \(key)  \(model) \(report.storedText)  newer than \(report.latestText) but readable by it; left untouched"
            )
        case .newer:
            say("  \(key)  \(model) \(report.storedText)  newer than \(report.latestText); left untouched")
        case .unreadable:
            say("  \(key)  \(model)  cannot migrate: \(report.errorText ?? "unreadable"); left untouched")
        case .unmanaged:
            say("  \(key)  unmanaged; left alone")
        case .removed:  // only a run reports it, and a run does not print a plan
            say("  \(key)  \(model)  removed by another writer; nothing to do")
        }
    }
    if let hint = unmanagedHint(reports) { say(hint) }
    say(summary(reports))
}
#endif
