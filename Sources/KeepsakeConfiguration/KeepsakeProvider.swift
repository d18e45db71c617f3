#if Configuration
public import Configuration
import Dispatch
import Foundation
public import Keepsake
import Synchronization

/// Keepsake's records as configuration: a swift-configuration `ConfigProvider` over a `Vault`
/// and the records an app names.
///
/// ```swift
/// let provider = KeepsakeProvider(vault: vault, records: [.init(.settings)])
/// let config = ConfigReader(providers: [EnvironmentVariablesProvider(), provider])
/// let width = config.int(forKey: "settings.window.width", default: 800)
/// ```
///
/// The configuration key `settings.window.width` reads the field `window.width` of the record
/// served under `settings` (``Record/prefix``): the record is read from the store, decoded and
/// migrated to its chain's latest version in memory, then encoded with `JSONEncoder` (dates as
/// ISO 8601 text, `Data` as base64) to find the field. Nothing is written back unless
/// ``Options/writeBack`` asks for it.
///
/// - Values: a JSON string is a `string`; an integer an `int` (and a `double`); any number a
///   `double`; a Boolean a `bool`; `bytes` are a base64 string (how `Data` encodes) or an array
///   of integers 0…255 (how `[UInt8]` encodes); arrays of those are the array types. A field
///   that is missing or `null` is not found (`nil`), so a provider after this one is asked.
/// - Errors: a record written by a newer release, a corrupt one, a locked keyring, a store
///   that cannot be read, or a field of another type than asked for, is a lookup error — a
///   `KeepsakeError` naming the store and the record key — never a silent default.
/// - Secrets: every value is secret (`ConfigValue.isSecret`, so access logs redact it) when
///   the store is encrypted at rest (a keyring, an encrypted file store), and so are the
///   fields the app names (``Record/secretFields``, ``Record/isSecret``).
/// - Watching: `watchValue` and `watchSnapshot` are built on `Vault.updates(of:forKey:)`: a
///   change by any writer — another process's `migrate put` included — is seen without polling
///   wherever the store reports its changes (a defaults suite, an encrypted file store).
/// - Snapshots: one snapshot holds every record from one state of the store; see
///   ``snapshot()``.
///
/// ## Topics
///
/// ### Creating a provider
/// - ``init(vault:records:options:)``
/// - ``Record``
/// - ``Options``
///
/// ### Reading
/// - ``value(forKey:type:)``
/// - ``fetchValue(forKey:type:)``
/// - ``snapshot()``
///
/// ### Watching
/// - ``watchValue(forKey:type:updatesHandler:)``
/// - ``watchSnapshot(updatesHandler:)``
public struct KeepsakeProvider: Sendable {
    /// How a ``KeepsakeProvider`` reads.
    public struct Options: Sendable {
        /// Whether a read of an outdated record writes the migrated record back, as
        /// `Vault.load(_:)` does when the vault's own options allow it. Default: `false` — a
        /// configuration read never writes. Watches and snapshots never write either way.
        public var writeBack: Bool
        /// How many times a snapshot of several records reads them all before it gives up on a
        /// store that keeps changing. Default: 16.
        public var snapshotAttempts: Int

        /// - Parameters:
        ///   - writeBack: Whether a read writes a migrated record back.
        ///   - snapshotAttempts: How many rounds of reads a snapshot makes at most (at least 2).
        public init(writeBack: Bool = false, snapshotAttempts: Int = 16) {
            self.writeBack = writeBack
            self.snapshotAttempts = max(2, snapshotAttempts)
        }
    }

    /// The vault records are read through.
    public let vault: Vault
    /// The records served, each under its ``Record/prefix``.
    public let records: [Record]
    /// How reads are made.
    public let options: Options
    /// Decoded records by their stored bytes, so that an unchanged record is not migrated again.
    private let cache: DecodeCache

    /// A provider serving `records` from `vault`.
    ///
    /// - Parameters:
    ///   - vault: The vault to read through: its store, migration context and options.
    ///   - records: The records to serve. When two records' prefixes both begin a key, the
    ///     longer prefix serves it.
    ///   - options: How reads are made.
    public init(vault: Vault, records: [Record], options: Options = Options()) {
        self.vault = vault
        self.records = records
        self.options = options
        self.cache = DecodeCache(count: records.count)
    }

