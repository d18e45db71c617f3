import Foundation
import Keepsake

/// One record in `--json` output of status, plan and run.
struct ReportJSON: Encodable {
    let report: RecordReport

    enum CodingKeys: String, CodingKey {
        case key, schema, storedVersion, latestVersion, state, form, stringWrapped, steps, error, errorCode, backup
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(report.key, forKey: .key)
        try container.encode(report.schema, forKey: .schema)
        try container.encode(report.storedVersion, forKey: .storedVersion)
        try container.encode(report.latestVersion, forKey: .latestVersion)
        try container.encode(report.state.rawValue, forKey: .state)
        try container.encode(report.form?.rawValue, forKey: .form)
        try container.encode(report.stringWrapped, forKey: .stringWrapped)
        try container.encode(report.steps, forKey: .steps)
        if let error = report.error {
            try container.encode(error.description, forKey: .error)
            try container.encode(error.code.rawValue, forKey: .errorCode)
        }
        try container.encodeIfPresent(report.backupPath, forKey: .backup)
    }
}

extension RecordReport {
    /// `v0`, or `-` when unknown.
    var storedText: String { storedVersion.map { "v\($0)" } ?? "-" }
    var latestText: String { latestVersion.map { "v\($0)" } ?? "-" }

    /// How the record is laid out, for the NOTE column.
    var formText: String {
        guard let form else { return "" }
        let name: String
        switch form {
        case .envelope: name = "envelope"
        case .inlineVersion: name = "inline version"
        case .bare: name = "bare"
        }
        return stringWrapped ? "\(name), in a JSON string" : name
    }

    /// The error message without the store (already in the heading) and key (its own column).
    var errorText: String? {
        guard let error else { return nil }
        var text = error.message
        if let cause = error.cause { text += " (\(cause))" }
        return text
    }
}

/// Counts per state, in the order states are listed: "2 outdated, 1 current".
func summary(_ reports: [RecordReport]) -> String {
    let counts = RecordReport.State.allCases.compactMap { state -> String? in
        let count = reports.filter { $0.state == state }.count
        return count == 0 ? nil : "\(count) \(state.rawValue)"
    }
    return counts.isEmpty ? "no records" : counts.joined(separator: ", ")
}

/// Prints `reports` as `--json` or with `human`, then exits with their code (see `Exit`).
func finish(_ reports: [RecordReport], json: Bool, human: () -> Void) throws {
    if json {
        printJSON(reports.map(ReportJSON.init))
    } else {
        human()
    }
    let code = Exit.code(for: reports)
    if code != .success { throw code }
}

/// The bytes under `key`, or a `.notFound` error naming the store and key.
func requireData(_ store: any RecordStore, _ key: String) throws(KeepsakeError) -> Data {
    guard let bytes = try store.data(forKey: key) else {
        throw KeepsakeError(.notFound, store: store.uri, key: key, "no record under this key")
    }
    return bytes
}
