import Foundation

extension Vault {
    /// The keys of `chain`'s records in this store: its default keys that hold a value, then
    /// the keys each of its key patterns matches (``ModelChain/keyPatterns``), each sorted by
    /// UTF-8 bytes. A ``PrefixScanningStore`` (PostgreSQL, a defaults suite) finds a pattern's
    /// keys itself; other stores are listed once and filtered.
    ///
    /// - Throws: ``KeepsakeError`` when the store cannot be listed.
    public func keys<Latest>(of chain: ModelChain<Latest>) throws(KeepsakeError) -> [String] {
        let walk = RecordWalk(chain: chain)
        var keys: [String] = []
        var listed: [String]?
        func everyKey() throws(KeepsakeError) -> [String] {
            if let listed { return listed }
            let all = try store.keys()
            listed = all
            return all
        }
        let scanning = store as? any PrefixScanningStore
        for key in walk.fixedKeys {
            let present: Bool
            if let scanning {
                present = try scanning.keys(matching: KeyPattern(prefix: key)).contains { $0.isExactly(key) }
            } else {
                present = try everyKey().contains { $0.isExactly(key) }
            }
            if present { keys.append(key) }
        }
        for pattern in walk.patterns {
            let matched =
                if let scanning { try scanning.keys(matching: pattern) } else { try everyKey().filter(pattern.matches) }
            keys += matched.filter { !walk.isFixed($0) }
        }
        return keys
    }

    /// The keys of `chain`'s records, without blocking the cooperative thread pool.
    ///
    /// - Throws: ``KeepsakeError`` when the store cannot be listed.
    public func keys<Latest>(of chain: ModelChain<Latest>) async throws(KeepsakeError) -> [String] {
        try await Blocking.run { () throws(KeepsakeError) in try self.keys(of: chain) }
    }

    /// Every record of `chain` in this store — under its default keys, then under the keys its
    /// patterns match — read and migrated in memory, a page at a time: what a server walks to
    /// see every tenant's settings.
    ///
    /// ```swift
    /// for try await record in vault.records(of: Tenant.chain) {
    ///     switch record.result {
    ///     case let .success(tenant): print(record.key, tenant.value.plan)
    ///     case let .failure(error): print(record.key, error)  // this record only; the walk goes on
    ///     }
    /// }
    /// ```
    ///
    /// Nothing is written: a record stored at an older version is migrated in memory (its
    /// ``DecodedRecord/wasMigrated`` is true) and stays as stored; `Vault.load` or `migrate run`
    /// writes it back. A record that cannot be read (corrupt, newer than this release, a failing
    /// step) is an element of its own with its error; a record removed during the walk is left
    /// out. A ``PrefixScanningStore`` reads `pageSize` records per call, so memory stays flat
    /// in the number of records; other stores are listed once, then read key by key. The store
    /// is called off the cooperative thread pool.
    ///
    /// - Important: The walk ends with a throw only when the store itself cannot be listed or
    ///   read; nothing is written either way.
    public func records<Latest>(of chain: ModelChain<Latest>, pageSize: Int = 256) -> ModelRecords<Latest> {
        ModelRecords(vault: self, walk: RecordWalk(chain: chain), pageSize: max(1, pageSize))
    }
}

/// One record of a model's walk (``Vault/records(of:pageSize:)``): its key, and the record
/// migrated in memory or why it could not be read.
public struct ModelRecord<Model: Sendable>: Sendable {
    /// Where the record is stored.
    public let key: String
    /// The record at the latest version, or the error reading it (naming the store and key).
    public let result: Result<DecodedRecord<Model>, KeepsakeError>
}

/// The records of one model, read a page at a time (``Vault/records(of:pageSize:)``).
public struct ModelRecords<Latest: ModelVersion>: AsyncSequence, Sendable {
    public typealias Element = ModelRecord<Latest>
    public typealias Failure = KeepsakeError

    let vault: Vault
    let walk: RecordWalk<Latest>
    let pageSize: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(vault: vault, walk: walk, pageSize: pageSize)
    }

    /// Reads the next page when the current one is used up.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Failure = KeepsakeError

        let vault: Vault
        let walk: RecordWalk<Latest>
        let pageSize: Int
        var state = RecordWalk<Latest>.State()
        var page: [ModelRecord<Latest>] = []
        var position = 0

        public mutating func next() async throws(KeepsakeError) -> ModelRecord<Latest>? {
            while position == page.count {
                if state.finished { return nil }
                let (vault, walk, pageSize, current) = (self.vault, self.walk, self.pageSize, state)
                let (records, next) = try await Blocking.run { () throws(KeepsakeError) in
                    try walk.page(of: vault, from: current, limit: pageSize)
                }
                page = records
                position = 0
                state = next
            }
            defer { position += 1 }
            return page[position]
        }
    }
}

