import Foundation

/// A place records are kept: the protocol every backend implements.
///
/// The protocol is small on purpose — read one key, list keys, apply a batch of writes — and
/// everything else (typed records, migration, deletes) is built on it in extensions. Every
/// backend runs the same contract suite (`KeepsakeTesting.StoreContract`).
///
/// Implementations must never turn a failure into "absent": `data(forKey:)` returns `nil` only
/// when the backend positively reports that nothing is stored under the key; a locked, missing
/// or unreadable backend throws.
///
/// Keys are exact strings: two keys are the same key only when their UTF-8 bytes are the same
/// (`"caf\u{E9}"` and `"cafe\u{301}"` are two keys, though Swift's `==` calls them equal), and
/// "sorted" means sorted by UTF-8 bytes.
public protocol RecordStore: Sendable {
    /// The store as a URI (``StoreURI``: `scheme:location`), used in every error and report.
    var uri: String { get }

    /// What a caller must know about this backend.
    var capabilities: StoreCapabilities { get }

    /// What names this store whichever text or path reaches it: two stores with equal
    /// identities are one store (a suite reached through a symbolic link, a store directory
    /// through a hard link). Moves and copies use it to refuse a store onto itself and to let
    /// moves from one store exclude each other. Default: ``uri``.
    var identity: String { get }

    /// Where a run's backups of this store's records go unless told otherwise (a suite's
    /// `<suite>.backups` folder beside it); `nil` when the store has no such place (default).
    var defaultBackupDirectory: String? { get }

    /// The bytes stored under `key`, exactly as stored, or `nil` when nothing is.
    ///
    /// - Throws: ``KeepsakeError`` when the backend cannot answer (never `nil` for that).
    func data(forKey key: String) throws(KeepsakeError) -> Data?

    /// Every key that holds a value, sorted by UTF-8 bytes.
    func keys() throws(KeepsakeError) -> [String]

    /// Every key with its bytes, sorted by key. Backends that read everything at once
    /// (the defaults store) override this to read once.
    func allData() throws(KeepsakeError) -> [(key: String, data: Data)]

    /// Every record with its bytes or, for a record that cannot be read, why — sorted by key —
    /// so that one bad record never stops a caller that reads them all (the ``Migrator``).
    ///
    /// An entry's key is the record key. A record whose key cannot be known (an encrypted file
    /// that does not open) is listed under the name the backend found it by, such as its file
    /// name, and its error, which has no ``KeepsakeError/key``, says so.
    ///
    /// The default implementation returns ``allData()``, each entry a success: right for
    /// backends that read every record in one piece (one document, one query), where a failure
    /// is the whole store's. Backends that read records one by one override it.
    ///
    /// - Throws: Only when the store itself cannot be read (listed, opened, unlocked); a record
    ///   that cannot be read is an entry, not a throw.
    func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)]

    /// Hands every record to `body`, as ``allRecords()`` lists them (sorted by key, a record
    /// that cannot be read as its error), with the number of records, without building the list:
    /// how the ``Migrator`` reads a large store.
    ///
    /// The default implementation walks ``allRecords()``. Backends that hold every record
    /// already (the defaults store's parsed suite) override it to hand over each one from there.
    ///
    /// - Throws: What ``allRecords()`` throws, before `body` is called.
    func forEachRecord(
        _ body: (_ count: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError)

    /// Applies `writes` in order. A write whose ``StoreWrite/Expectation`` does not hold is
    /// skipped and reported as ``StoreWriteResult/conflict``; the others are applied.
    ///
    /// - Important: If this throws, no write was applied — unless the error's
    ///   ``KeepsakeError/mayHaveBeenApplied`` is set: a server store sent the batch and lost
    ///   the answer, and the batch was applied whole or not at all. A backend that cannot apply
    ///   a batch as one unit reports a failing write as ``StoreWriteResult/failed(_:)`` instead,
    ///   after the writes before it were applied (with the same flag when that write's answer
    ///   was lost); each single write is atomic (old or new bytes, never none).
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult]
}

extension RecordStore {
    public var identity: String { uri }

