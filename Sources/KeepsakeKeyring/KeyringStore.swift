import Foundation
import Keepsake

/// A store that keeps each record as one item in the desktop keyring (the freedesktop Secret
/// Service: gnome-keyring, KeePassXC, KWallet), through libsecret.
///
/// Records written here outlive an uninstall of the app: that is where a trial record belongs.
///
/// ```swift
/// let store = try KeyringStore.open(service: "com.example.app")
/// let vault = Vault(store: store, context: .live(appID: "com.example.app"))
/// if let trial = try vault.load(TrialInfo.chain) { enforce(trial.value.startDate) } else { startTrial() }
/// ```
///
/// ## Items
/// One item per record, in the default collection, with the attributes
/// - `service`: the store's ``service`` name,
/// - `username`: the record key,
/// - `xdg:schema`: ``schemaName``,
///
/// labelled `"<service>: <key>"`, holding the record's UTF-8 JSON text. These are the
/// attributes the widely used clients use (`secret-tool`, Python `keyring`, `secretstorage`),
/// and lookups do not match `xdg:schema`: an item another client stored for the same service
/// and key is read, and migrated, like one Keepsake wrote.
///
/// ## Writes
/// A write replaces the secret of the existing item in place — the same item, even one
/// another client created with other attributes — so every client that reads the service
/// and key sees the new record; an item is created only when none exists. Never
/// delete-then-add: the key holds its old or its new record at every moment. If several
/// items hold the same service and key (another client added one beside Keepsake's), reads
/// use the most recently changed one, and a write updates that one and then deletes the
/// others, so that exactly one item remains.
///
/// ## Honest answers
/// - A lookup in a locked collection returns nothing from libsecret. This store checks the
///   lock state: a key is reported absent only when the default collection is unlocked and
///   no item, locked or not, matches; otherwise the call throws `.locked`.
/// - No session bus, or no Secret Service provider on it: `.unavailable`, with libsecret's
///   GError kept as the cause (`KeepsakeError.Cause.library`).
/// - Every call has a deadline (``timeout``): a provider that does not answer gives
///   `.timeout` on time, not after D-Bus's own 25–50 s.
/// - Nothing here ever shows a prompt: locked items are not unlocked, and no collection is
///   created.
///
/// ## One connection
/// A store opens, on its first call, one Secret Service session (encrypted when the provider
/// allows) on the process's session-bus connection, and every later call of the store — and of
/// its copies — reuses it: reading an existing record is three D-Bus requests
/// (search, then the item's properties and its secret sent together). When the keyring daemon
/// is restarted, the next call notices that its session is gone, opens a new session with the
/// new daemon and runs again, within the same deadline. Calls block the calling thread for the
/// D-Bus round trips (well under a millisecond each, plus the provider's own work: a write
/// makes gnome-keyring rewrite its file durably).
public struct KeyringStore: RecordStore {
    /// The deadline of one call when none is given: 5 seconds.
    public static let defaultTimeout: Duration = .seconds(5)

    /// The `xdg:schema` attribute of the items Keepsake creates.
    public static let schemaName = "org.keepsake.Record"

    /// The `service` attribute shared by this store's items: usually the app's identifier.
    public let service: String

    /// How long one call may wait for the Secret Service before it throws `.timeout`.
    public let timeout: Duration

    /// The connection and session shared by this store and its copies.
    private let channel = LibsecretChannel()

    /// `keyring:<service>`.
    public var uri: String { "keyring:\(service)" }

    /// The sandbox the store was made in (``Sandbox/current`` unless given).
    public let sandbox: Sandbox

    /// Survives reinstall and is encrypted at rest (by the provider). The store itself never
    /// prompts: a locked collection is an error, not an unlock dialog. Inside a sandbox that does
    /// not grant the Secret Service (a Flatpak without `--talk-name=org.freedesktop.secrets`)
    /// nothing can be stored here, so nothing is promised: none.
    public var capabilities: StoreCapabilities {
        sandbox.secretServiceAccess == .notGranted ? [] : [.survivesReinstall, .encryptedAtRest]
    }