/// Where a model's records are, in walk order: its fixed keys, then its patterns (a pattern
/// another of the chain's patterns covers left out, so no key comes twice).
struct RecordWalk<Latest: ModelVersion>: Sendable {
    let chain: ModelChain<Latest>
    let fixedKeys: [String]
    let patterns: [KeyPattern]

    init(chain: ModelChain<Latest>) {
        self.chain = chain
        var fixed: [String] = []
        for key in chain.defaultKeys where !fixed.contains(where: { $0.isExactly(key) }) { fixed.append(key) }
        fixedKeys = fixed.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let unique = Array(Set(chain.keyPatterns))
        patterns = unique.filter { pattern in
            !unique.contains { $0 != pattern && pattern.prefix.utf8.starts(with: $0.prefix.utf8) }
        }.sorted { $0.prefix.utf8.lexicographicallyPrecedes($1.prefix.utf8) }
    }

    func isFixed(_ key: String) -> Bool { fixedKeys.contains { $0.isExactly(key) } }

    /// Whether an error reading one record is that record's own (it is damaged, sealed with
    /// another key…) rather than the store's (unreachable, locked, timed out), which ends the walk.
    static func isRecordsOwn(_ error: KeepsakeError) -> Bool {
        let storeWide: [KeepsakeError.Code] = [
            .corruptStore, .io, .permissionDenied, .lockTimeout, .locked, .unavailable, .timeout, .invalidArgument
        ]
        return !storeWide.contains(error.code)
    }

    /// How far a walk has come.
    struct State: Sendable {
        /// Fixed keys read so far.
        var fixedRead = 0
        /// The pattern being walked.
        var pattern = 0
        /// The last key of that pattern handed over.
        var after: String?
        /// For a store that cannot scan: the current pattern's keys, listed once.
        var listed: [String]?
        var finished = false
    }

    /// The next page of records after `state`, and the state after it. A page may be empty
    /// without the walk being over (a page of records removed meanwhile).
    func page(
        of vault: Vault, from state: State, limit: Int
    ) throws(KeepsakeError) -> ([ModelRecord<Latest>], State) {
        var state = state
        var found: [(key: String, result: Result<Data, KeepsakeError>)] = []
        if state.fixedRead < fixedKeys.count {
            for key in fixedKeys[state.fixedRead...].prefix(limit) {
                do throws(KeepsakeError) {
                    if let bytes = try vault.store.data(forKey: key) { found.append((key, .success(bytes))) }
                } catch  where Self.isRecordsOwn(error) {
                    found.append((key, .failure(error)))
                }
                state.fixedRead += 1
            }
        } else if state.pattern < patterns.count {
            let pattern = patterns[state.pattern]
            var exhausted: Bool
            if let scanning = vault.store as? any PrefixScanningStore {
                found = try scanning.records(matching: pattern, after: state.after, limit: limit)
                exhausted = found.count < limit
            } else {
                let listed: [String]
                if let known = state.listed { listed = known } else { listed = try vault.store.keys(matching: pattern) }
                let start = listed.firstIndex(after: state.after)
                let keys = listed[start...].prefix(limit)
                for key in keys {
                    do throws(KeepsakeError) {
                        if let bytes = try vault.store.data(forKey: key) { found.append((key, .success(bytes))) }
                    } catch  where Self.isRecordsOwn(error) {
                        found.append((key, .failure(error)))
                    }
                }
                state.listed = listed
                state.after = keys.last
                exhausted = start + keys.count >= listed.count
            }
            if let last = found.last?.key, vault.store is any PrefixScanningStore { state.after = last }
            found.removeAll { isFixed($0.key) }
            if exhausted {
                state.pattern += 1
                state.after = nil
                state.listed = nil
            }
        }
        state.finished = state.fixedRead >= fixedKeys.count && state.pattern >= patterns.count
        let records = found.compactMap { entry -> ModelRecord<Latest>? in
            switch entry.result {
            case let .failure(error):
                return ModelRecord(
                    key: entry.key, result: .failure(error.located(store: vault.store.uri, key: entry.key)))
            case let .success(bytes):
                let outcome = chain.outcome(of: bytes, context: vault.context)
                do throws(KeepsakeError) {
                    // Bytes were read: never absent.
                    guard let record = try outcome.located(store: vault.store.uri, key: entry.key).get() else {
                        return nil
                    }
                    return ModelRecord(key: entry.key, result: .success(record))
                } catch {
                    return ModelRecord(key: entry.key, result: .failure(error))
                }
            }
        }
        return (records, state)
    }
}
