/// What one operation of a stress run did: what it wrote (or read) and whether it reported success.
struct Entry: Codable, Sendable {
    /// `save`, `update`, `read`, `seed`, `migrate`, `stage` or `move`.
    var op: String
    var task: Int
    /// The operation's position in its task (its tasks's operations run one after another).
    var seq: Int
    /// The key written or read (for `migrate`, the store).
    var key: String
    /// The value unique to (process, task, sequence) that a `save`, `update` or `seed` wrote.
    var id: String?
    /// Whether the call reported success.
    var ok: Bool
    /// The `KeepsakeError` code of a failure.
    var code: String?
    var message: String?
    /// What a `read` saw: the tally's owner (and count and label, for a seeded record), or
    /// the counter's ids; for a `move`, its outcome.
    var observed: [String]?
    /// The keys a `migrate` reported migrated, or a `move` moved.
    var migrated: [String]?
    /// The keys a `migrate` could not read, as `key: code: message`; for a `move`, the records
    /// it did not move, as `key: state: code: message`.
    var unreadable: [String]?
    /// For an `update` that succeeded: whether the value it returned holds its own id.
    var returnedOwnID: Bool?
}

/// The one JSON object `keepsake-stress run` prints.
struct Ledger: Codable, Sendable {
    var process: Int
    var tasks: Int
    var operations: Int
    var store: String
    var seconds: Double
    var entries: [Entry]
}
