/// What the ``Migrator`` found, or did, for one key of a store.
public struct RecordReport: Sendable, Equatable {
    /// A record's state, as `migrate status`, `plan` and `run` print it.
    public enum State: String, Sendable, Codable, CaseIterable {
        /// At the latest version.
        case current
        /// At an older version; `run` would migrate it.
        case outdated
        /// Migrated and written back by this run.
        case migrated
        /// Removed by another writer while this run was migrating it: nothing is stored under the
        /// key any more, so nothing is left to migrate. Only `run` reports it; not an error.
        case removed
        /// Written by a newer release that declared this release's readers compatible: readable,
        /// never migrated or rewritten by a run.
        case newerReadable
        /// Written by a newer release; left untouched.
        case newer
        /// Cannot be read or migrated (corrupt, unrecognised, ambiguous, a failing step); left untouched.
        case unreadable
        /// Not matched to any model: a plain value or another app's data; left alone.
        case unmanaged
    }

    /// The record's key in the store.
    public var key: String
    /// The model the record was matched to (or the schema an unknown envelope names).
    public var schema: String?
    /// The version the record is stored at, when it could be told.
    public var storedVersion: Int?
    /// The latest version of its model, when it was matched to one.
    public var latestVersion: Int?
    /// What the record is, or what was done to it.
    public var state: State
    /// How the record was laid out, when it was recognised.
    public var form: RecordForm?
    /// Whether the record was a JSON string holding JSON.
    public var stringWrapped: Bool
    /// The versions the record passes through to reach the latest (`[1, 2, 3]` from version 0).
    public var steps: [Int]
    /// Why the record is unreadable or newer, or why its write failed.
    public var error: KeepsakeError?
    /// Where its original bytes were backed up by this run.
    public var backupPath: String?
    /// What else the run has to say about the record, when it is not an error: that another
    /// writer changed it while the run was migrating it, and what became of it ("brought to the
    /// latest version by another writer while it was being migrated"). `nil` for most records.
    public var note: String?

    /// A report with every field given; the ``Migrator`` builds them with
    /// ``init(key:schema:latestVersion:outcome:)``.
    public init(
        key: String, schema: String? = nil, storedVersion: Int? = nil, latestVersion: Int? = nil,
        state: State, form: RecordForm? = nil, stringWrapped: Bool = false, steps: [Int] = [],
        error: KeepsakeError? = nil, backupPath: String? = nil, note: String? = nil
    ) {
        self.key = key
        self.schema = schema
        self.storedVersion = storedVersion
        self.latestVersion = latestVersion
        self.state = state
        self.form = form
        self.stringWrapped = stringWrapped
        self.steps = steps
        self.error = error
        self.backupPath = backupPath
        self.note = note
    }

    /// The report of a record of model `schema` read through the pipeline, its error located in
    /// `store` under `key`: what the ``Migrator`` builds, in code compiled for the model's own
    /// types (``AnyModelChain``'s report pipeline), so that no record's value is boxed as
    /// `any ModelVersion` only to be dropped.
    @inlinable
    init<Model>(key: String, schema: String, latestVersion: Int, outcome: RecordOutcome<Model>, locatedIn store: String)
    {
        let state: State
        let record: DecodedRecord<Model>
        switch outcome {
        case .absent:
            self.init(key: key, schema: schema, latestVersion: latestVersion, state: .current)
            return
        case let .newer(error, stored), let .failed(error, stored):
            let state: State = if case .newer = outcome { .newer } else { .unreadable }
            self.init(
                key: key, schema: schema, storedVersion: stored.version, latestVersion: latestVersion, state: state,
                form: stored.form, stringWrapped: stored.stringWrapped, error: error.located(store: store, key: key))
            return
        case let .current(found):
            (state, record) = (.current, found)
        case let .outdated(found):
            (state, record) = (.outdated, found)
        case let .newerReadable(found):
            (state, record) = (.newerReadable, found)
        }
        self.init(
            key: key, schema: schema, storedVersion: record.storedVersion, latestVersion: latestVersion, state: state,
            form: record.form, stringWrapped: record.stringWrapped, steps: record.steps)
    }

    /// The report of a record of model `schema` read through the pipeline.
    public init<Model>(key: String, schema: String, latestVersion: Int, outcome: RecordOutcome<Model>) {
        let stored = outcome.stored ?? StoredInfo()
        let state: State
        switch outcome {
        case .absent, .current: state = .current
        case .outdated: state = .outdated
        case .newerReadable: state = .newerReadable
        case .newer: state = .newer
        case .failed: state = .unreadable
        }
        self.init(
            key: key, schema: schema, storedVersion: stored.version, latestVersion: latestVersion, state: state,
            form: stored.form, stringWrapped: stored.stringWrapped, steps: outcome.record?.steps ?? [],
            error: outcome.error)
    }
}