    /// A store for `service`; nothing is contacted until the first call.
    ///
    /// - Parameters:
    ///   - service: The `service` attribute of the items: non-empty, without NUL.
    ///   - timeout: The deadline of each call (positive).
    ///   - sandbox: The sandbox the app runs in, for ``capabilities`` (detected when not given).
    /// - Throws: `KeepsakeError` `.invalidArgument` for an empty service name, one with NUL,
    ///   or a timeout that is not positive.
    public init(
        service: String, timeout: Duration = KeyringStore.defaultTimeout, sandbox: Sandbox = .current
    ) throws(KeepsakeError) {
        guard !service.isEmpty, !service.utf8.contains(0) else {
            throw KeepsakeError(
                .invalidArgument, store: "keyring:\(service)",
                "a keyring service name must be non-empty and must not contain NUL")
        }
        guard timeout > .zero else {
            throw KeepsakeError(
                .invalidArgument, store: "keyring:\(service)",
                "the keyring timeout must be positive, not \(timeout)")
        }
        self.service = service
        self.timeout = timeout
        self.sandbox = sandbox
    }

    /// Opens the store for `service` after checking that the keyring can be used now: what
    /// `migrate --store keyring:SERVICE` calls.
    ///
    /// - Parameters:
    ///   - service: The `service` attribute of the items.
    ///   - timeout: The deadline of the check and of each later call.
    /// - Throws: `KeepsakeError` naming `keyring:<service>`: `.invalidArgument` (see
    ///   ``init(service:timeout:sandbox:)``), `.unavailable` (no session bus, no Secret Service, no
    ///   default collection), `.locked` (the default collection is locked), `.timeout`.
    ///   The underlying GError is kept in `KeepsakeError.cause`.
    /// - Important: Nothing is written and nothing prompts, whether this returns or throws.
    public static func open(service: String, timeout: Duration = KeyringStore.defaultTimeout) throws(KeepsakeError)
        -> KeyringStore
    {
        let store = try KeyringStore(service: service, timeout: timeout)
        let diagnosis = KeyringStore.diagnose(timeout: timeout, sandbox: store.sandbox)
        if let error = diagnosis.error {
            var located = error
            located.store = store.uri
            throw located
        }
        return store
    }

    // MARK: Reading

