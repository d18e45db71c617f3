/// What a ``StoreTransfer`` did, or would do, with each record.
public struct TransferReport: Sendable, Equatable {
    /// How the transfer as a whole ended.
    public enum Outcome: String, Sendable, Codable, CaseIterable {
        /// A plan (``StoreTransfer/plan(_:options:)``): every record could be transferred; nothing
        /// was written.
        case planned
        /// Every record is in the destination, verified; for a move, removed from the source.
        case completed
        /// Nothing was written: a named key is not in the source, a value cannot be held by the
        /// destination, or its key already holds another value there. The records say which and
        /// why.
        case refused
        /// Records were written, then a write or a read-back failed: the destination was given
        /// back exactly what it held before, and the source was not touched.
        case reverted
        /// Some records ended in both stores: copied and verified but not removed from the
        /// source, or written to the destination and not restored after a failure. No record is
        /// lost; the records say which are in both and why.
        case incomplete
        /// Every record that could be read was transferred (verified; for a move, removed from
        /// the source); the records of the source that could not be read — or, with `migrate`,
        /// migrated — are ``TransferRecord/State/failed``, with their error, and stay in the
        /// source as they were. One bad record does not stop the others.
        case partial
    }

    /// The source store's URI.
    public var source: String
    /// The destination store's URI.
    public var destination: String
    /// Whether records were to be removed from the source.
    public var move: Bool
    /// How the transfer as a whole ended.
    public var outcome: Outcome
    /// One entry per record, in the order they were taken.
    public var records: [TransferRecord]

    /// A report; ``StoreTransfer`` makes them, tests and other front ends may too.
    public init(source: String, destination: String, move: Bool, outcome: Outcome, records: [TransferRecord]) {
        self.source = source
        self.destination = destination
        self.move = move
        self.outcome = outcome
        self.records = records
    }

    /// Whether the transfer did (or, for a plan, can do) everything it was asked.
    public var succeeded: Bool { outcome == .completed || outcome == .planned }
}

/// One record of a ``TransferReport``.
public struct TransferRecord: Sendable, Equatable {
    /// Where the record is after the transfer.
    public enum State: String, Sendable, Codable, CaseIterable {
        /// A plan: the record would be copied (or moved); nothing was written.
        case planned
        /// In the destination and verified; the source still holds it.
        case copied
        /// In the destination and verified, and removed from the source (or removed from it by
        /// another writer first: ``TransferRecord/note`` says so).
        case moved
        /// Refused: the destination already holds another value under this key (transfer with
        /// overwriting to replace it). Nothing was written.
        case exists
        /// This record could not be transferred (``TransferRecord/error`` says why); it is in
        /// the source as it was, and the destination holds what it held before.
        case failed
        /// Written to the destination, then taken back because another record failed: the
        /// destination holds what it held before; the source is as it was.
        case reverted
        /// Not written, because another record failed first. The source is as it was.
        case notCopied
        /// In both stores: copied and verified but not removed from the source, or written to
        /// the destination and not restored after a failure. ``TransferRecord/error`` says why.
        case inBoth
    }

    /// The record key, the same in both stores.
    public var key: String
    /// The model the record was matched to; `nil` for an unmanaged value.
    public var schema: String?
    /// The version the source stored, when known.
    public var storedVersion: Int?
    /// The version written to the destination (the latest, when the record was migrated).
    public var writtenVersion: Int?
    /// Whether the record was migrated to the latest version on the way.
    public var migrated: Bool
    /// Whether the record is an unmanaged value, copied as its bytes.
    public var unmanaged: Bool
    /// Whether the destination held another value under the key, replaced by overwriting.
    public var replaced: Bool
    /// Whether the destination already held exactly these bytes, so nothing was written there.
    public var alreadyPresent: Bool
    /// Where the record is after the transfer.
    public var state: State
    /// Why the record failed, is in both stores, or was not restored.
    public var error: KeepsakeError?
    /// What happened to the record beside the transfer, when that is not an error: another
    /// writer removed a ``State/moved`` record from the source before the move did (the
    /// destination holds it). `nil` otherwise.
    public var note: String?

    /// A record's entry; every flag is `false` and every optional `nil` unless given.
    public init(
        key: String, schema: String? = nil, storedVersion: Int? = nil, writtenVersion: Int? = nil,
        migrated: Bool = false, unmanaged: Bool = false, replaced: Bool = false, alreadyPresent: Bool = false,
        state: State, error: KeepsakeError? = nil, note: String? = nil
    ) {
        self.key = key
        self.schema = schema
        self.storedVersion = storedVersion
        self.writtenVersion = writtenVersion
        self.migrated = migrated
        self.unmanaged = unmanaged
        self.replaced = replaced
        self.alreadyPresent = alreadyPresent
        self.state = state
        self.error = error
        self.note = note
    }
}
