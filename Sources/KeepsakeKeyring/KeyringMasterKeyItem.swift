import Foundation
import Keepsake

/// The keyring item that holds the master key of one encrypted `file:` store — how Chromium and
/// Electron's safeStorage keep their key on Linux.
///
/// The item is in the default collection with the attributes
/// - `xdg:schema`: ``schemaName`` (`org.keepsake.MasterKey`),
/// - `keepsake-purpose`: `file-store-master-key`,
/// - `keepsake-store-id`: the store id from the store's header (32 lowercase hex digits),
///
/// labelled `Keepsake master key for file store <id>`, and its secret is the 32-byte key as 64
/// lowercase hex digits (the keyring holds text). Lookups match all three attributes, so no
/// other item — a record of a `keyring:` store included — is ever taken for a key.
///
/// The item keeps its history: ``replaceKey(with:)`` (a rekey) puts a new key first and keeps
/// the earlier ones after it, each 64 hex digits, separated by single spaces — at most
/// ``maximumKeys``, the oldest dropped. The first key is the store's; the others open a header
/// that was not rewritten yet (a rekey interrupted after the item was changed) and copies of
/// older headers.
///
/// Use it through `KeyringMasterKey` (KeepsakeStores), the `MasterKeyProvider` that
/// `SodiumFileStore` asks for the key; this type only reads and creates the item.
///
/// A locked collection, a locked item, no Secret Service or no session bus are the keyring's
/// typed errors (`.locked`, `.unavailable`, `.timeout`), never "absent": a key is reported absent
/// only when the default collection is unlocked and no item, locked or not, matches.
public struct KeyringMasterKeyItem: Sendable, CustomStringConvertible {
    /// The `xdg:schema` of master key items.
    public static let schemaName = "org.keepsake.MasterKey"
    /// The `keepsake-purpose` attribute of master key items.
    public static let purpose = "file-store-master-key"
    /// The length of a master key, in bytes.
    public static let keyBytes = 32
    /// The most keys the item keeps: the current key and its predecessors.
    public static let maximumKeys = 16

    /// The store id the key opens, in lowercase hex.
    public let storeID: String
    /// How long one call may wait for the Secret Service.
    public let timeout: Duration
    /// The secret session, opened on the first call and reused by later ones.
    private let channel = LibsecretChannel()

