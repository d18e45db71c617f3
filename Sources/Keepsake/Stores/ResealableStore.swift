import Foundation

/// A store that seals each value under a key of a key set and can bring every value under its
/// primary key while apps keep reading and writing it: a sealed PostgreSQL table.
///
/// `migrate rekey` and `migrate seal` call ``reseal(batchSize:progress:)``; `migrate status`
/// shows ``keyCensus()``.
public protocol ResealableStore: RecordStore {
    /// What this store writes: the primary key's id, or `plain`.
    var writtenKeyID: String { get }

    /// How many values each key holds, read in one pass over the store.
    ///
    /// - Throws: `KeepsakeError` when the store cannot be read.
    func keyCensus() throws(KeepsakeError) -> KeyCensus

    /// Re-seals every value that is not written the way this store writes (``writtenKeyID``),
    /// a batch at a time, each batch one compare-and-swap transaction: a value another writer
    /// changed meanwhile keeps that writer's bytes (written under its own key). When no value
    /// under another key is left, the store records that only this store's key may write it,
    /// so a writer that still holds only a retired key is refused from then on.
    ///
    /// Killed at any moment, every value is under the old key or the new one, and running it
    /// again goes on with what is left.
    ///
    /// - Parameters:
    ///   - batchSize: How many values one transaction re-seals.
    ///   - progress: Called after each batch.
    /// - Throws: `KeepsakeError` when the store cannot be read or written (what was re-sealed
    ///   before stays so; running again resumes).
    /// - Important: A value that does not open with any key of the store is not touched: it is
    ///   counted in ``ResealReport/unreadable``, and the old keys are not retired.
    func reseal(batchSize: Int, progress: (@Sendable (ResealProgress) -> Void)?) throws(KeepsakeError) -> ResealReport
}

/// How many values of a store each key holds.
public struct KeyCensus: Sendable, Equatable {
    /// One key's count.
    public struct Entry: Sendable, Equatable {
        /// The key's id (a master key's fingerprint), `plain` for values that are not sealed, or
        /// `format1` for values sealed before values named their key.
        public var keyID: String
        /// How many values it holds.
        public var count: Int
        /// What the store that asked does with that key.
        public var role: Role

        /// A count of `keyID`'s values and what the asking store does with that key.
        public init(keyID: String, count: Int, role: Role) {
            self.keyID = keyID
            self.count = count
            self.role = role
        }
    }

    /// What a store does with a key.
    public enum Role: String, Sendable, Codable {
        /// It writes with it (its primary key, or `plain` for a store that writes plain values).
        case primary
        /// It only reads with it.
        case previous
        /// It does not hold it: values under it do not open.
        case unknown
    }

    /// The counts, largest first.
    public var entries: [KeyCensus.Entry]

    /// A census of `entries`, sorted largest first (then by key id).
    public init(entries: [KeyCensus.Entry]) {
        self.entries = entries.sorted { ($0.count, $1.keyID) > ($1.count, $0.keyID) }
    }

    /// Values not under the primary key.
    public var outstanding: Int { entries.filter { $0.role != .primary }.reduce(0) { $0 + $1.count } }
}

/// How far a ``ResealableStore/reseal(batchSize:progress:)`` has come.
public struct ResealProgress: Sendable, Equatable {
    /// Values looked at so far.
    public var done: Int
    /// Values to look at, as counted when the pass began.
    public var total: Int

    /// `done` of `total` values.
    public init(done: Int, total: Int) {
        self.done = done
        self.total = total
    }
}

/// What a ``ResealableStore/reseal(batchSize:progress:)`` did.
public struct ResealReport: Sendable, Equatable {
    /// Values re-sealed under the primary key (or unsealed).
    public var resealed: Int
    /// Values another writer changed between the read and the re-seal: they keep that writer's bytes.
    public var changedMeanwhile: Int
    /// Values that open with no key of the store: left as they are, named in ``unreadableKeys``.
    public var unreadable: Int
    /// Up to 20 keys of unreadable values.
    public var unreadableKeys: [String]
    /// The key ids no longer allowed to write the store (empty when none was, or when values
    /// under them are left).
    public var retired: [String]
    /// The store's census once done.
    public var census: KeyCensus

    /// A report of what a re-seal did.
    public init(
        resealed: Int, changedMeanwhile: Int, unreadable: Int, unreadableKeys: [String], retired: [String],
        census: KeyCensus
    ) {
        self.resealed = resealed
        self.changedMeanwhile = changedMeanwhile
        self.unreadable = unreadable
        self.unreadableKeys = unreadableKeys
        self.retired = retired
        self.census = census
    }

    /// Whether every value is now under the primary key.
    public var isComplete: Bool { census.outstanding == 0 }
}
