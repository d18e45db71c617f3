import Foundation

/// What reading one stored record found: the one outcome every reader of records gets.
///
/// ``ModelChain/outcome(of:context:)`` produces it from stored bytes; ``Vault``,
/// ``Migrator`` and the `migrate` CLI all read records through it, so "is this record
/// outdated?" has one answer everywhere.
///
/// ```swift
/// switch Person.chain.outcome(of: bytes, context: context) {
/// case .absent:                 print("nothing stored")
/// case let .current(record):    print(record.value.alias)
/// case let .outdated(record, _): print("v\(record.storedVersion) → v\(record.latestVersion)")
/// case let .newerReadable(record): print("v\(record.storedVersion), read as v\(record.latestVersion)")
/// case let .newer(error, _):    print(error)   // written by a newer release: leave it
/// case let .failed(error, _):   print(error)   // corrupt, unrecognised, a failing step…
/// }
/// ```
public enum RecordOutcome<Model: Sendable>: Sendable {
    /// Nothing is stored.
    case absent
    /// The record is at the latest version.
    case current(DecodedRecord<Model>)
    /// The record is at an older version and was migrated in memory (nothing is written).
    case outdated(DecodedRecord<Model>)
    /// The record was written by a newer release whose version declares this release's readers
    /// compatible (``ModelVersion/oldestReader``): read as the latest type this release knows,
    /// ignoring the keys it does not know. Never migrated or rewritten on its own; a save keeps
    /// the newer keys and version.
    case newerReadable(DecodedRecord<Model>)
    /// The record was written by a newer release (its version is above the latest known); the
    /// error's code is ``KeepsakeError/Code/newerVersion``.
    case newer(KeepsakeError, stored: StoredInfo)
    /// The record cannot be read or migrated: corrupt, unrecognised, ambiguous, another schema,
    /// a failing step, a failed verification.
    case failed(KeepsakeError, stored: StoredInfo)

    /// The record at the latest version, when it could be read.
    public var record: DecodedRecord<Model>? {
        switch self {
        case let .current(record), let .outdated(record), let .newerReadable(record): return record
        case .absent, .newer, .failed: return nil
        }
    }

    /// Why the record cannot be used, when it cannot.
    public var error: KeepsakeError? {
        switch self {
        case let .newer(error, _), let .failed(error, _): return error
        case .absent, .current, .outdated, .newerReadable: return nil
        }
    }

    /// The record at the latest version, `nil` when nothing is stored; the outcome's error when
    /// the record cannot be used (a newer release's record, one that does not read): what a
    /// caller that only wants the value does with an outcome, in one place.
    ///
    /// ```swift
    /// let settings = try Settings.chain.outcome(of: bytes, context: .live()).get()?.value
    /// ```
    ///
    /// - Throws: ``error``, for ``newer(_:stored:)`` and ``failed(_:stored:)``.
    public func get() throws(KeepsakeError) -> DecodedRecord<Model>? {
        switch self {
        case .absent: return nil
        case let .current(record), let .outdated(record), let .newerReadable(record): return record
        case let .newer(error, _), let .failed(error, _): throw error
        }
    }

    /// What is known of the stored record: its version, form and wrapping.
    public var stored: StoredInfo? {
        switch self {
        case .absent: return nil
        case let .current(record), let .outdated(record), let .newerReadable(record): return record.stored
        case let .newer(_, stored), let .failed(_, stored): return stored
        }
    }

    /// The same outcome with the model transformed (used to erase the model type).
    @inlinable
    public func map<Other: Sendable>(_ transform: (Model) -> Other) -> RecordOutcome<Other> {
        switch self {
        case .absent: return .absent
        case let .current(record): return .current(record.map(transform))
        case let .outdated(record): return .outdated(record.map(transform))
        case let .newerReadable(record): return .newerReadable(record.map(transform))
        case let .newer(error, stored): return .newer(error, stored: stored)
        case let .failed(error, stored): return .failed(error, stored: stored)
        }
    }

