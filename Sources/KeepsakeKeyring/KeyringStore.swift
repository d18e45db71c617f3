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
/// The Secret Service has no transactions, so Keepsake serialises its own writers of a
/// service: a write holds a lock from its search for the key's items through the write and its
/// read-back, which makes a write's expectation (`StoreWrite.Expectation.unchanged(_:)`) and
/// the write itself one step among Keepsake writers — threads of one process and other
/// processes on the same session bus alike. In a process, writers wait for each other on a gate
/// per service; across processes, on an exclusive `flock` of an empty lock file in
/// the user's lock directory — `$XDG_RUNTIME_DIR/keepsake/`, else `~/.cache/keepsake/locks/`,
/// else `/tmp/keepsake-<uid>/`: the first that is a directory private to this user (made with
/// mode 0700; another user's directory or a symbolic link is passed over), the one the move
/// lock uses too — named
/// `keyring-<hash>.lock` after the session bus address and the service, so that separate
/// buses (private test keyrings) never wait for each other. The kernel releases a `flock` when
/// the process holding it exits or dies, so a crashed writer never blocks anyone. Waiting for
/// the lock is part of the call's deadline: a writer that does not get it in time throws
/// `.lockTimeout` and writes nothing. Reads take no lock: they see the old or the new record.
/// `Vault.update` reads, changes and writes its record under the same lock
/// (``exclusiveUpdate(forKey:_:)``): Keepsake writers of the service take turns.
/// Other clients (`secret-tool`, Python `keyring`, an older Keepsake) do not take the lock.
///
/// Every write of a record is read back and compared, byte for byte, with what was written.
/// Some providers rewrite secrets as they return them (KeePassXC expands placeholders such as
/// `{TITLE}`, `{URL}`, `{S:attr}` and `{PASSWORD}`): then the write is undone — the previous
/// record is put back, or the new item is deleted when the key had none — and it throws
/// `.verificationFailed` saying what differed. As no other Keepsake writer can run meanwhile, a
/// difference comes from the provider or from another client: the record is read a second time
/// and, when that gives the same bytes, written and read once more, and only a provider that
/// returns the same altered bytes every time gets the write undone. When the read-backs differ
/// or the item is gone, another client wrote or deleted it after this write, which was applied
/// and is not undone (the undo never removes or rolls back another writer's value). A write
/// over an existing item sends the read-back (the item's `GetSecret`) right behind the write
/// (its `SetSecret`), in the same round trip; as a provider could answer it before it applied
/// the write, a read-back that differs decides nothing until the record is read again on its
/// own. A new item costs one more round trip (its path is known once it is created), and a
/// difference up to four; the previous record is read in the round trip that already reads the
/// item's properties. The previous record put back is the secret the provider returned for it.
///
/// An item another client deletes between the search that found it and a request about it is
/// searched for again within the call (a few times), never reported as an I/O failure.
///
/// ## Honest answers
/// - A lookup in a locked collection returns nothing from libsecret. This store checks the
///   lock state: a key is reported absent only when the default collection is unlocked and
///   no item, locked or not, matches; otherwise the call throws `.locked`.
/// - No session bus, or no Secret Service provider on it: `.unavailable`, with libsecret's
///   GError kept as the cause (`KeepsakeError.Cause.library`).
/// - Every call has a deadline (``timeout``): a provider that does not answer gives
///   `.timeout` on time, not after D-Bus's own 25–50 s.
/// - Nothing here unlocks anything or creates a collection, so no unlock dialog is ever asked
///   for. A provider that asks for a prompt to create or delete an item in an unlocked
///   collection (KeePassXC does for every new item) gets it run within the call's deadline:
///   one still open then — a confirmation nobody answers — is dismissed and the call throws
///   `.timeout`; one the provider dismisses (access refused) throws `.locked`.
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

    #if DEBUG
    /// For tests only (debug builds): applied to what a write reads back before it is compared
    /// with what was written, to act as a provider that rewrites secrets (gnome-keyring never does).
    var readBackTransform: (@Sendable (Data) -> Data)?

    /// For tests only (debug builds): called with an item's path when its secret arrives with its properties;
    /// `true` treats that answer as holding no secret, to act as a provider that sometimes
    /// answers without one (gnome-keyring leaves out the secrets of locked items).
    var dropsSecretFromAnswer: (@Sendable (String) -> Bool)?

    /// For tests only (debug builds): called with an item's path when its secret is taken from an answer;
    /// `true` treats the secret as one this session's key cannot decrypt, as on a KWallet
    /// session whose key the provider derived differently (``LibsecretCall/undecodable(_:)``).
    var undecodableSecret: (@Sendable (String) -> Bool)?
    #endif

    /// `back` as the tests' `readBackTransform` changes it; `back` itself in release builds.
    private func hooked(readBack back: Data) -> Data {
        #if DEBUG
        return readBackTransform.map { $0(back) } ?? back
        #else
        return back
        #endif
    }

    /// Whether the tests' hooks make `path`'s secret undecodable (`undecodable`) or absent
    /// from an answer (`dropped`); neither in release builds.
    private func hooked(secretOf path: String) -> (undecodable: Bool, dropped: Bool) {
        #if DEBUG
        return (undecodableSecret?(path) == true, dropsSecretFromAnswer?(path) == true)
        #else
        return (false, false)
        #endif
    }

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
    /// A read takes no lock, except when the item's secret is empty: then it is read again
    /// with the service's write lock held (KWallet lists an item another process is writing
    /// before it holds its secret), and returned empty only if it is still empty then.
    ///
    /// - Throws: `KeepsakeError` naming this store and `key`: `.invalidArgument` (empty key,
    ///   or one with NUL), `.locked`, `.unavailable`, `.timeout`, `.io`; `.lockTimeout` when
    ///   an empty item was read and another Keepsake writer held the lock until the deadline.
    ///   Never `nil` for these.
    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        let deadline = ContinuousClock.now + timeout
        let data = try converse(key: key) { call throws(LibsecretFailure) in try read(key, in: call) }
        guard let data, data.isEmpty else { return data }
        return try settledEmpty(key, until: deadline)
    }

    /// The record under `key` read again after it was read empty: KWallet lists an item that
    /// another process is writing before it holds its secret. A Keepsake writer holds the
    /// service's write lock until it has read its record back, so the record is read again
    /// with the lock held, and while it is still empty, twice more over 150 ms (another client
    /// takes no lock). An item that stays empty is returned as it is: empty.
    private func settledEmpty(_ key: String, until deadline: ContinuousClock.Instant) throws(KeepsakeError) -> Data? {
        try KeyringWriteLock.holding(service: service, until: deadline, store: uri, key: key) {
            () throws(KeepsakeError) -> Data? in
            var rereads = 0
            while true {
                rereads += 1
                let data = try converse(key: key, within: try remaining(until: deadline, key: key)) {
                    call throws(LibsecretFailure) in try read(key, in: call)
                }
                guard let data, data.isEmpty, rereads < 3 else { return data }
                usleep(UInt32(50_000 * rereads))
            }
        }
    }

    /// The record under `key` as ``data(forKey:)`` reads it, on `call`.
    private func read(_ key: String, in call: LibsecretCall) throws(LibsecretFailure) -> Data? {
        var reads = 1
        while true {
            let match = try find(key, in: call, loadSecrets: true)
            guard let item = match.items.first else { return nil }
            do throws(LibsecretFailure) {
                return try secret(of: item, in: call)
            } catch  where error.isVanishedObject && reads < Self.searchesForVanishedItems && !call.deadline.expired {
                // Deleted between its properties and a second request for its secret.
                reads += 1
            }
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
                result.append((key.value, try secret(of: item, in: call)))
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
    /// Each write holds the service's write lock (see "Writes" above) from its search through
    /// its read-back, so its expectation is checked and its write made with no other Keepsake
    /// writer in between, in this process or another.
    ///
    /// - Throws: `KeepsakeError` `.invalidArgument` for a bad key (before anything is
    ///   contacted), or the failure of the first write when no write was applied before it:
    ///   `.lockTimeout` when another Keepsake writer held the lock until the deadline;
    ///   `.verificationFailed` when the provider returned the record written altered (the
    ///   write was undone).
    /// - Important: If this throws, no write of the batch was applied, and no other writer's
    ///   value was removed or rolled back — except that after a `.timeout` the failing write's
    ///   key holds either its old or its new record (the provider may apply a request after the
    ///   deadline), never none, and that after a `.verificationFailed` whose message says
    ///   undoing the write failed or the write was not undone, the key holds the new record as
    ///   the provider keeps it. A `.lockTimeout` wrote nothing. A failure after a write
    ///   was applied is reported as `StoreWriteResult.failed(_:)` for that write; after a
    ///   `.locked`, `.unavailable` or `.timeout` the remaining writes are not tried and are
    ///   reported failed with the same error. Other clients do not take Keepsake's lock: one
    ///   that writes the key between a write's check and its write is not seen by the check.
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

    /// What one write did: applied or skipped, or written and then undone because the provider
    /// returned something else when it was read back (the sentence says what and what was undone).
    private enum WriteOutcome {
        case done(StoreWriteResult)
        case altered(String)
        /// Refused before anything was written: a value this provider cannot hold.
        case refused(String)
    }

    private func apply(_ write: StoreWrite) throws(KeepsakeError) -> StoreWriteResult {
        // One deadline for the wait for the lock and the conversation: the lock is held from the
        // search for the key's items through the write and its read-back, so that no other
        // Keepsake writer, in this process or another, runs between them.
        let deadline = ContinuousClock.now + timeout
        // Watchers (``changes()``) are told whatever came of the write: gnome-keyring signals
        // nothing when a secret is replaced in place, and an extra hint is harmless.
        defer { KeyringSignals.announce(service: service, key: write.key, timeout: min(timeout, .seconds(1))) }
        return try KeyringWriteLock.holding(service: service, until: deadline, store: uri, key: write.key) {
            () throws(KeepsakeError) -> StoreWriteResult in
            try applyHeld(write, within: try remaining(until: deadline, key: write.key))
        }
    }

    /// The rest of the call's time until `deadline`, once the write lock is taken; `lockTimeout`
    /// when none is left, as the lock was taken only at the deadline.
    private func remaining(until deadline: ContinuousClock.Instant, key: String) throws(KeepsakeError) -> Duration {
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else {
            throw KeepsakeError(
                .lockTimeout, store: uri, key: key,
                "the keyring write lock was taken only at the call's deadline of \(timeout); nothing was written")
        }
        return remaining
    }

    /// One write, made with the service's write lock held, within the `remaining` time of its call.
    private func applyHeld(_ write: StoreWrite, within remaining: Duration) throws(KeepsakeError) -> StoreWriteResult {
        let outcome = try converse(key: write.key, within: remaining) {
            call throws(LibsecretFailure) -> WriteOutcome in
            // An item another client deleted between the search and the write: the write
            // runs again from a new search. Nothing of this write was applied yet (a
            // failure after its write is handled where it happens).
            var attempts = 1
            while true {
                do throws(LibsecretFailure) {
                    return try attempt(write, in: call)
                } catch
                    where error.isVanishedObject && attempts < Self.searchesForVanishedItems
                    && !call.deadline.expired
                {
                    Log.keyring.debug("an item of the key vanished during a write; searching again")
                    attempts += 1
                }
            }
        }
        switch outcome {
        case let .done(result): return result
        case let .altered(reason):
            let failure = KeepsakeError(.verificationFailed, store: uri, key: write.key, reason)
            Log.keyring.failed(failure, timeout: timeout)
            throw failure
        case let .refused(reason):
            let failure = KeepsakeError(.valueRefused, store: uri, key: write.key, reason)
            Log.keyring.failed(failure, timeout: timeout)
            throw failure
        }
    }

    /// One run of `write` on `call`, under the write lock.
    private func attempt(_ write: StoreWrite, in call: LibsecretCall) throws(LibsecretFailure) -> WriteOutcome {
        // KeePassXC would return this record with its placeholders expanded (and {PASSWORD}
        // recursively, past any deadline): refused before anything is written. Who the
        // provider is is asked only when the record holds one.
        if let value = write.value, let placeholder = KeePassXCPlaceholders.first(in: value) {
            let provider = KeyringProvider.identify(processID: try call.providerProcessID())
            if provider.kind == .keePassXC {
                return .refused(
                    """
                    the provider, \(provider), expands placeholders in the secrets it returns, and this \
                    record holds \(placeholder.token) at byte \(placeholder.offset): it would read back \
                    different, so nothing was written; store it in another store (a file or defaults store), \
                    or keep KeePassXC's placeholders ({TITLE}, {URL}, {S:…}, {PASSWORD}…) out of it
                    """)
            }
        }
        let needsCurrent = write.expectation != .anything
        // A value write also reads the current secret (sent with the properties, no extra
        // round trip), so that it can be put back if the provider alters the new one.
        let match = try find(write.key, in: call, loadSecrets: needsCurrent || write.value != nil)
        if needsCurrent {
            var current = try match.items.first.map { item throws(LibsecretFailure) in
                try secret(of: item, in: call)
            }
            if call.isRetry {
                // The first run's request was refused on a stale session, perhaps after it
                // was applied: a `CreateItem` KWallet refused left its item with an empty
                // secret (no record is ever empty), and a write whose read-back could not
                // be decrypted was applied.
                if current?.isEmpty == true { current = nil }
                if let value = write.value, current == value { return .done(.applied) }
            }
            guard write.expects(current) else { return .done(.conflict) }
        }
        guard let value = write.value else {
            guard !match.items.isEmpty else { return .done(.applied) }
            // KWallet reports a closed wallet's items unlocked, and deleting one then drops
            // its secret and keeps the item: the collection is checked first (two requests,
            // on removals only).
            if let collection = try call.defaultCollection(), collection.isLocked {
                throw LibsecretFailure(
                    stage: .deleteItem, kind: .locked,
                    message:
                        "the default collection \(collection.path) is locked; nothing was deleted; unlock the keyring and try again"
                )
            }
            // Oldest first: if a delete fails midway, the item reads use is still there and
            // the key still reads as it did.
            for item in match.items.reversed() { try call.delete(item) }
            return .done(.applied)
        }
        if let target = match.items.first {
            // The read-back is sent right behind the write, in the same round trip.
            let back = try call.setSecretReadingBack(value, at: target.path)
            switch try readBack(value, at: target.path, sentWithWrite: back, in: call) {
            case .same:
                break
            case .superseded:
                return .done(.applied)
            case let .kept(difference):
                return .altered(difference)
            case let .altered(difference):
                return .altered(
                    undo(difference) { () throws(LibsecretFailure) in
                        guard let previous = target.secret else {
                            return
                                "the previous record could not be read before the write, so the item keeps the new one"
                        }
                        try call.setSecret(previous, on: target)
                        return "the previous record was put back"
                    })
            }
            // The new record is stored; now make it the only one. A failure here leaves an
            // older duplicate that reads never choose (the target is now the most recent)
            // and the next write removes: the write itself has been applied.
            for duplicate in match.items.dropFirst() {
                do throws(LibsecretFailure) { try call.delete(duplicate) } catch { break }
            }
            return .done(.applied)
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
        let created = try call.createItem(
            in: collection, attributes: attributes(forKey: write.key), label: "\(service): \(write.key)",
            secret: value)
        switch try readBack(value, at: created, in: call) {
        case .same, .superseded:
            break
        case let .kept(difference):
            return .altered(difference)
        case let .altered(difference):
            return .altered(
                undo(difference) { () throws(LibsecretFailure) in
                    try call.delete(
                        LibsecretItem(
                            path: created, username: write.key, isLocked: false, modified: 0, created: 0,
                            secret: nil))
                    return "the new item was deleted, so the key holds no record, as before"
                })
        }
        return .done(.applied)
    }

    /// What a write's read-back found.
    private enum ReadBack {
        /// The very bytes written.
        case same
        /// Another client changed or removed the item after this write (two read-backs
        /// differed, or the item is gone): the write was applied, and is not undone — that
        /// would remove or roll back the other client's value.
        case superseded
        /// The provider returns the record altered, the same way every time, or could not
        /// return it: the write is undone.
        case altered(String)
        /// The record read back differed, and could not be read a second time to tell an
        /// altering provider from another writer: not undone, reported as this sentence.
        case kept(String)
    }

    /// Reads the secret at `path` back (one `Item.GetSecret` round trip), or takes what the
    /// read-back sent with the write got (`sentWithWrite`, from
    /// ``LibsecretCall/setSecretReadingBack(_:at:)``), and compares it with `written`. A deadline
    /// that expires here is thrown as it is (the key then holds its new record, as after any
    /// timeout); a failure to read back is ``ReadBack/altered(_:)``, so that the write is undone,
    /// unless the item is gone (``ReadBack/superseded``).
    ///
    /// Other Keepsake writers wait for the write lock this write holds, so a difference comes
    /// from the provider or from another client. The record is read once more, and when that
    /// gives the same bytes, written once more and read back: a provider that rewrites secrets
    /// (KeePassXC expands placeholders) returns the same altered bytes every time; a client that
    /// wrote the item meanwhile leaves other bytes, or changes them again, or has its one write
    /// replaced by this record. Only the first is ``ReadBack/altered(_:)``.
    ///
    /// A read-back sent with the write decides nothing on its own unless it is the record
    /// written: the provider might have answered it before it applied the write. One that
    /// failed is replaced by a read of its own; one that differs is read again on its own (the
    /// second read above), and when that gives the record written, the write is ``ReadBack/same``.
    private func readBack(
        _ written: Data, at path: String, sentWithWrite: Result<Data, LibsecretFailure>? = nil,
        in call: LibsecretCall
    ) throws(LibsecretFailure) -> ReadBack {
        let first: Data
        do throws(LibsecretFailure) {
            switch sentWithWrite {
            case let .success(back)?:
                first = hooked(readBack: back)
            case let .failure(error)? where error.kind == .timedOut || error.isStaleLink || error.isVanishedObject:
                throw error
            case .failure?, nil:
                first = try readBackOnce(at: path, in: call)
            }
        } catch {
            return try settle(error, deleted: "before") {
                .altered("the written record could not be read back (\($0.message))")
            }
        }
        guard first != written else { return .same }
        /// The write kept because `step` ("read a second time"), which would tell whether another
        /// client changed the item, failed with `error`.
        func kept(_ step: String, _ error: LibsecretFailure) -> ReadBack {
            .kept(
                "\(describe(written: written, back: first, in: call)); it could not be \(step) "
                    + "(\(error.message)) to tell whether another client changed it, so the write was not undone")
        }
        let second: Data
        do throws(LibsecretFailure) {
            second = try readBackOnce(at: path, in: call)
        } catch {
            return try settle(error, deleted: "after") { kept("read a second time", $0) }
        }
        if sentWithWrite != nil, second == written {
            // The provider answered the read-back sent with the write before it applied the write
            // (or another client wrote the item and then this record again): the item holds it.
            Log.keyring.notice("the read-back sent with the write did not see it; read again on its own, it did")
            return .same
        }
        guard second == first else {
            Log.keyring.notice("the item written was changed by another client while it was read back; not undone")
            return .superseded
        }
        // The same bytes twice: the provider's doing, or one write by another client just before
        // the first read-back. Written once more and read back: a provider that rewrites secrets
        // returns the same altered bytes again; after another client's one write, the item now
        // holds this record — a write later than theirs — and nothing is undone.
        let third: Data
        do throws(LibsecretFailure) {
            try call.setSecret(
                written,
                on: LibsecretItem(path: path, username: nil, isLocked: false, modified: 0, created: 0, secret: nil))
            third = try readBackOnce(at: path, in: call)
        } catch {
            return try settle(error, deleted: "after") { kept("written and read again", $0) }
        }
        if third == written {
            Log.keyring.notice("another client wrote the item between this write and its read-back; written again")
            return .same
        }
        guard third == first else {
            Log.keyring.notice("the item written was changed by another client while it was read back; not undone")
            return .superseded
        }
        return .altered(describe(written: written, back: first, in: call))
    }

    /// What a failed step of ``readBack(_:at:sentWithWrite:in:)`` makes of the write: a timeout
    /// or a stale session is thrown (the call runs again on a new session, and writes again); an
    /// item another client deleted `when` ("before", "after") it was read back is
    /// ``ReadBack/superseded``; any other failure is what `otherwise` makes of it.
    private func settle(
        _ error: LibsecretFailure, deleted when: String, otherwise: (LibsecretFailure) -> ReadBack
    ) throws(LibsecretFailure) -> ReadBack {
        if error.kind == .timedOut || error.isStaleLink { throw error }
        if error.isVanishedObject {
            Log.keyring.notice("the item written was deleted by another client \(when) it was read back")
            return .superseded
        }
        return otherwise(error)
    }

    private func readBackOnce(at path: String, in call: LibsecretCall) throws(LibsecretFailure) -> Data {
        let back = try call.readSecret(at: path)
        return hooked(readBack: back)
    }

    /// How `back` differs from `written`, naming the provider.
    private func describe(written: Data, back: Data, in call: LibsecretCall) -> String {
        let offset = zip(back, written).prefix { $0 == $1 }.count
        // Only on this rare path: one more request, to the bus daemon, and a few /proc reads.
        let provider: String
        do throws(LibsecretFailure) {
            provider = "the provider, \(KeyringProvider.identify(processID: try call.providerProcessID())),"
        } catch {
            provider = "the provider (not identified: \(error.message))"
        }
        return "\(provider) returned a different secret when the written record was read back, the same each time "
            + "it was read and when it was written and read again "
            + "(\(written.count) bytes written, \(back.count) returned, first difference at byte \(offset)); "
            + "KeePassXC, for one, expands placeholders such as {TITLE}, {URL}, {S:attr} and {PASSWORD} in the secrets it returns"
    }

    /// `difference`, then what `restore` did, or why it failed.
    private func undo(
        _ difference: String, _ restore: () throws(LibsecretFailure) -> String
    ) -> String {
        do throws(LibsecretFailure) {
            return "\(difference); \(try restore())"
        } catch {
            return "\(difference); undoing the write failed too (\(error.message)), so the item keeps the new record"
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
        // An item another client deleted between the search and the reading of its properties
        // (reads take no lock, and other clients none at all): searched again, within the call.
        var searches = 1
        while true {
            do throws(LibsecretFailure) {
                return try findOnce(key, in: call, loadSecrets: loadSecrets)
            } catch  where error.isVanishedObject && searches < Self.searchesForVanishedItems && !call.deadline.expired
            {
                Log.keyring.debug("an item of the key vanished while it was read; searching again")
                searches += 1
            }
        }
    }

    /// How many times one call searches a key's items when one vanishes while it is read.
    private static let searchesForVanishedItems = 5

    private func findOnce(
        _ key: String, in call: LibsecretCall, loadSecrets: Bool
    ) throws(LibsecretFailure) -> KeyMatch {
        let found = try call.search(attributes(forKey: key))
        if !found.locked.isEmpty {
            if let collection = try call.defaultCollection(), !collection.isLocked {
                // Locked for this program alone: KeePassXC's per-program access confirmation.
                throw LibsecretFailure(
                    stage: .search, kind: .locked,
                    message: """
                        the keyring item holding this key is locked for this program while its collection is \
                        unlocked: the provider wants the user to confirm access to it (KeePassXC: "Confirm when \
                        passwords are retrieved by clients"), a prompt Keepsake never answers; allow access in \
                        the provider, or turn that setting off
                        """)
            }
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
        var searches = 1
        while true {
            do throws(LibsecretFailure) {
                return try findAllOnce(in: call, loadSecrets: loadSecrets)
            } catch  where error.isVanishedObject && searches < Self.searchesForVanishedItems && !call.deadline.expired
            {
                Log.keyring.debug("an item of the service vanished while it was read; searching again")
                searches += 1
            }
        }
    }

    private func findAllOnce(
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

    /// The secret of `item` as read with its properties. An answer that left it out is asked
    /// again, once, with `Item.GetSecret` in the same call.
    ///
    /// - Throws: `.locked` when the provider says the item is locked; a stale-link failure when
    ///   the secret cannot be decrypted with the session (the call then runs again on a new one).
    private func secret(of item: LibsecretItem, in call: LibsecretCall) throws(LibsecretFailure) -> Data {
        let hooks = hooked(secretOf: item.path)
        if hooks.undecodable { throw LibsecretCall.undecodable(item.path) }
        if let data = item.secret, !hooks.dropped { return data }
        Log.keyring.debug("no secret in the answer for \(item.path); asking again")
        return try call.readSecret(at: item.path)
    }

    // MARK: Plumbing

    /// Runs `body` on this store's connection under a new deadline of `remaining` (``timeout``
    /// when not given); failures become ``KeepsakeError``s naming the store and `key`.
    private func converse<T>(
        key: String?, within remaining: Duration? = nil, _ body: (LibsecretCall) throws(LibsecretFailure) -> T
    ) throws(KeepsakeError) -> T {
        do throws(LibsecretFailure) {
            return try channel.call(timeout: remaining ?? timeout, body)
        } catch {
            let failure = error.keepsakeError(store: uri, key: key, timeout: timeout)
            Log.keyring.failed(failure, timeout: timeout)
            throw failure
        }
    }
}

extension KeyringStore: ExclusiveUpdateStore {
    /// Reads the record under `key`, passes it to `change` and stores what it returns, all under
    /// the service's write lock (see "Writes" above) that every Keepsake writer of the service
    /// holds — threads of this process and processes on the same session bus — so that
    /// `Vault.update` on the keyring never meets `conflict` because of another Keepsake writer:
    /// writers take turns, and each change runs once.
    ///
    /// The lock covers the whole service, every key of it, not only `key`: while `change` runs,
    /// every other Keepsake writer of the service waits. So `change` must be short and must not
    /// write to this service at all, under any key: a write from inside it waits for the lock
    /// this update holds until its deadline, then throws `lockTimeout` (and the update with it).
    /// Reads take no lock; one from inside `change` sees the record as it was before this update.
    ///
    /// One deadline (``timeout``) covers the wait for the lock, the read, `change` and the write.
    /// The read is ``data(forKey:)``'s; the write is ``commit(_:)``'s — read back and compared,
    /// undone if the provider returns it altered — with the record `change` was given as its
    /// expectation: other clients (`secret-tool`, Python `keyring`) take no lock, and when one
    /// wrote the key between the read and the write, nothing is written and, with the lock still
    /// held, the record is read again and `change` runs again on what that client stored (up to
    /// 4 runs in all).
    ///
    /// - Throws: What `change` throws, with nothing written and the lock released;
    ///   `lockTimeout` when another Keepsake writer held the lock until the deadline; `timeout`
    ///   when the deadline passed while `change` ran (nothing written); `conflict` when other
    ///   clients wrote the key during each run; and what ``commit(_:)`` throws for its one write
    ///   (`.verificationFailed`, `.valueRefused`, `.locked`, `.unavailable`, `.timeout`).
    /// - Important: As for ``commit(_:)``: if this throws, nothing was written — except that
    ///   after a `.timeout` of the write the key holds its old or its new record, and after a
    ///   `.verificationFailed` whose message says the write was not undone, the new record.
    public func exclusiveUpdate(
        forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data
    ) throws(KeepsakeError) {
        try validateKey(key)
        let deadline = ContinuousClock.now + timeout
        var wrote = false
        // Watchers are told of a write as after any (``apply(_:)``); an update that wrote nothing is no news.
        defer {
            if wrote { KeyringSignals.announce(service: service, key: key, timeout: min(timeout, .seconds(1))) }
        }
        var runs = 0
        let result = try KeyringWriteLock.holding(service: service, until: deadline, store: uri, key: key) {
            () throws(KeepsakeError) -> StoreWriteResult in
            while true {
                runs += 1
                let current = try converse(key: key, within: try remaining(until: deadline, key: key)) {
                    call throws(LibsecretFailure) in try read(key, in: call)
                }
                let value = try change(current)
                let remaining = ContinuousClock.now.duration(to: deadline)
                guard remaining > .zero else {
                    throw KeepsakeError(
                        .timeout, store: uri, key: key,
                        "the call's deadline of \(timeout) passed while the update's change ran; nothing was written")
                }
                wrote = true
                let write = StoreWrite(key: key, value: value, expectation: .unchanged(current))
                let result = try applyHeld(write, within: remaining)
                // Another client (they take no lock) wrote the key after the read: nothing was
                // written; the change runs again on what it stored.
                guard result == .conflict, runs < Self.updateRuns else { return result }
                Log.keyring.notice("another client wrote the record during an update; its change runs again")
            }
        }
        switch result {
        case .applied: return
        case let .failed(error): throw error
        case .conflict:
            throw KeepsakeError(
                .conflict, store: uri, key: key,
                """
                other clients, which do not take Keepsake's write lock (secret-tool, Python keyring…), changed \
                the record during each of \(runs) runs of this update's change; nothing was written by this update
                """)
        }
    }

    /// How many times one update runs its change when other clients write the key meanwhile.
    private static let updateRuns = 4
}