    /// The item for the store with id `storeID`; nothing is contacted until a call.
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` for an id that is not lowercase hex digits,
    ///   or a timeout that is not positive.
    public init(storeID: String, timeout: Duration = KeyringStore.defaultTimeout) throws(KeepsakeError) {
        guard !storeID.isEmpty, storeID.utf8.allSatisfy(Self.isLowerHex) else {
            throw KeepsakeError(.invalidArgument, "a store id is lowercase hex digits, not '\(storeID)'")
        }
        guard timeout > .zero else {
            throw KeepsakeError(.invalidArgument, "the keyring timeout must be positive, not \(timeout)")
        }
        self.storeID = storeID
        self.timeout = timeout
    }

    /// `master key in the keyring (store id …)`.
    public var description: String { "master key in the keyring (store id \(storeID))" }

    private var attributes: [String: String] {
        ["keepsake-purpose": Self.purpose, "keepsake-store-id": storeID]
    }

    /// What a lookup matches: the attributes and the schema, so that only master key items match.
    private var lookup: [String: String] {
        attributes.merging(["xdg:schema": Self.schemaName]) { $1 }
    }

    /// The key the keyring holds for this store, or `nil` when it positively holds none.
    ///
    /// When several items match (another client added one), the most recently changed is used;
    /// a wrong key is then refused by the store's own key check, never used to open it.
    ///
    /// - Throws: `KeepsakeError` naming this item: `.locked`, `.unavailable`, `.timeout`, `.io`;
    ///   `KeepsakeError.Code.invalidArgument` when the item's secret is not keys of 64 hex digits.
    /// - Important: Nothing is written and nothing prompts, whether this returns or throws.
    public func read() throws(KeepsakeError) -> [UInt8]? {
        try readAll()?.first
    }

    /// Every key the item holds, the current one first, then its predecessors (newest first);
    /// `nil` when the keyring positively holds no item for this store.
    ///
    /// - Throws: What ``read()`` throws.
    /// - Important: Nothing is written and nothing prompts, whether this returns or throws.
    public func readAll() throws(KeepsakeError) -> [[UInt8]]? {
        var found = try converse { call throws(LibsecretFailure) in try find(in: call) }
        defer { Self.wipe(&found) }
        return try found.map { found throws(KeepsakeError) in try decode(found) }
    }

    /// Makes `key` the store's key, keeping the keys the item held after it (at most
    /// ``maximumKeys`` in all, the oldest dropped); creates the item when there is none. The
    /// keys are read back before this returns.
    ///
    /// - Parameter key: 32 bytes.
    /// - Returns: The keys the item now holds, `key` first.
    /// - Throws: As ``storeIfAbsent(_:)``; `.invalidArgument` when the item holds something
    ///   other than keys (it is left as it is).
    /// - Important: If this throws, the item holds its earlier keys, or `key` before them (after
    ///   a `.timeout`): the earlier keys are never lost.
    public func replaceKey(with key: [UInt8]) throws(KeepsakeError) -> [[UInt8]] {
        var found = try underWriteLock(key) { (remaining) throws(KeepsakeError) -> Found? in
            let deadline = ContinuousClock.now + remaining
            var existing = try converse(within: remaining) { call throws(LibsecretFailure) in try find(in: call) }
            defer { Self.wipe(&existing) }
            guard let path = existing?.path else { return try storeIfAbsent(key, within: remaining) }
            var keys = try decode(existing ?? Found(secret: Data(), path: path))
            defer {
                for index in keys.indices { keys[index].withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
            }
            // A retry whose first run was applied finds the key first already: nothing to add.
            if keys.first == key { return existing }
            var text = Data(([key] + keys.prefix(Self.maximumKeys - 1)).map(Self.hex).joined(separator: " ").utf8)
            defer { text.resetBytes(in: 0..<text.count) }
            return try converse(within: ContinuousClock.now.duration(to: deadline)) {
                call throws(LibsecretFailure) -> Found? in
                try call.setSecret(
                    text,
                    on: LibsecretItem(path: path, username: nil, isLocked: false, modified: 0, created: 0, secret: nil))
                return try find(in: call)
            }
        }
        defer { Self.wipe(&found) }
        guard let stored = found else {
            throw KeepsakeError(.verificationFailed, "\(description): the item was written but cannot be found again")
        }
        let keys = try decode(stored)
        guard keys.first == key else {
            throw KeepsakeError(
                .verificationFailed, "\(description): the item does not read back with the new key first")
        }
        return keys
    }

    /// Stores `key` as this store's master key item, unless the keyring already holds one: then
    /// that one is kept and returned. The key is read back before this returns.
    ///
    /// - Parameter key: 32 bytes.
    /// - Returns: The key the keyring now holds for this store, read back from it.
    /// - Throws: `KeepsakeError`: `.locked` (nothing is created in a locked collection),
    ///   `.unavailable`, `.timeout`, `.io`; `.lockTimeout` when another Keepsake process held the
    ///   write lock until the deadline (nothing was created); `.invalidArgument` for a key that
    ///   is not 32 bytes;
    ///   `.verificationFailed` when the item does not read back as the key stored.
    /// - Important: An existing key is never replaced. If this throws after a `.timeout`, the
    ///   item may have been created; a later ``read()`` finds it.
    public func storeIfAbsent(_ key: [UInt8]) throws(KeepsakeError) -> [UInt8] {
        var found = try underWriteLock(key) { (remaining) throws(KeepsakeError) -> Found? in
            try storeIfAbsent(key, within: remaining)
        }
        defer { Self.wipe(&found) }
        guard let stored = found else {
            throw KeepsakeError(.verificationFailed, "\(description): the item was created but cannot be found again")
        }
        return try decode(stored)[0]
    }

    /// Checks that `key` is a key, then runs `body` with the time left under the keyring write
    /// lock named for this store id: two processes creating or replacing the key at once must
    /// not each write one (see `KeyringStore`, "Writes"; a name no keyring service can have:
    /// services hold no NUL).
    private func underWriteLock(
        _ key: [UInt8], _ body: (_ remaining: Duration) throws(KeepsakeError) -> Found?
    ) throws(KeepsakeError) -> Found? {
        guard key.count == Self.keyBytes else {
            throw KeepsakeError(.invalidArgument, "a master key is \(Self.keyBytes) bytes, not \(key.count)")
        }
        let deadline = ContinuousClock.now + timeout
        return try KeyringWriteLock.holding(
            service: "\u{0}master-key:" + storeID, until: deadline, store: description, key: nil
        ) { () throws(KeepsakeError) -> Found? in
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw KeepsakeError(
                    .lockTimeout,
                    "\(description): the keyring write lock was taken only at the call's deadline; nothing was written")
            }
            return try body(remaining)
        }
    }

    private func storeIfAbsent(_ key: [UInt8], within remaining: Duration) throws(KeepsakeError) -> Found? {
        try converse(within: remaining) { call throws(LibsecretFailure) -> Found? in
            var text = Data(Self.hex(key).utf8)
            defer { text.resetBytes(in: 0..<text.count) }
            if let existing = try find(in: call) {
                guard call.isRetry, existing.secret.isEmpty else { return existing }
                // The first run's CreateItem was refused on a stale session after KWallet had
                // added the item: it has no secret yet, and gets this one.
                try call.setSecret(
                    text,
                    on: LibsecretItem(
                        path: existing.path, username: nil, isLocked: false, modified: 0, created: 0, secret: nil))
                return try find(in: call)
            }
            guard let collection = try call.defaultCollection() else {
                throw LibsecretFailure(
                    stage: .createItem, kind: .noDefaultCollection,
                    message:
                        "the Secret Service has no default collection to keep the master key in; create a keyring first"
                )
            }
            guard !collection.isLocked else {
                throw LibsecretFailure(
                    stage: .createItem, kind: .locked,
                    message:
                        "the default collection \(collection.path) is locked, so no master key was created; unlock the keyring and try again"
                )
            }
            try call.createItem(
                in: collection, schema: Self.schemaName, attributes: attributes,
                label: "Keepsake master key for file store \(storeID)", secret: text, replace: false)
            return try find(in: call)
        }
    }

    // MARK: Plumbing

    /// A matching item's secret text and D-Bus path.
    private struct Found {
        var secret: Data
        var path: String
    }

    /// The newest matching item; `.locked` rather than `nil` when the answer could be wrong.
    private func find(in call: LibsecretCall) throws(LibsecretFailure) -> Found? {
        let collection = try call.defaultCollection()
        let (unlocked, locked) = try call.search(lookup)
        if !locked.isEmpty {
            throw LibsecretFailure(
                stage: .search, kind: .locked,
                message:
                    "the keyring item holding this store's master key is locked; unlock the keyring and try again")
        }
        if unlocked.isEmpty, let collection, collection.isLocked {
            throw LibsecretFailure(
                stage: .search, kind: .locked,
                message:
                    "the default collection \(collection.path) is locked, so whether it holds this store's master key cannot be told; unlock the keyring and try again"
            )
        }
        let items = try call.readItems(unlocked, loadSecrets: true)
        guard let item = items.max(by: { ($0.modified, $0.created) < ($1.modified, $1.created) }) else { return nil }
        // An answer that left the secret out is asked again, once.
        let secret: Data
        if let listed = item.secret { secret = listed } else { secret = try call.readSecret(at: item.path) }
        return Found(secret: secret, path: item.path)
    }

    /// Zeroes the secret text read from the keyring.
    private static func wipe(_ found: inout Found?) {
        guard let count = found?.secret.count else { return }
        found?.secret.resetBytes(in: 0..<count)
    }

    /// The keys in an item's secret text: 1 to ``maximumKeys`` of 64 hex digits, separated by
    /// single spaces.
    private func decode(_ found: Found) throws(KeepsakeError) -> [[UInt8]] {
        let parts = found.secret.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        var keys: [[UInt8]] = []
        for part in parts.prefix(Self.maximumKeys + 1) {
            guard let key = Self.unhex(Data(part)) else { break }
            keys.append(key)
        }
        guard !keys.isEmpty, keys.count == parts.count, keys.count <= Self.maximumKeys else {
            throw KeepsakeError(
                .invalidArgument,
                """
                \(description): the keyring item \(found.path) does not hold a master key \
                (\(Self.keyBytes * 2) hex digits, or up to \(Self.maximumKeys) of them separated by spaces); it was left as it is
                """)
        }
        return keys
    }

    private func converse<T>(
        within remaining: Duration? = nil, _ body: (LibsecretCall) throws(LibsecretFailure) -> T
    ) throws(KeepsakeError) -> T {
        do throws(LibsecretFailure) {
            return try channel.call(timeout: remaining ?? timeout, body)
        } catch {
            var located = error.keepsakeError(store: nil, key: nil, timeout: timeout)
            located.message = "\(description): \(located.message)"
            throw located
        }
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func unhex(_ text: Data) -> [UInt8]? {
        guard text.count == keyBytes * 2 else { return nil }
        func value(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        let bytes = [UInt8](text)
        var key = [UInt8](repeating: 0, count: keyBytes)
        for index in 0..<keyBytes {
            guard let high = value(bytes[2 * index]), let low = value(bytes[2 * index + 1]) else { return nil }
            key[index] = high << 4 | low
        }
        return key
    }
}
