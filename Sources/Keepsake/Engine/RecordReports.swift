/// The reports of one ``Migrator`` pass, in key order, held compactly and built one at a time
/// when read.
///
/// An array of ``RecordReport`` holds about 200 bytes per record (a report has room for an
/// error, a backup path, a note and a list of steps, which most records leave empty); this holds a
/// record that has none of them in 32 (its key, its versions, and its model and steps as indices
/// into the pass's model names and step lists), and keeps a whole ``RecordReport`` only for the records that need one. That is
/// what lets `migrate status`, `plan` and `run` over a million-record suite hold little more
/// than the suite itself.
package struct RecordReports: RandomAccessCollection, Sendable {
    /// 32 bytes (``compactStride``): a version that does not fit, a 65th model name or list of
    /// steps, keeps the report whole instead.
    private struct Compact: Sendable {
        var key: String
        /// Index in `full` of this record's whole report; -1 when the fields below are all of it.
        var full: Int32
        /// `Int32.min` for none.
        var latestVersion: Int32
        /// `Int16.min` for none.
        var storedVersion: Int16
        /// Index in `schemas`; -1 for none.
        var schema: Int8
        /// Index in `stepLists` of the report's steps; -1 for none.
        var steps: Int8
        var state: RecordReport.State
        var form: RecordForm?
        var stringWrapped: Bool
    }

    /// The bytes a record's report takes when it has no error, backup path or note.
    static let compactStride = MemoryLayout<Compact>.stride

    private var compact: [Compact] = []
    private var schemas: [String] = []
    /// Each distinct list of steps, kept once (most records of a run share one).
    private var stepLists: [[Int]] = []
    private var full: [RecordReport] = []

    package init() {}

    package var startIndex: Int { 0 }
    package var endIndex: Int { compact.count }

    package subscript(position: Int) -> RecordReport {
        let record = compact[position]
        if record.full >= 0 { return full[Int(record.full)] }
        let stored = record.storedVersion == .min ? nil : Int(record.storedVersion)
        let latest = record.latestVersion == .min ? nil : Int(record.latestVersion)
        let steps = record.steps < 0 ? [] : stepLists[Int(record.steps)]
        return RecordReport(
            key: record.key, schema: record.schema < 0 ? nil : schemas[Int(record.schema)], storedVersion: stored,
            latestVersion: latest, state: record.state, form: record.form, stringWrapped: record.stringWrapped,
            steps: steps)
    }

    package mutating func reserveCapacity(_ count: Int) { compact.reserveCapacity(count) }

    /// What a table row shows of the report at `position`, without building the report: the
    /// compact fields as they are held, or the whole report for one that has an error, a backup
    /// path or a note (`migrate status` and `run` print a row per record; building each record's
    /// ``RecordReport`` twice was a fifth of a row's cost).
    package func row(at position: Int) -> Row {
        let record = compact[position]
        if record.full >= 0 { return Row(whole: full[Int(record.full)]) }
        return Row(
            key: record.key, schema: record.schema < 0 ? nil : schemas[Int(record.schema)],
            storedVersion: record.storedVersion == .min ? nil : Int(record.storedVersion),
            latestVersion: record.latestVersion == .min ? nil : Int(record.latestVersion), state: record.state,
            form: record.form, stringWrapped: record.stringWrapped, stepList: Int(record.steps), whole: nil)
    }

    /// The list of steps numbered `stepList` in a ``Row``.
    package func steps(ofList stepList: Int) -> [Int] { stepLists[stepList] }

    /// One report as a table row reads it (see ``row(at:)``).
    package struct Row {
        package let key: String
        package let schema: String?
        package let storedVersion: Int?
        package let latestVersion: Int?
        package let state: RecordReport.State
        package let form: RecordForm?
        package let stringWrapped: Bool
        /// The number of the report's list of steps among the pass's distinct lists (see
        /// ``steps(ofList:)``), the same for every report that took the same steps; -1 for none or
        /// for a whole report (whose ``whole`` has its steps).
        package let stepList: Int
        /// The whole report, for one with an error, a backup path or a note.
        package let whole: RecordReport?
    }

    /// The key of the report at `position`, without building the report.
    package func key(at position: Int) -> String { compact[position].key }

    /// Adds `report` after the others.
    package mutating func append(_ report: RecordReport) {
        compact.append(compacted(report) ?? fullEntry(report))
    }

    /// Changes the report at `position` (what a run does once its batch is written).
    package mutating func update(_ position: Int, _ change: (inout RecordReport) -> Void) {
        var report = self[position]
        change(&report)
        if let small = compacted(report) {
            compact[position] = small
        } else if compact[position].full >= 0 {
            full[Int(compact[position].full)] = report
            compact[position].state = report.state  // what `count(of:)` reads
        } else {
            compact[position] = fullEntry(report)
        }
    }

    /// Sets the state of the report at `position`, as ``update(_:_:)`` would, without building it.
    package mutating func setState(_ state: RecordReport.State, at position: Int) {
        // The compact entry's state is the one `count(of:)` reads, whole report or not.
        compact[position].state = state
        if compact[position].full >= 0 { full[Int(compact[position].full)].state = state }
    }

    /// Hands `body`, in key order, each report held whole: every report with an error, a
    /// backup path or a note among them (the compact ones have none).
    package func forEachWhole(_ body: (RecordReport) -> Void) {
        for record in compact where record.full >= 0 { body(full[Int(record.full)]) }
    }

    /// Hands `body`, in key order, the key of each report in `state`, without building the
    /// reports.
    package func forEachKey(in state: RecordReport.State, _ body: (String) -> Void) {
        for record in compact where record.state == state { body(record.key) }
    }

    /// Whether a report held whole satisfies `predicate` (the compact ones have no error, backup
    /// path or note).
    package func containsWhole(where predicate: (RecordReport) -> Bool) -> Bool {
        full.contains(where: predicate)
    }

    /// The first report, in key order, with an error.
    package var firstError: KeepsakeError? {
        for record in compact where record.full >= 0 {
            if let error = full[Int(record.full)].error { return error }
        }
        return nil
    }

    /// How many reports are in `state`.
    package func count(of state: RecordReport.State) -> Int {
        compact.reduce(0) { $0 + ($1.state == state ? 1 : 0) }
    }

    private mutating func fullEntry(_ report: RecordReport) -> Compact {
        // A pass holds far fewer than 2³¹ whole reports (each is about 200 bytes).
        guard let index = Int32(exactly: full.count) else {
            preconditionFailure("RecordReports: more than \(Int32.max) reports with an error, backup or note")
        }
        full.append(report)
        return Compact(
            key: report.key, full: index, latestVersion: .min, storedVersion: .min, schema: -1, steps: -1,
            state: report.state, form: nil, stringWrapped: false)
    }

    /// `report` in compact form, or `nil` when it holds what the compact form has no room for.
    private mutating func compacted(_ report: RecordReport) -> Compact? {
        guard report.error == nil, report.backupPath == nil, report.note == nil else { return nil }
        guard let stored = Self.small(report.storedVersion, as: Int16.self),
            let latest = Self.small(report.latestVersion, as: Int32.self)
        else {
            return nil
        }
        var steps: Int8 = -1
        if !report.steps.isEmpty {
            if let known = stepLists.firstIndex(of: report.steps) {
                steps = Int8(known)
            } else {
                guard stepLists.count < 64 else { return nil }  // keep unusual ones whole
                stepLists.append(report.steps)
                steps = Int8(stepLists.count - 1)
            }
        }
        var schema: Int8 = -1
        if let name = report.schema {
            if let known = schemas.firstIndex(where: { $0.isExactly(name) }) {
                schema = Int8(known)
            } else {
                guard schemas.count < 64 else { return nil }  // names of unknown envelopes: keep them whole
                schemas.append(name)
                schema = Int8(schemas.count - 1)
            }
        }
        return Compact(
            key: report.key, full: -1, latestVersion: latest, storedVersion: stored, schema: schema, steps: steps,
            state: report.state, form: report.form, stringWrapped: report.stringWrapped)
    }

    /// A version as `Small` (`Small.min` for none), or `nil` when it does not fit.
    private static func small<Small: FixedWidthInteger & SignedInteger>(_ version: Int?, as _: Small.Type) -> Small? {
        guard let version else { return .min }
        guard version > Int(Small.min), let small = Small(exactly: version) else { return nil }
        return small
    }
}

extension RecordReports.Row {
    /// The row of a report held whole (in an extension, so that the memberwise initializer stays).
    init(whole report: RecordReport) {
        self.init(
            key: report.key, schema: report.schema, storedVersion: report.storedVersion,
            latestVersion: report.latestVersion, state: report.state, form: report.form,
            stringWrapped: report.stringWrapped, stepList: -1, whole: report)
    }
}
