#if CLI
import Foundation
import Keepsake

extension RecordReport {
    /// `v0`, or `-` when unknown.
    var storedText: String { versionText(storedVersion) }
    var latestText: String { versionText(latestVersion) }

    /// How the record is laid out, for the NOTE column.
    var formText: String { layoutText(form, stringWrapped: stringWrapped) }

    /// The error message without the store (already in the heading) and key (its own column).
    var errorText: String? {
        guard let error else { return nil }
        var text = error.message
        if let cause = error.cause { text += " (\(cause))" }
        return text
    }
}

extension RecordReports.Row {
    /// `v0`, or `-` when unknown.
    var storedText: String { versionText(storedVersion) }
    var latestText: String { versionText(latestVersion) }
    /// How the record is laid out, for the NOTE column (a compact row has no error).
    var formText: String { layoutText(form, stringWrapped: stringWrapped) }
}

extension RecordReports {
    /// A table's measuring pass over these reports' first five columns (key, model, stored and
    /// latest version, state), as `status` and `run` print them: each width found from the
    /// compact report, no row built (see `printTable(_:count:measure:makeRow:)`).
    var measuringFirstColumns: @Sendable () -> (_ index: Int, _ widths: inout [Int]) -> Void {
        { [self] in
            { index, widths in
                let row = self.row(at: index)
                widths[0] = Swift.max(widths[0], cellWidth(row.key))
                widths[1] = Swift.max(widths[1], cellWidth(row.schema ?? "-"))
                widths[2] = Swift.max(widths[2], cellWidth(row.storedText))
                widths[3] = Swift.max(widths[3], cellWidth(row.latestText))
                widths[4] = Swift.max(widths[4], row.state.rawValue.utf8.count)
            }
        }
    }
}

/// How a record is laid out: `envelope`, `bare, in a JSON string`, or empty when unknown.
private func layoutText(_ form: RecordForm?, stringWrapped: Bool) -> String {
    guard let form else { return "" }
    let name: String
    switch form {
    case .envelope: name = "envelope"
    case .inlineVersion: name = "inline version"
    case .bare: name = "bare"
    }
    return stringWrapped ? "\(name), in a JSON string" : name
}

/// `v0`, or `-` for none: the texts of the first versions made once (a table of a million rows
/// prints one in every cell of two columns).
private func versionText(_ version: Int?) -> String {
    guard let version else { return "-" }
    return version >= 0 && version < versionTexts.count ? versionTexts[version] : "v\(version)"
}

private let versionTexts = (0..<32).map { "v\($0)" }

/// Counts per state, in the order states are listed: "2 outdated, 1 current".
func summary(_ reports: some Collection<RecordReport>) -> String {
    // One pass, counting (filtering copied every report once per state).
    var perState: [RecordReport.State: Int] = [:]
    if let compact = reports as? RecordReports {
        for state in RecordReport.State.allCases { perState[state] = compact.count(of: state) }
    } else {
        for report in reports { perState[report.state, default: 0] += 1 }
    }
    let counts = RecordReport.State.allCases.compactMap { state -> String? in
        let count = perState[state] ?? 0
        return count == 0 ? nil : "\(count) \(state.rawValue)"
    }
    return counts.isEmpty ? "no records" : counts.joined(separator: ", ")
}

/// What to do about records no model claims, or `nil` when there are none: how many, the first
/// few keys, and how to map them — so that a store of records an older release wrote under keys
/// of its own is not "done" silently.
func unmanagedHint(_ reports: some Collection<RecordReport>) -> String? {
    var count = 0
    var first: [String] = []
    var shared: Substring?  // the prefix every unmanaged key shares
    func unmanaged(_ key: String) {
        count += 1
        if first.count < 3 { first.append(escapedForTerminal(key)) }
        if let prefix = shared {
            shared = prefix.commonPrefix(with: key)[...]
        } else {
            shared = key[...]
        }
    }
    if let compact = reports as? RecordReports {
        compact.forEachKey(in: .unmanaged, unmanaged)  // no report built per record
    } else {
        for report in reports where report.state == .unmanaged { unmanaged(report.key) }
    }
    guard count > 0 else { return nil }
    let keys = first.joined(separator: ", ") + (count > first.count ? ", …" : "")
    let records = count == 1 ? "1 record belongs to no model and is" : "\(count) records belong to no model and are"
    // Many keys that share a prefix ending at a separator (`tenant-`) are mapped by one pattern.
    var pattern = ""
    if count > 1, let prefix = shared, let end = prefix.lastIndex(where: { "-_/.:".contains($0) }) {
        pattern = " or all at once with --model '\(escapedForTerminal(String(prefix[...end])))*=NAME'"
    }
    return """
        \(records) left alone (\(keys)). Map keys to a model with --model KEY=NAME\(pattern) or --models FILE \
        (`\(CLI.name) models` lists the models).
        """
}

/// Prints `reports` as `--json` (one object: the store, the records, the totals, and `extra`)
/// or with `human`, then exits with their code (see `Exit`).
func finish(
    _ reports: some Collection<RecordReport>, store: String, json: Bool, extra: [String: JSONValue] = [:],
    human: () -> Void
) throws {
    if json {
        printJSON(reportsJSON(store: store, reports, extra: extra))
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
#endif
