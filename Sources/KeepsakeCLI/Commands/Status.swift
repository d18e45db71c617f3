#if CLI
import ArgumentParser
import Keepsake
import KeepsakeSodium

extension Migrate {
    struct Status: MigratorCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Show each key of the store with its model, stored and latest version, and state.",
                    usage: "\(CLI.name) status --store <uri> [<options>]",
                    discussion: """
                        States: current; outdated (run would migrate it); newerReadable (written by a newer release that declared this one able to read it; not an error); newer (written by a newer release this one cannot read); unreadable (cannot be read or migrated); unmanaged (not a known model; left alone).

                        Outdated records are migrated in memory to check they can be; nothing is written. A defaults: suite file that does not exist is reported as such (exit 66), not as an empty store.
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
            // A sealed table: how many values each key holds (a rotation's progress).
            // A file: store: only while a data key rotation is under way.
            let census = try (migrator.store as? any ResealableStore).map { store throws(KeepsakeError) in
                try store.keyCensus()
            }.flatMap { census in
                migrator.store is any MasterKeyedStore && census.entries.count <= 1 && census.outstanding == 0
                    ? nil : census
            }
            let extra: [String: JSONValue] = census.map { ["keys": ResealOutput.json($0)] } ?? [:]
            try finish(reports, store: migrator.store.uri, json: output.json, extra: extra) {
                say("Store \(migrator.store.uri)")
                if !reports.isEmpty {
                    printTable(
                        ["KEY", "MODEL", "STORED", "LATEST", "STATE", "NOTE"], count: reports.count,
                        measure: reports.measuringFirstColumns
                    ) {
                        { index, cells in
                            let row = reports.row(at: index)
                            // Appended one by one: an array literal would be one more allocation per row.
                            cells.append(row.key)
                            cells.append(row.schema ?? "-")
                            cells.append(row.storedText)
                            cells.append(row.latestText)
                            cells.append(row.state.rawValue)
                            cells.append(row.whole?.errorText ?? row.formText)
                        }
                    }
                }
                if let hint = unmanagedHint(reports) { say(hint) }
                say(summary(reports))
                if let census, census.entries.contains(where: { $0.keyID != "plain" || $0.role != .primary }) {
                    say("Values by key (rekey or seal moves them to the primary):")
                    ResealOutput.printCensus(census)
                }
            }
        }
    }
}
#endif
