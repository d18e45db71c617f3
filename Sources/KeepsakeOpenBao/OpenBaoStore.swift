#if OpenBao
import Foundation
import Keepsake
import Logging
internal import NIOHTTP1
import Synchronization

/// A `RecordStore` in an OpenBao (or HashiCorp Vault) KV version 2 secrets engine: one entry
/// per record, for server teams that keep secrets out of their application database (the
/// KeepsakeOpenBao article).
///
/// - The record key `tenant-42` is the entry `MOUNT/PREFIX/tenant-42`; a key with other bytes is
///   written as one path segment all the same (`a/b` is `a=2Fb`, see docs/FORMAT.md), so no key
///   reaches another folder.
/// - The entry's data is `{"record": "<the record's bytes>"}` and nothing else: no secret
///   outside it, nothing of Keepsake's in metadata. An entry whose data has other fields (an
///   older release that wrote a record's fields with `bao kv put PATH name=Ann`) reads as those
///   fields, a JSON object with sorted keys — a bare record the model's chain migrates.
/// - Every write is a compare-and-swap on the entry's KV version (`options.cas`), and the keys
///   the store creates have `cas_required` set, so that no other client writes them blindly.
///   A removal writes an empty version under the same check, then soft-deletes it: a writer
///   that read the record before the removal meets a newer version and gets a conflict. A batch
///   is a sequence of such writes, each reported on its own.
/// - A soft-deleted or destroyed latest version reads as absent, and the next write replaces it.
/// - A write the server may have applied before its connection was lost is tried again; a
///   retry that meets a newer version asks whether that version holds its bytes, and reports
///   the write applied when it does.
/// - A server that refuses connections, is sealed or restarts is tried again for
///   ``OpenBaoConfiguration/connectTimeout``, then `KeepsakeError.Code.unavailable`; every call
///   ends within ``OpenBaoConfiguration/timeout``. 403 is `KeepsakeError.Code.permissionDenied`
///   (after one new login), a record over ``maximumRecordLength`` `KeepsakeError.Code.valueRefused`.
/// - The token is renewed before it expires and obtained again (AppRole login, token file read
///   again) when renewal ends or the server refuses it. No token or secret id appears in a URI,
///   a log line or an error.
/// - Watching (`Vault.updates(for:)`, `migrate watch`) polls one `detailed-metadata` listing per
///   ``OpenBaoConfiguration/pollInterval`` for everything this store watches: OpenBao 2 sends no
///   change events.
///
/// ```swift
/// let store = try OpenBaoStore(configuration: OpenBaoConfiguration(
///     parsing: "openbao://bao.internal:8200/secret/myapp?cacert=/etc/myapp/bao-ca.pem&token_file=/run/secrets/bao-token"))
/// let vault = Vault(store: store)
/// ```
public final class OpenBaoStore: RecordStore {
    /// Where the store is and how it logs in.
    public let configuration: OpenBaoConfiguration
    /// The store's URI: `openbao://HOST:PORT/MOUNT/PREFIX` (no query, nothing secret).
    public let uri: String

    /// The longest key the store takes, in bytes of UTF-8: 1,024 (its entry name is up to three
    /// times as long).
    public static let maximumKeyLength = 1024
    /// The longest record the store writes, in bytes of its request's JSON: 1 MiB less 16 KiB.
    /// OpenBao's integrated storage refuses an entry over 1 MiB; the rest is room for the path
    /// and the version's metadata.
    public static let maximumRecordLength = 1_048_576 - 16_384

    let client: Client
    let watcher: Watcher
    /// What the latest reads and writes of this store saw: each key's version and bytes, so that
    /// a write expecting the bytes just read is sent at that version without reading it again
    /// (a `migrate run` or a `Vault.update` costs a read and a write per record, not two reads).
    /// Only a hint: a stale version makes the write meet a newer one, and the write then reads
    /// the entry and decides on what it holds. Bounded: two generations of up to 4,096 keys, so
    /// that the newest 4,096 are always kept (a run commits blocks of 2,048 as it reads).
    let seen = Mutex<(current: [String: Entry?], previous: [String: Entry?])>(([:], [:]))
    let logger = Logger(label: "keepsake.openbao")