    /// The same outcome with its error naming `store` and `key`.
    @usableFromInline
    func located(store: String?, key: String?) -> RecordOutcome {
        switch self {
        case let .newer(error, stored): return .newer(error.located(store: store, key: key), stored: stored)
        case let .failed(error, stored): return .failed(error.located(store: store, key: key), stored: stored)
        case .absent, .current, .outdated, .newerReadable: return self
        }
    }
}

/// What is known of a stored record before (or without) decoding it.
public struct StoredInfo: Sendable, Hashable {
    /// The version it was stored at, once detected.
    public var version: Int?
    /// How it is laid out, once recognised.
    public var form: RecordForm?
    /// Whether the stored value was a JSON string holding the record (UserDefaults-era apps).
    public var stringWrapped: Bool

    /// What is known of a stored record: its version and form once detected, and whether it was
    /// a JSON string holding the record.
    public init(version: Int? = nil, form: RecordForm? = nil, stringWrapped: Bool = false) {
        self.version = version
        self.form = form
        self.stringWrapped = stringWrapped
    }
}

/// A record read from bytes: the model at its latest version, and what was stored.
public struct DecodedRecord<Model: Sendable>: Sendable {
    /// The record migrated (in memory) to the latest version.
    public let value: Model
    /// The version that was stored.
    public let storedVersion: Int
    /// The chain's latest version, which ``value`` is at.
    public let latestVersion: Int
    /// How it was laid out.
    public let form: RecordForm
    /// Whether it was a JSON string holding the record.
    public let stringWrapped: Bool

    /// A record read as `value`, stored at `storedVersion` in `form` (inside a JSON string when
    /// `stringWrapped`), of a chain whose latest version is `latestVersion`.
    @inlinable
    public init(value: Model, storedVersion: Int, latestVersion: Int, form: RecordForm, stringWrapped: Bool) {
        self.value = value
        self.storedVersion = storedVersion
        self.latestVersion = latestVersion
        self.form = form
        self.stringWrapped = stringWrapped
    }

    /// Whether the stored record was older than the latest version (and so was migrated).
    public var wasMigrated: Bool { storedVersion < latestVersion }

    /// Whether the stored record was written by a newer release and read compatibly
    /// (``RecordOutcome/newerReadable(_:)``).
    public var isNewer: Bool { storedVersion > latestVersion }

    /// The versions the record passed through: `[1, 2, 3]` from version 0 to 3.
    public var steps: [Int] { wasMigrated ? StepLists.steps(from: storedVersion, to: latestVersion) : [] }

    /// What was stored, as a ``StoredInfo``.
    public var stored: StoredInfo { StoredInfo(version: storedVersion, form: form, stringWrapped: stringWrapped) }

    /// The same record with its value transformed.
    @inlinable
    public func map<Other: Sendable>(_ transform: (Model) -> Other) -> DecodedRecord<Other> {
        DecodedRecord<Other>(
            value: transform(value), storedVersion: storedVersion, latestVersion: latestVersion,
            form: form, stringWrapped: stringWrapped)
    }
}

extension DecodedRecord: Equatable where Model: Equatable {}

/// The lists of steps between small versions, made once and shared: a run reports the same
/// `[1, 2, 3]` for every record it migrates, and a list shared is compared by identity.
enum StepLists {
    /// Versions below this have their lists made once.
    static let shared = 16
    /// `table[from][to - from - 1]` is `[from + 1 … to]`.
    private static let table: [[[Int]]] = (0..<shared).map { from in
        (from + 1..<shared).map { to in Array((from + 1)...to) }
    }

    /// The versions a record passes through from `from` to `to` (`from < to`): `[from + 1 … to]`.
    static func steps(from: Int, to: Int) -> [Int] {
        guard from >= 0, to < shared else { return Array((from + 1)...to) }
        return table[from][to - from - 1]
    }
}