    /// The record text stored under `key`, or `nil` when no item holds the key.
    ///
    /// - Throws: `KeepsakeError` naming this store and `key`: `.invalidArgument` (empty key,
    ///   or one with NUL), `.locked`, `.unavailable`, `.timeout`, `.io`. Never `nil` for these.
    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        return try converse(key: key) { call throws(LibsecretFailure) in
            let match = try find(key, in: call, loadSecrets: true)
            guard let item = match.items.first else { return nil }
            return try secret(of: item)
        }
    }

    /// Every key that holds a record for this service, sorted: the `username` attributes of
    /// the items whose `service` is ``service``, whichever client wrote them.
    ///
    /// - Throws: `KeepsakeError`: `.locked` when the default collection or a matching item is
    ///   locked (the list could be incomplete), `.unavailable`, `.timeout`, `.io`.
    public func keys() throws(KeepsakeError) -> [String] {
        try converse(key: nil) { call throws(LibsecretFailure) in
            try findAll(in: call, loadSecrets: false).keys.sorted().map(\.value)
        }
    }

    /// Every key with its record, sorted by key, read in one call (one deadline).
    ///
    /// - Throws: Like ``keys()``.
    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        try converse(key: nil) { call throws(LibsecretFailure) in
            var result: [(key: String, data: Data)] = []
            for (key, items) in try findAll(in: call, loadSecrets: true).sorted(by: { $0.key < $1.key }) {
                guard let item = items.first else { continue }
                result.append((key.value, try secret(of: item)))
            }
            return result
        }
    }

    // MARK: Writing

    /// Applies `writes` in order, each a call of its own with its own deadline, on the store's
    /// one connection.
    ///
    /// A write whose expectation does not hold is skipped as `.conflict`. A value replaces the
    /// secret of the key's existing item in place (see "Writes" above) or creates an item in
    /// the default collection; `nil` deletes every item of the key and no other.
    ///
    /// - Throws: `KeepsakeError` `.invalidArgument` for a bad key (before anything is
    ///   contacted), or the failure of the first write when no write was applied before it.
    /// - Important: If this throws, no write of the batch was applied — except that after a
    ///   `.timeout` the failing write's key holds either its old or its new record (the
    ///   provider may apply a request after the deadline), never none. A failure after a write
    ///   was applied is reported as `StoreWriteResult.failed(_:)` for that write; after a
    ///   `.locked`, `.unavailable` or `.timeout` the remaining writes are not tried and are
    ///   reported failed with the same error. The Secret Service has no transactions: an
    ///   expectation is checked just before its write, not atomically with it.
    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try validateKey(write.key) }
        var results: [StoreWriteResult] = []
        var storeFailure: KeepsakeError?
        for write in writes {
            defer { CommitProgress.report(results.count, of: writes.count) }
            if var failure = storeFailure {
                failure.key = write.key
                results.append(.failed(failure))
                continue
            }
            do throws(KeepsakeError) {
                results.append(try apply(write))
            } catch {
                guard results.contains(.applied) else { throw error }
                if [.locked, .unavailable, .timeout].contains(error.code) { storeFailure = error }
                results.append(.failed(error))
            }
        }
        return results
    }

    private func apply(_ write: StoreWrite) throws(KeepsakeError) -> StoreWriteResult {
        try converse(key: write.key) { call throws(LibsecretFailure) in
            let needsCurrent = write.expectation != .anything
            let match = try find(write.key, in: call, loadSecrets: needsCurrent)
            if needsCurrent {
                let current = try match.items.first.map { item throws(LibsecretFailure) in
                    try secret(of: item)
                }
                guard write.expects(current) else { return .conflict }
            }
            guard let value = write.value else {
                // Oldest first: if a delete fails midway, the item reads use is still there and
                // the key still reads as it did.
                for item in match.items.reversed() { try call.delete(item) }
                return .applied
            }
            if let target = match.items.first {
                try call.setSecret(value, on: target)
                // The new record is stored; now make it the only one. A failure here leaves an
                // older duplicate that reads never choose (the target is now the most recent)
                // and the next write removes: the write itself has been applied.
                for duplicate in match.items.dropFirst() {
                    do throws(LibsecretFailure) { try call.delete(duplicate) } catch { break }
                }
                return .applied
            }
            guard let collection = match.defaultCollection else {
                throw LibsecretFailure(
                    stage: .createItem, kind: .noDefaultCollection,
                    message:
                        "the Secret Service has no default collection to create the item in; create a keyring first")
            }
            guard !collection.isLocked else {
                throw LibsecretFailure(
                    stage: .createItem, kind: .locked,
                    message:
                        "the default collection \(collection.path) is locked; nothing was written")
            }
            try call.createItem(
                in: collection, attributes: attributes(forKey: write.key), label: "\(service): \(write.key)",
                secret: value)
            return .applied
        }
    }

    // MARK: Items

    /// The items of one key, the one reads use first, and — when there is none — the default
    /// collection.
    private struct KeyMatch {
        var items: [LibsecretItem]
        var defaultCollection: LibsecretCollection?
    }

    private func attributes(forKey key: String) -> [String: String] {
        ["service": service, "username": key]
    }

    /// The unlocked items holding `key`, most recently changed first.
    ///
    /// Throws `.locked` rather than returning no item when the answer could be wrong: an item
    /// matching the key is locked, or none matched and the default collection is locked (a
    /// locked collection may hide its items from a search). An existing record costs three
    /// requests in two round trips: the search, then the items' properties and (with
    /// `loadSecrets`) their secrets, sent together; only a key with no item also reads the
    /// default collection's state.
    private func find(
        _ key: String, in call: LibsecretCall, loadSecrets: Bool
    ) throws(LibsecretFailure) -> KeyMatch {
        let found = try call.search(attributes(forKey: key))
        if !found.locked.isEmpty {
            throw LibsecretFailure(
                stage: .search, kind: .locked,
                message:
                    "the keyring item holding this key is in a locked collection; unlock the keyring and try again")
        }
        // Keys are exact strings: keep only items whose `username` is the key's very bytes, in
        // case a provider matches attributes more loosely (Unicode-equivalent forms).
        let items = try call.readItems(found.unlocked, loadSecrets: loadSecrets)
            .filter { $0.username?.isExactly(key) == true }
        if items.contains(where: \.isLocked) {
            throw LibsecretFailure(
                stage: .search, kind: .locked,
                message:
                    "the keyring item holding this key was locked while it was read; unlock the keyring and try again")
        }
        guard items.isEmpty else { return KeyMatch(items: Self.newestFirst(items), defaultCollection: nil) }
        let collection = try call.defaultCollection()
        if let collection, collection.isLocked {
            throw LibsecretFailure(
                stage: .search, kind: .locked,
                message:
                    "the default collection \(collection.path) is locked, so whether the key is stored cannot be told; unlock the keyring and try again"
            )
        }
        return KeyMatch(items: [], defaultCollection: collection)
    }

    /// Every key of this service with its unlocked items, most recently changed first.
    private func findAll(
        in call: LibsecretCall, loadSecrets: Bool
    ) throws(LibsecretFailure) -> [ExactString: [LibsecretItem]] {
        let collection = try call.defaultCollection()
        if let collection, collection.isLocked {
            throw LibsecretFailure(
                stage: .search, kind: .locked,
                message:
                    "the default collection \(collection.path) is locked, so its records cannot be listed; unlock the keyring and try again"
            )
        }
        let found = try call.search(["service": service])
        let items = try call.readItems(found.unlocked, loadSecrets: loadSecrets)
        if !found.locked.isEmpty || items.contains(where: \.isLocked) {
            throw LibsecretFailure(
                stage: .search, kind: .locked,
                message:
                    "some keyring items of this service are in a locked collection; unlock the keyring and try again")
        }
        var byKey: [ExactString: [LibsecretItem]] = [:]
        for item in items {
            // Items of this service without a `username` are not records: not listed. Keys
            // are exact strings: two Unicode-equivalent usernames are two records.
            guard let key = item.username, !key.isEmpty else { continue }
            byKey[ExactString(key), default: []].append(item)
        }
        return byKey.mapValues(Self.newestFirst)
    }

    /// Most recently changed first; within the same second (the providers' resolution), the
    /// most recently created, then the later path (gnome-keyring numbers items in order).
    private static func newestFirst(_ items: [LibsecretItem]) -> [LibsecretItem] {
        items.sorted { a, b in
            if a.modified != b.modified { return a.modified > b.modified }
            if a.created != b.created { return a.created > b.created }
            return pathOrder(a.path, b.path)
        }
    }

    /// Whether `a` was probably created after `b`: numeric last components compare as
    /// numbers (`…/login/10` after `…/login/9`), anything else as text.
    private static func pathOrder(_ a: String, _ b: String) -> Bool {
        let lastA = a.split(separator: "/").last.map(String.init) ?? a
        let lastB = b.split(separator: "/").last.map(String.init) ?? b
        if let numberA = UInt64(lastA), let numberB = UInt64(lastB), a.dropLast(lastA.count) == b.dropLast(lastB.count)
        {
            return numberA > numberB
        }
        return a > b
    }

    private func secret(of item: LibsecretItem) throws(LibsecretFailure) -> Data {
        guard let data = item.secret else {
            throw LibsecretFailure(
                stage: .readSecret, kind: .other,
                message:
                    "the Secret Service returned no secret for the unlocked item \(item.path)")
        }
        return data
    }

    // MARK: Plumbing

    /// Runs `body` on this store's connection under a new deadline of ``timeout``; failures
    /// become ``KeepsakeError``s naming the store and `key`.
    private func converse<T>(
        key: String?, _ body: (LibsecretCall) throws(LibsecretFailure) -> T
    ) throws(KeepsakeError) -> T {
        do throws(LibsecretFailure) {
            return try channel.call(timeout: timeout, body)
        } catch {
            let failure = error.keepsakeError(store: uri, key: key, timeout: timeout)
            Log.keyring.failed(failure, timeout: timeout)
            throw failure
        }
    }
}