    /// Whether the store keeps every value secret: it is encrypted at rest.
    var storeIsSecret: Bool { vault.store.capabilities.contains(.encryptedAtRest) }

    /// The record serving `key` (the longest prefix), and the field path below its prefix.
    func route(_ key: AbsoluteConfigKey) -> (index: Int, path: ArraySlice<String>)? {
        var best: (index: Int, length: Int)?
        for (index, record) in records.enumerated() {
            let prefix = record.prefix
            guard prefix.count <= key.components.count, key.components.starts(with: prefix) else { continue }
            if best == nil || prefix.count > best!.length { best = (index, prefix.count) }
        }
        guard let best else { return nil }
        return (best.index, key.components[best.length...])
    }

    /// The stored bytes of record `index`, as read now.
    func readBytes(_ index: Int) -> Result<Data?, KeepsakeError> {
        let record = records[index]
        do throws(KeepsakeError) {
            try vault.store.validateKey(record.storageKey)
            return .success(try vault.store.data(forKey: record.storageKey))
        } catch {
            return .failure(error.naming(store: vault.store.uri, key: record.storageKey))
        }
    }

    /// Record `index` decoded from `bytes` (from the cache when the bytes are unchanged).
    func state(_ index: Int, from bytes: Result<Data?, KeepsakeError>) -> RecordState {
        switch bytes {
        case let .failure(error):
            return .failed(error)
        case let .success(data):
            return cache.state(index, for: data) { records[index].decode(data, vault) }
        }
    }

    /// Record `index` as it is now: read, decoded and, when ``Options/writeBack`` says so,
    /// written back.
    func currentState(_ index: Int) -> RecordState {
        if options.writeBack { return records[index].loadWritingBack(vault) }
        return state(index, from: readBytes(index))
    }

    /// Looks `key` up in the record states `states` gives.
    func lookup(
        _ key: AbsoluteConfigKey, type: ConfigType, states: (Int) throws(KeepsakeError) -> RecordState
    ) throws(KeepsakeError) -> LookupResult {
        guard let (index, path) = route(key) else {
            return LookupResult(encodedKey: key.description, value: nil)
        }
        return try Self.lookup(
            path, type: type, in: try states(index), record: records[index], storeIsSecret: storeIsSecret,
            store: vault.store.uri)
    }

    /// The field at `path` of a record in `state`, as `type`.
    static func lookup(
        _ path: ArraySlice<String>, type: ConfigType, in state: RecordState, record: Record, storeIsSecret: Bool,
        store: String
    ) throws(KeepsakeError) -> LookupResult {
        let fieldPath = path.joined(separator: ".")
        let encodedKey = "\(record.storageKey)[\(fieldPath)]"
        let tree: JSONValue
        switch state {
        case .absent: return LookupResult(encodedKey: encodedKey, value: nil)
        case let .failed(error): throw error
        case let .fields(fields): tree = fields
        }
        guard let field = tree.field(at: path) else { return LookupResult(encodedKey: encodedKey, value: nil) }
        guard let content = field.content(as: type) else {
            throw KeepsakeError(
                .configurationTypeMismatch, store: store, key: record.storageKey,
                "field '\(fieldPath)' of the \(record.chainName) record is \(field.kind), not \(type.rawValue)")
        }
        let isSecret = storeIsSecret || record.namesSecret(path)
        return LookupResult(encodedKey: encodedKey, value: ConfigValue(content, isSecret: isSecret))
    }
}

extension KeepsakeProvider: ConfigProvider {
    /// `KeepsakeProvider[<store URI>]`, as access logs name it.
    public var providerName: String { "KeepsakeProvider[\(vault.store.uri)]" }