    /// Opens the store. Nothing is asked of the server unless `requireExisting` is set: the first
    /// call connects and logs in.
    ///
    /// - Parameters:
    ///   - configuration: The server, mount, prefix, credentials and deadlines.
    ///   - requireExisting: Whether to check now that the mount exists and is KV version 2 (as
    ///     `migrate` does, so that a misspelt mount is not read as empty).
    /// - Throws: `KeepsakeError.Code.invalidArgument` for a CA file that cannot be read; with
    ///   `requireExisting`, what a call throws and `KeepsakeError.Code.notFound` when the mount
    ///   is not a KV version 2 engine the token can reach.
    /// - Important: Opening writes nothing.
    public init(configuration: OpenBaoConfiguration, requireExisting: Bool = false) throws(KeepsakeError) {
        self.configuration = configuration
        uri = configuration.uri
        client = try Client(configuration: configuration, store: configuration.uri)
        watcher = Watcher()
        if requireExisting {
            let version = try mountVersion()
            guard version == "2" else {
                throw KeepsakeError(
                    .notFound, store: uri,
                    "the mount \(configuration.mount) is a KV version \(version ?? "1") engine; this store needs version 2"
                )
            }
        }
    }

    public var capabilities: StoreCapabilities { [.survivesReinstall, .encryptedAtRest, .commitsRunInBlocks] }

    var deadline: ContinuousClock.Instant { .now + configuration.timeout }

    /// The entry path of `key` under the mount's `section` (`data`, `metadata`, `delete`).
    func path(_ section: String, key: String) -> String {
        let name = EntryName.encode(key)
        return configuration.prefix.isEmpty
            ? "\(configuration.mount)/\(section)/\(name)"
            : "\(configuration.mount)/\(section)/\(configuration.prefix)/\(name)"
    }

    /// `validateKey(_:)`, and the key's length within ``maximumKeyLength``.
    func checkKey(_ key: String) throws(KeepsakeError) {
        try validateKey(key)
        guard key.utf8.count <= Self.maximumKeyLength else {
            throw KeepsakeError(
                .invalidArgument, store: uri, key: String(key.prefix(64)) + "…",
                "a key of \(key.utf8.count) bytes is longer than this store takes: at most \(Self.maximumKeyLength) bytes of UTF-8"
            )
        }
    }

    // MARK: Reading

    /// What an entry holds now: the record's bytes (`nil`: absent, soft-deleted, destroyed or
    /// removed by Keepsake) and its KV version (0 when the entry has none).
    struct Entry {
        var record: Data?
        var version: Int
    }

    func entry(forKey key: String, deadline: ContinuousClock.Instant) throws(KeepsakeError) -> Entry {
        let reply = try client.send(
            .GET, path("data", key: key), key: key, doing: "read the record", deadline: deadline)
        let found = try entry(in: reply, key: key)
        remember(found, forKey: key)
        return found
    }

    private func remember(_ entry: Entry?, forKey key: String) {
        seen.withLock { seen in
            if seen.current.count >= 4096 { seen = ([:], seen.current) }
            seen.current[key] = .some(entry)
        }
    }

    private func recalled(_ key: String) -> Entry? {
        seen.withLock { seen in (seen.current[key] ?? seen.previous[key]) ?? nil }
    }

    /// Version `version` of the entry, or `nil` when it has no such version.
    func entry(forKey key: String, version: Int, deadline: ContinuousClock.Instant) throws(KeepsakeError) -> Entry? {
        let reply = try client.send(
            .GET, path("data", key: key) + "?version=\(version)", key: key, doing: "read a version of the record",
            deadline: deadline)
        let found = try entry(in: reply, key: key)
        return found.version == version ? found : nil
    }

