import Keepsake

// The stress run's own chains, defined the way an app defines its models: frozen version types,
// a chain per model, typed keys.

/// A tally as the first release stored it: who wrote it and a count. Frozen.
struct TallyV0: ModelVersion, Equatable {
    static let version = 0
    var owner: String
    var count: Int
}

/// A tally with a label built from the count. Frozen.
struct TallyV1: ModelVersion, Equatable {
    typealias Predecessor = TallyV0
    static let version = 1
    var owner: String
    var count: Int
    var label: String

    init(owner: String, count: Int, label: String) {
        self.owner = owner
        self.count = count
        self.label = label
    }

    /// The owner and the count are kept; the label says where the record came from.
    init(migrating previous: TallyV0, context: MigrationContext) {
        self.init(owner: previous.owner, count: previous.count, label: "migrated-\(previous.count)")
    }
}

/// A counter that every `update` appends its operation's id to. Frozen.
struct CounterV0: ModelVersion, Equatable {
    static let version = 0
    var ids: [String]
}

enum Tally {
    static let chain = ModelChain<TallyV1>(name: "Tally", defaultKeys: [])
}

enum Counter {
    static let chain = ModelChain<CounterV0>(name: "Counter", defaultKeys: ["counter"])
}

extension RecordKeys {
    /// The key every writer saves to.
    static let shared = RecordKey("shared", chain: Tally.chain)
    /// The counter every `update` appends to; empty while nothing is stored.
    static let counter = RecordKey("counter", chain: Counter.chain, default: CounterV0(ids: []))
}

/// The key only task `task` of process `process` saves to.
func privateKey(process: Int, task: Int) -> RecordKey<TallyV1> {
    RecordKey("private.p\(process).t\(task)", chain: Tally.chain)
}

/// The key a seeded V0 record goes under.
func legacyKey(_ id: String) -> String { "legacy." + id }

/// The key a record staged for moves goes under.
func movableKey(_ id: String) -> String { "movable." + id }

/// Every chain of the stress run, for the `Migrator`.
let stressChains = [Tally.chain.erased, Counter.chain.erased]