    /// The value of `key`, read from the store now.
    ///
    /// A key no ``Record/prefix`` begins is not found (`nil`), and so is a missing field or a
    /// record that is not stored (and has no default).
    ///
    /// - Throws: `KeepsakeError` naming the store and record key: the record is newer than
    ///   this release, corrupt or unrecognised, a migration step failed, the store is locked or
    ///   cannot be read (the error's own code says which), or the field is not `type`
    ///   (`KeepsakeError.Code.configurationTypeMismatch`).
    /// - Important: Nothing is written, unless ``Options/writeBack`` is set; then an outdated
    ///   record is written back as `Vault.load(_:)` does, and a failed write-back still returns
    ///   the value.
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try lookup(key, type: type) { index in currentState(index) }
    }

    /// The value of `key`, read from the store now off Swift's cooperative pool (a keyring's
    /// D-Bus call, a lock wait, a network store). See ``value(forKey:type:)``.
    ///
    /// - Throws: What ``value(forKey:type:)`` throws.
    /// - Important: Nothing is written, unless ``Options/writeBack`` is set.
    public func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        let provider = self
        return try await offPool { () throws(KeepsakeError) in
            try provider.lookup(key, type: type) { index in provider.currentState(index) }
        }.get()
    }

    /// The value of `key` now, then each time it changes, for as long as `updatesHandler` runs.
    ///
    /// Built on `Vault.updates(of:forKey:)` for the record serving `key`: the record's change
    /// by any writer (this process, another process, another instance) is seen without polling
    /// where the store reports its changes, and the record is read again and compared before an
    /// element is emitted. Successive equal values are emitted once. A record that cannot be
    /// read (newer, corrupt, a locked keyring) is a `.failure` element naming the store and key;
    /// the sequence goes on. A key no record serves emits `nil` once.
    ///
    /// - Throws: What `updatesHandler` throws.
    /// - Important: Nothing is ever written by a watch. The watch is released (file
    ///   descriptors, match rules) when `updatesHandler` returns.
    nonisolated(nonsending) public func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler:
            nonisolated(nonsending) (
                _ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>
            ) async throws -> Return
    ) async throws -> Return {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Result<LookupResult, any Error>.self, bufferingPolicy: .bufferingNewest(1))
        guard let (index, path) = route(key) else {
            continuation.yield(.success(LookupResult(encodedKey: key.description, value: nil)))
            defer { continuation.finish() }
            return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
        }
        let record = records[index]
        let storeIsSecret = self.storeIsSecret
        let store = vault.store.uri
        let states = record.updates(vault)
        let producer = Task {
            var last: LookupResult?
            for await state in states {
                do throws(KeepsakeError) {
                    let result = try Self.lookup(
                        path, type: type, in: state, record: record, storeIsSecret: storeIsSecret, store: store)
                    guard result != last else { continue }
                    last = result
                    continuation.yield(.success(result))
                } catch {
                    last = nil
                    continuation.yield(.failure(error))
                }
            }
            continuation.finish()
        }
        defer {
            producer.cancel()
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
    }

    /// Every record served, read from one state of the store.
    ///
    /// The records are read one by one, then read again, until two successive rounds find the
    /// same bytes for every record (one round when the provider serves one record): so a
    /// snapshot never mixes a record from before a change with one from after it. A store that
    /// keeps changing through ``Options/snapshotAttempts`` rounds gives a snapshot whose every
    /// lookup of a served key throws `KeepsakeError.Code.conflict`. The snapshot holds the
    /// decoded records; its lookups read nothing.
    ///
    /// - Important: Nothing is written, whatever ``Options/writeBack`` says.
    public func snapshot() -> any ConfigSnapshot {
        makeSnapshot()
    }

    /// A snapshot now, then a new one each time a record served changes, for as long as
    /// `updatesHandler` runs.
    ///
    /// Each record's `Vault.updates(of:forKey:)` tells of a change; then every record is read
    /// again as ``snapshot()`` reads them, so each snapshot is consistent. A snapshot equal to
    /// the one before it is not emitted.
    ///
    /// - Throws: What `updatesHandler` throws.
    /// - Important: Nothing is ever written by a watch. The watches are released when
    ///   `updatesHandler` returns.
    nonisolated(nonsending) public func watchSnapshot<Return: ~Copyable>(
        updatesHandler:
            nonisolated(nonsending) (
                _ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>
            ) async throws -> Return
    ) async throws -> Return {
        let (snapshots, output) = AsyncStream.makeStream(
            of: (any ConfigSnapshot).self, bufferingPolicy: .bufferingNewest(1))
        let (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let provider = self
        let watchers = records.map { record in
            let states = record.updates(provider.vault)
            return Task {
                for await _ in states { changed.yield() }
            }
        }
        let producer = Task {
            var last = await offPool { provider.makeSnapshot() }
            output.yield(last)
            for await _ in changes {
                let next = await offPool { provider.makeSnapshot() }
                guard next.reads != last.reads else { continue }
                last = next
                output.yield(next)
            }
            output.finish()
        }
        defer {
            for watcher in watchers { watcher.cancel() }
            changed.finish()
            producer.cancel()
            output.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(snapshots))
    }

    /// Reads every record until two rounds agree; see ``snapshot()``.
    func makeSnapshot() -> KeepsakeSnapshot {
        var reads = records.indices.map(readBytes)
        var stable = records.count <= 1
        var attempt = 1
        while !stable && attempt < options.snapshotAttempts {
            attempt += 1
            let again = records.indices.map(readBytes)
            stable = again == reads
            reads = again
        }
        guard stable else {
            let error = KeepsakeError(
                .conflict, store: vault.store.uri,
                "the store changed during each of \(attempt) rounds of reading \(records.count) records; "
                    + "no consistent snapshot was read")
            return KeepsakeSnapshot(provider: self, reads: reads, states: [], failure: error)
        }
        let states = records.indices.map { state($0, from: reads[$0]) }
        return KeepsakeSnapshot(provider: self, reads: reads, states: states, failure: nil)
    }
}

