import Foundation
import Logging

/// What the engine logs about migrations and write-backs. Only stores, keys, models, versions,
/// states and error codes: never a record's bytes, a value or an error's message (which may
/// describe a record's shape).
extension Logger {
    /// A record's identity for a log line.
    static func metadata(store: String, key: String, schema: String? = nil) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["store": "\(store)", "key": "\(key)"]
        if let schema { metadata["model"] = "\(schema)" }
        return metadata
    }

    /// Logs a finished ``Migrator/run(backup:progress:)``: each record migrated, left unread or
    /// newer, or changed meanwhile by another writer — brought up to date, removed, migrated
    /// again or still outdated — (debug: the caller has each in its report), or failed to
    /// write (warning: it is migrated again every time until the app acts), then the counts
    /// (debug). Records are only described when their level is enabled, so a run's cost does not
    /// grow with logging off. An app that never sets up logging (swift-log's default handler
    /// prints `info` and above) sees only the warning.
    func ranMigration(_ reports: some Collection<RecordReport>, store: String) {
        var counts: [RecordReport.State: Int] = [:]
        let perRecord = logLevel <= .debug
        func describe(_ report: RecordReport) {
            guard perRecord || report.error != nil else { return }
            let metadata = { () -> Logger.Metadata in
                var metadata = Logger.metadata(store: store, key: report.key, schema: report.schema)
                if let stored = report.storedVersion { metadata["from"] = "\(stored)" }
                if let latest = report.latestVersion { metadata["to"] = "\(latest)" }
                if let error = report.error { metadata["error"] = "\(error.code.rawValue)" }
                return metadata
            }
            switch (report.state, report.error?.code) {
            case (.migrated, _) where report.note != nil:
                debug(
                    "record changed while it was being migrated; migrated again from the other writer's version",
                    metadata: metadata())
            case (.migrated, _):
                debug("record migrated and written back", metadata: metadata())
            case (_, .conflict?):
                debug(
                    "record changed while it was being migrated; left as the other writer stored it",
                    metadata: metadata())
            case (.outdated, _?):
                warning("migrated record could not be written; left as it was", metadata: metadata())
            case (.removed, _):
                debug("record changed while it was being migrated; the other writer removed it", metadata: metadata())
            case _ where report.note != nil:
                debug(
                    """
                    record changed while it was being migrated; left as the other writer stored it, \
                    now \(report.state.rawValue)
                    """, metadata: metadata())
            case (.unreadable, _), (.newer, _):
                debug("record left untouched: \(report.state.rawValue)", metadata: metadata())
            default:
                trace("record left as it is: \(report.state.rawValue)", metadata: metadata())
            }
        }
        if !perRecord, let compact = reports as? RecordReports {
            // Only records with an error are described at this level, and those are held whole.
            for state in RecordReport.State.allCases { counts[state] = compact.count(of: state) }
            compact.forEachWhole(describe)
        } else {
            for report in reports {
                counts[report.state, default: 0] += 1
                describe(report)
            }
        }
        let summary = RecordReport.State.allCases.compactMap { state in
            counts[state].flatMap { $0 == 0 ? nil : "\($0) \(state.rawValue)" }
        }.joined(separator: ", ")
        debug("migration run finished: \(summary.isEmpty ? "no records" : summary)", metadata: ["store": "\(store)"])
    }

    /// Logs what became of a record the front door migrated on read: written back or changed
    /// meanwhile (debug: this is an app's ordinary read path, and swift-log's default handler
    /// prints `info` on standard output), or not written (warning).
    func wroteBack(_ error: KeepsakeError?, store: String, key: String, schema: String) {
        guard let error else {
            // Every load that migrates a record passes here: its metadata is only built when
            // debug lines are written.
            guard logLevel <= .debug else { return }
            debug("migrated record written back", metadata: Logger.metadata(store: store, key: key, schema: schema))
            return
        }
        var metadata = Logger.metadata(store: store, key: key, schema: schema)
        metadata["error"] = "\(error.code.rawValue)"
        if error.code == .conflict {
            debug("record changed while it was being migrated; left as the other writer stored it", metadata: metadata)
        } else {
            warning(
                "migrated record could not be written back; the migrated value is still returned",
                metadata: metadata)
        }
    }
}
