import ArgumentParser
import Keepsake

extension Migrate {
    struct Plan: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what `run` would do to each record, step by step; nothing is written.",
            discussion: """
                Every step runs in memory and its result is verified, so a record that would fail
                shows here as unreadable, with the reason.
                """)

        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            try guarded {
                let migrator = try storeOptions.migrator()
                let reports = try migrator.plan()
                try finish(reports, json: output.json) {
                    print("Plan for \(migrator.store.uri) (nothing is written)")
                    printPlan(reports)
                }
            }
        }
    }
}

/// One line per record: what `run` does with it.
func printPlan(_ reports: [RecordReport]) {
    let width = reports.map(\.key.count).max() ?? 0
    for report in reports {
        let key = report.key.padding(toLength: width, withPad: " ", startingAt: 0)
        let model = report.schema ?? "-"
        switch report.state {
        case .outdated, .migrated:
            let path = ([report.storedVersion ?? 0] + report.steps).map { "v\($0)" }.joined(separator: " → ")
            print("  \(key)  \(model) \(path)  (\(report.formText))")
        case .current:
            print("  \(key)  \(model) \(report.latestText)  up to date, nothing to do")
        case .newerReadable:
            print("  \(key)  \(model) \(report.storedText)  newer than \(report.latestText) but readable by it; left untouched")
        case .newer:
            print("  \(key)  \(model) \(report.storedText)  newer than \(report.latestText); left untouched")
        case .unreadable:
            print("  \(key)  \(model)  cannot migrate: \(report.errorText ?? "unreadable"); left untouched")
        case .unmanaged:
            print("  \(key)  unmanaged; left alone")
        }
    }
    print(summary(reports))
}