extension KeepsakeProvider: CustomStringConvertible {
    /// The provider's name and the record keys it serves; never a value.
    public var description: String {
        "\(providerName)[\(records.map(\.storageKey).joined(separator: ", "))]"
    }
}

/// One consistent state of a provider's records.
struct KeepsakeSnapshot: ConfigSnapshot, CustomStringConvertible {
    let provider: KeepsakeProvider
    /// What each record's read found: what tells two snapshots apart.
    let reads: [Result<Data?, KeepsakeError>]
    let states: [RecordState]
    /// Why no consistent state could be read, when none could.
    let failure: KeepsakeError?

    var providerName: String { provider.providerName }

    var description: String { "\(providerName) snapshot of \(reads.count) records" }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try provider.lookup(key, type: type) { index throws(KeepsakeError) in
            if let failure { throw failure }
            return states[index]
        }
    }
}

/// Decoded records by stored bytes, one entry per record.
final class DecodeCache: Sendable {
    private let entries: Mutex<[Int: (bytes: Data?, state: RecordState)]>

    init(count: Int) {
        entries = Mutex([:])
    }

    func state(_ index: Int, for bytes: Data?, decode: () -> RecordState) -> RecordState {
        if let entry = entries.withLock({ $0[index] }), entry.bytes == bytes { return entry.state }
        let state = decode()
        entries.withLock { $0[index] = (bytes, state) }
        return state
    }
}

/// Runs `work` off Swift's cooperative pool (store reads may block): the package's one helper.
func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await Blocking.run(work)
}

/// Runs throwing `work` off Swift's cooperative pool; its outcome as a `Result`.
func offPool<T: Sendable>(
    _ work: @escaping @Sendable () throws(KeepsakeError) -> T
) async -> Result<T, KeepsakeError> {
    await Blocking.run { () -> Result<T, KeepsakeError> in
        do throws(KeepsakeError) { return .success(try work()) } catch { return .failure(error) }
    }
}

extension KeepsakeError.Code {
    /// A configuration key names a record's field of another type than was asked for (a
    /// string read as an `int`). The message names the field and its JSON kind, never its value.
    public static let configurationTypeMismatch = KeepsakeError.Code(rawValue: "configurationTypeMismatch")
}
#endif