    private func entry(in reply: Reply, key: String) throws(KeepsakeError) -> Entry {
        switch reply.status {
        case 200:
            let object = try client.object(of: reply, key: key, doing: "read the record")
            guard let outer = object["data"] as? [String: Any], let metadata = outer["metadata"] as? [String: Any],
                let version = (metadata["version"] as? NSNumber)?.intValue
            else {
                throw KeepsakeError(.io, store: uri, key: key, "the server's answer has no data and version")
            }
            guard let data = outer["data"] as? [String: Any] else { return Entry(record: nil, version: version) }
            return Entry(record: try record(in: data, key: key), version: version)
        case 404:
            // A soft-deleted or destroyed latest version comes with its metadata; a key that was
            // never written (or only has metadata) with none.
            let metadata = (reply.object?["data"] as? [String: Any])?["metadata"] as? [String: Any]
            return Entry(record: nil, version: (metadata?["version"] as? NSNumber)?.intValue ?? 0)
        default:
            throw client.failure(reply, key: key, doing: "read the record")
        }
    }

    /// The record in an entry's data: its `record` string, nothing for an empty version (a
    /// removal), or for any other fields the fields themselves as a JSON object.
    private func record(in data: [String: Any], key: String) throws(KeepsakeError) -> Data? {
        if data.isEmpty { return nil }
        if data.count == 1, let text = data["record"] as? String { return Data(text.utf8) }
        do {
            return try JSONSerialization.data(withJSONObject: data, options: [.sortedKeys, .withoutEscapingSlashes])
        } catch {
            throw KeepsakeError(
                .corruptRecord, store: uri, key: key, "the entry's fields cannot be read as one JSON object",
                underlying: error)
        }
    }

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try checkKey(key)
        return try entry(forKey: key, deadline: deadline).record
    }

    /// Every entry name under the prefix with its current version and whether that version
    /// holds data (not soft-deleted nor destroyed): one `detailed-metadata` listing.
    func listing(deadline: ContinuousClock.Instant) throws(KeepsakeError) -> [String: (version: Int, live: Bool)] {
        let folder = configuration.prefix.isEmpty ? "" : "\(configuration.prefix)/"
        let reply = try client.send(
            .GET, "\(configuration.mount)/detailed-metadata/\(folder)?list=true", doing: "list the records",
            deadline: deadline)
        if reply.status == 404 { return [:] }
        guard reply.status == 200 else { throw client.failure(reply, key: nil, doing: "list the records") }
        let object = try client.object(of: reply, key: nil, doing: "list the records")
        guard let info = (object["data"] as? [String: Any])?["key_info"] as? [String: Any] else { return [:] }
        var entries: [String: (version: Int, live: Bool)] = [:]
        entries.reserveCapacity(info.count)
        for (name, value) in info where !name.hasSuffix("/") {
            guard let details = value as? [String: Any] else { continue }
            let version = (details["current_version"] as? NSNumber)?.intValue ?? 0
            let versions = details["versions"] as? [String: Any]
            let latest = versions?[String(version)] as? [String: Any]
            let deleted = (latest?["deletion_time"] as? String).map { !$0.isEmpty } ?? false
            let destroyed = latest?["destroyed"] as? Bool ?? false
            entries[name] = (version, version > 0 && !deleted && !destroyed)
        }
        return entries
    }

    /// Every key that holds a record, sorted by UTF-8 bytes. Entries under the prefix whose name
    /// is not one this store writes (put there by something else) are left out.
    public func keys() throws(KeepsakeError) -> [String] {
        try listing(deadline: deadline).compactMap { name, state in state.live ? EntryName.decode(name) : nil }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Every record with its bytes or its own error, sorted by key: ``forEachRecord(_:)``'s walk
    /// (a record that cannot be read is its error; a record removed meanwhile is left out).
    public func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        var records: [(key: String, result: Result<Data, KeepsakeError>)] = []
        try forEachRecord { _, key, result in records.append((key, result)) }
        return records
    }

    /// Hands every record to `body` as it is read, in key order: one listing, then one read per
    /// record, eight at a time (so a `migrate run` commits each block of records while the ones it
    /// just read are fresh). A record removed meanwhile is left out; a record that cannot be read is its error.
    ///
    /// - Throws: When the store cannot be listed (before `body` is called), or cannot be read
    ///   partway (after `body` was called for the records before).
    public func forEachRecord(
        _ body: (_ count: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError) {
        let keys = try keys()
        // Eight reads at a time (on as many connections), handed over in key order.
        for start in stride(from: 0, to: keys.count, by: 8) {
            let window = Array(keys[start..<min(start + 8, keys.count)])
            let deadline = self.deadline
            let replies = try client.prefetch(window.map { path("data", key: $0) }, deadline: deadline)
            for (key, reply) in zip(window, replies) {
                do {
                    let found: Entry
                    if let reply {
                        found = try entry(in: reply, key: key)
                        remember(found, forKey: key)
                    } else {
                        found = try entry(forKey: key, deadline: deadline)
                    }
                    if let data = found.record { body(keys.count, key, .success(data)) }
                } catch  where error.code == .corruptRecord {
                    body(keys.count, key, .failure(error))
                }
            }
        }
    }

    // MARK: Writing

    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        var bodies: [[String: Any]?] = []
        bodies.reserveCapacity(writes.count)
        for write in writes {
            try checkKey(write.key)
            bodies.append(
                try write.value.map { value throws(KeepsakeError) -> [String: Any] in
                    try body(for: value, key: write.key)
                })
        }
        var results: [StoreWriteResult] = []
        results.reserveCapacity(writes.count)
        for (index, write) in writes.enumerated() {
            let result: StoreWriteResult
            var unreachable = false
            do {
                result = try apply(write, body: bodies[index], unreachable: &unreachable)
            } catch  where [KeepsakeError.Code.unavailable, .timeout, .permissionDenied].contains(error.code) {
                // The server could not be asked before anything was sent for this write: nothing
                // of it was applied. With no write before it applied either, the batch throws.
                if results.isEmpty { throw error }
                result = .failed(error)
            } catch {
                result = .failed(error)
            }
            results.append(result)
            if case let .failed(error) = result, unreachable || error.code == .timeout {
                // The server cannot be written now: the writes after this one are not tried (each
                // would wait as long).
                for rest in writes[(index + 1)...] {
                    results.append(
                        .failed(
                            KeepsakeError(
                                error.code, store: uri, key: rest.key,
                                "not written: an earlier write of the batch failed (\(error.message))")))
                }
                return results
            }
        }
        return results
    }

    /// The `data` of a version holding `value`, checked against what the store holds.
    private func body(for value: Data, key: String) throws(KeepsakeError) -> [String: Any] {
        guard let text = String(validating: value, as: UTF8.self) else {
            throw KeepsakeError(
                .valueRefused, store: uri, key: key, "an OpenBao KV entry holds text: the record's bytes are not UTF-8")
        }
        return ["record": text]
    }

    /// One write: read the entry, check the expectation, then write at the version read.
    ///
    /// `unreachable` is set when the write's request could not be answered (it may have been
    /// applied): the server cannot be written now.
    private func apply(
        _ write: StoreWrite, body: [String: Any]?, unreachable: inout Bool
    ) throws(KeepsakeError) -> StoreWriteResult {
        let deadline = self.deadline
        // The version this store last saw for the key, when it held a record and that record is
        // what the write expects (an absent key is always read: its version is not known).
        var hint = recalled(write.key).flatMap { $0.record != nil && write.expects($0.record) ? $0 : nil }
        while true {
            let fromHint = hint != nil
            let current: Entry
            if let known = hint {
                current = known
                hint = nil
            } else {
                current = try entry(forKey: write.key, deadline: deadline)
            }
            guard write.expects(current.record) else { return .conflict }
            if body == nil, current.record == nil { return .applied }
            if current.version == 0 { try requireCheckAndSet(key: write.key, deadline: deadline) }
            let payload = try Data.json(
                ["options": ["cas": current.version], "data": body ?? [:]], store: uri, key: write.key)
            guard payload.count <= Self.maximumRecordLength else {
                throw KeepsakeError(
                    .valueRefused, store: uri, key: write.key,
                    "the record is \(payload.count) bytes as a KV write; this store takes at most \(Self.maximumRecordLength) (OpenBao's storage refuses entries over 1 MiB)"
                )
            }
            let reply: Reply
            do {
                reply = try client.send(
                    .POST, path("data", key: write.key), body: payload, key: write.key, doing: "write the record",
                    deadline: deadline)
            } catch  where [KeepsakeError.Code.unavailable, .timeout].contains(error.code) {
                // The request may have reached the server before the connection failed: a result
                // of its own (the batch does not throw once a write may have been applied).
                remember(nil, forKey: write.key)
                unreachable = true
                return .failed(
                    KeepsakeError(
                        error.code, store: uri, key: write.key, "\(error.message); the write may have been applied",
                        underlying: error, mayHaveBeenApplied: true))
            }
            switch reply.status {
            case 200, 204:
                let version =
                    ((reply.object?["data"] as? [String: Any])?["version"] as? NSNumber)?.intValue ?? current.version
                    + 1
                remember(Entry(record: write.value, version: version), forKey: write.key)
                if body == nil { softDelete(key: write.key, version: version, deadline: deadline) }
                return .applied
            case 400 where reply.errors.contains("check-and-set parameter did not match the current version"):
                if reply.retried,
                    let next = try entry(forKey: write.key, version: current.version + 1, deadline: deadline),
                    next.record == write.value
                {
                    // The version after the one read holds this write's bytes: an earlier attempt,
                    // whose answer the lost connection took, made it — or another writer that read
                    // the same version wrote the same bytes (two increments of one counter do).
                    // A removal is done either way; a value cannot be told apart, so it is
                    // reported as what it is: perhaps applied, never "applied" when it was not.
                    remember(nil, forKey: write.key)
                    guard body != nil else {
                        softDelete(key: write.key, version: current.version + 1, deadline: deadline)
                        return .applied
                    }
                    return .failed(
                        KeepsakeError(
                            .unavailable, store: uri, key: write.key,
                            """
                            the connection was lost after the write was sent, and version \(current.version + 1) \
                            holds its bytes: this write or another writer's with the same bytes — it may have been applied
                            """, mayHaveBeenApplied: true))
                }
                // Another writer came between the read and the write (or the version came from an
                // older read): read again; an unguarded write then writes over it, a guarded one
                // whose bytes changed is a conflict.
                remember(nil, forKey: write.key)
                if fromHint || write.expectation == .anything { continue }
                return .conflict
            default:
                throw client.failure(reply, key: write.key, doing: "write the record")
            }
        }
    }

    /// Sets `cas_required` on a key this store creates, before its first version.
    private func requireCheckAndSet(key: String, deadline: ContinuousClock.Instant) throws(KeepsakeError) {
        let reply = try client.send(
            .POST, path("metadata", key: key), body: Data(#"{"cas_required":true}"#.utf8), key: key,
            doing: "create the entry", deadline: deadline)
        guard reply.status == 200 || reply.status == 204 else {
            throw client.failure(reply, key: key, doing: "create the entry (its metadata, with cas_required)")
        }
    }

    /// Soft-deletes `version` of `key` (the empty version a removal wrote), so that tools show
    /// the entry as deleted. That version already reads as absent: when this fails the removal
    /// stands, and the failure is logged.
    private func softDelete(key: String, version: Int, deadline: ContinuousClock.Instant) {
        let problem: String
        do {
            let reply = try client.send(
                .POST, path("delete", key: key), body: Data(#"{"versions":[\#(version)]}"#.utf8), key: key,
                doing: "soft-delete the removed record", deadline: deadline)
            if reply.status == 200 || reply.status == 204 { return }
            problem = "HTTP \(reply.status): \(reply.errors)"
        } catch {
            // Not thrown: the removal was applied, and a caller told otherwise would try it again.
            problem = error.message
        }
        logger.warning(
            "the removed record's empty version was not soft-deleted; it reads as absent all the same",
            metadata: ["store": "\(uri)", "key": "\(key)", "problem": "\(problem)"])
    }

    // MARK: The server

    /// The KV version of the mount (`"2"`), asked of the server; `nil` when it has none.
    func mountVersion() throws(KeepsakeError) -> String? {
        let reply = try client.send(
            .GET, "sys/internal/ui/mounts/\(configuration.mount)", doing: "look up the mount", deadline: deadline)
        guard reply.status == 200 else {
            if reply.status == 403 || reply.status == 404 || reply.status == 400 {
                throw KeepsakeError(
                    .notFound, store: uri,
                    "there is no secrets engine mounted at \(configuration.mount) that this token can reach (\(reply.status): \(reply.errors))"
                )
            }
            throw client.failure(reply, key: nil, doing: "look up the mount")
        }
        let data = try client.object(of: reply, key: nil, doing: "look up the mount")["data"] as? [String: Any]
        guard data?["type"] as? String == "kv" else {
            throw KeepsakeError(
                .notFound, store: uri,
                "the engine mounted at \(configuration.mount) is \(data?["type"] as? String ?? "not a KV engine"), not KV version 2"
            )
        }
        return (data?["options"] as? [String: Any])?["version"] as? String
    }
}

extension OpenBaoStore: DiagnosableStore {
    /// The server's version and seal state, the mount's engine, and the token's policies, for
    /// `migrate doctor`: `OpenBao 2.7.2, unsealed; mount secret: KV version 2; token policies:
    /// default, myapp`.
    ///
    /// - Throws: `KeepsakeError` naming the store when the server cannot be asked.
    /// - Important: Nothing is written, whether this returns or throws.
    public func diagnosis() throws(KeepsakeError) -> String {
        let deadline = self.deadline
        let health = try client.send(
            .GET, "sys/health?standbyok=true&sealedcode=200&uninitcode=200", doing: "ask the server's health",
            deadline: deadline, authenticated: false)
        let state = try client.object(of: health, key: nil, doing: "ask the server's health")
        let version = state["version"] as? String ?? "unknown version"
        let sealed = state["sealed"] as? Bool ?? false
        var parts = [
            "\(configuration.scheme == "vault" ? "Vault" : "OpenBao") \(version), \(sealed ? "SEALED" : "unsealed")"
        ]
        if sealed { return parts.joined() }
        parts.append("mount \(configuration.mount): KV version \(try mountVersion() ?? "1")")
        let lookup = try client.send(.GET, "auth/token/lookup-self", doing: "look up the token", deadline: deadline)
        if lookup.status == 200, let data = lookup.object?["data"] as? [String: Any] {
            let policies = (data["policies"] as? [String]) ?? []
            let ttl = (data["ttl"] as? NSNumber)?.intValue ?? 0
            parts.append(
                "token policies: \(policies.joined(separator: ", "))\(ttl > 0 ? ", expires in \(ttl) s (renewed by the store)" : "")"
            )
        } else {
            parts.append("the token may not look itself up (\(lookup.status))")
        }
        return parts.joined(separator: "; ")
    }
}
#endif