    public var defaultBackupDirectory: String? { nil }

    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        var result: [(key: String, data: Data)] = []
        for key in try keys() {
            if let data = try data(forKey: key) { result.append((key, data)) }
        }
        return result
    }

    public func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        try allData().map { ($0.key, .success($0.data)) }
    }

    public func forEachRecord(
        _ body: (_ count: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError) {
        let records = try allRecords()
        for record in records { body(records.count, record.key, record.result) }
    }

    /// Stores `data` under `key`, replacing what was there.
    ///
    /// - Important: If this throws, the store is as it was, unless the error's
    ///   ``KeepsakeError/mayHaveBeenApplied`` is set (a server store lost the answer): then
    ///   the key holds `data` or what it held before.
    public func setData(_ data: Data, forKey key: String) throws(KeepsakeError) {
        try commitOne(StoreWrite(key: key, value: data))
    }

    /// Removes the value under `key`, if any.
    ///
    /// - Important: If this throws, the store is as it was, unless the error's
    ///   ``KeepsakeError/mayHaveBeenApplied`` is set: then the key may have been removed.
    public func removeData(forKey key: String) throws(KeepsakeError) {
        try commitOne(StoreWrite(key: key, value: nil))
    }

    @usableFromInline
    func commitOne(_ write: StoreWrite) throws(KeepsakeError) {
        try Self.settled(try commit([write]), of: write, store: uri)
    }

    /// The one result of a one-write batch, as a return (applied) or a throw.
    static func settled(_ results: [StoreWriteResult], of write: StoreWrite, store uri: String) throws(KeepsakeError) {
        switch results.first {
        case .applied?: return
        case let .failed(error)?: throw error
        case .conflict?:
            throw KeepsakeError(
                .conflict, store: uri, key: write.key,
                "the value changed while it was being written; nothing was written")
        case nil:
            throw KeepsakeError(.io, store: uri, key: write.key, "the store reported no result for the write")
        }
    }

    /// Throws ``KeepsakeError/Code/invalidArgument`` (naming this store) for keys no backend can
    /// hold: the empty key and keys containing NUL. Every store checks its keys with this.
    public func validateKey(_ key: String) throws(KeepsakeError) {
        guard !key.isEmpty else {
            throw KeepsakeError(.invalidArgument, store: uri, key: key, "a record key must not be empty")
        }
        // A native string's bytes are contiguous: one pass over a buffer, not the generic
        // UTF8View walk (about 230 instructions for a short key).
        guard !(key.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? key.utf8.contains(0)) else {
            throw KeepsakeError(.invalidArgument, store: uri, key: key, "a record key must not contain NUL")
        }
    }
}

/// What a caller must know about a backend.
public struct StoreCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Records outlive an uninstall or reinstall of the app (the keyring does; app data does not).
    public static let survivesReinstall = StoreCapabilities(rawValue: 1 << 0)
    /// Records are encrypted at rest.
    public static let encryptedAtRest = StoreCapabilities(rawValue: 1 << 1)
    /// A call may show a prompt to the user (an unlock dialog).
    public static let mayPrompt = StoreCapabilities(rawValue: 1 << 2)
    /// A ``Migrator`` run commits its writes a block of records at a time (each block one
    /// batch), as it reads, instead of one batch at the end: a server's table, where one batch
    /// over a hundred thousand records would hold them all in memory and every row locked.
    public static let commitsRunInBlocks = StoreCapabilities(rawValue: 1 << 3)

    public var description: String {
        var names: [String] = []
        if contains(.survivesReinstall) { names.append("survives reinstall") }
        if contains(.encryptedAtRest) { names.append("encrypted at rest") }
        if contains(.mayPrompt) { names.append("may prompt") }
        if contains(.commitsRunInBlocks) { names.append("commits a run in blocks") }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}

/// One change in a ``RecordStore/commit(_:)`` batch.
public struct StoreWrite: Sendable {
    /// What must be stored under the key for the write to apply.
    public enum Expectation: Sendable, Equatable {
        /// Apply whatever is stored.
        case anything
        /// Apply only if the key holds exactly these bytes (`nil`: holds nothing).
        case unchanged(Data?)
    }

    /// The key written.
    public var key: String
    /// The new bytes; `nil` removes the key.
    public var value: Data?
    /// What the key must hold for the write to apply.
    public var expectation: Expectation
    /// Whether ``value`` was written by Keepsake's own encoder and verified to read back (a
    /// ``Migrator`` write, a `Vault` save, update or write-back of the latest envelope): then a
    /// store need not check it is well-formed JSON again.
    package var valueIsVerified = false

    /// The same write, marked as Keepsake's own verified encoding (``valueIsVerified``).
    @usableFromInline
    package var verified: StoreWrite {
        var write = self
        write.valueIsVerified = true
        return write
    }

    /// Writes `value` under `key` (removes it when `nil`), if the key holds what `expectation` says.
    public init(key: String, value: Data?, expectation: Expectation = .anything) {
        self.key = key
        self.value = value
        self.expectation = expectation
    }

    /// Whether the expectation holds for `current`.
    public func expects(_ current: Data?) -> Bool {
        switch expectation {
        case .anything: return true
        case let .unchanged(expected): return expected == current
        }
    }
}

/// The result of one write in a batch.
public enum StoreWriteResult: Sendable, Equatable {
    /// The write was made: the key holds the new bytes (or nothing, for a removal).
    case applied
    /// The key did not hold what the write expected; nothing was written for it.
    case conflict
    /// The write failed; the key holds what it held before, or — when the error's
    /// ``KeepsakeError/mayHaveBeenApplied`` is set — perhaps this write's bytes. (Boxed: a batch of a million
    /// results takes 8 bytes each, not the size of an error.)
    indirect case failed(KeepsakeError)
}
