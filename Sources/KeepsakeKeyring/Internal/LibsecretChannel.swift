internal import CLibsecret
import Dispatch
import Foundation
import Synchronization

// Every libsecret and GLib call of KeepsakeKeyring is in this folder (`Internal/`, with the C
// helpers in `Sources/CLibsecret/shim.h`). The rest of the module sees Swift values only:
// `Data`, `String`, `LibsecretFailure`.

/// The secret session of one store instance (and of its copies), opened on its first call and
/// reused by every later one, on the process's session-bus connection.
///
/// Every request is addressed to the unique bus name of the daemon the session was opened
/// with, never to the well-known `org.freedesktop.secrets`: a daemon that replaced it (a
/// restart) is never shown a session it did not open. When that daemon is gone, the first
/// request gets "the name has no owner"; ``call(timeout:_:)`` then opens a new session with
/// the daemon that owns the name now and runs the call again, within the same deadline (up to
/// ``maximumReopenings`` new sessions a call).
/// A session the daemon closed (`org.freedesktop.Secret.Error.NoSession`), a session whose key
/// does not match the daemon's (KWallet, ``LibsecretCall/undecodable(_:)``) and a closed
/// connection are replaced the same way. Only a call whose request was refused is run again:
/// a refused `CreateItem` may still have left an item without a secret on KWallet, which the
/// second run (``LibsecretCall/isRetry``) writes into.
///
/// Calls from several threads may run at once: the GDBus connection is thread-safe, and the
/// session's key is only read after it is opened.
final class LibsecretChannel: Sendable {
    private let current = Mutex<LibsecretLink?>(nil)

    init() {}

    /// Runs `body` under a new deadline of `timeout`, on this channel's link (opened first if
    /// there is none). Every D-Bus round trip of `body`, and opening the link, share the deadline.
    func call<T>(timeout: Duration, _ body: (LibsecretCall) throws(LibsecretFailure) -> T) throws(LibsecretFailure) -> T
    {
        let deadline = LibsecretDeadline(timeout: timeout)
        defer { deadline.finish() }
        var reopenings = 0
        while true {
            var used: LibsecretLink?
            do throws(LibsecretFailure) {
                let link = try self.link(deadline)
                used = link
                return try body(LibsecretCall(link: link, deadline: deadline, isRetry: reopenings > 0))
            } catch {
                guard reopenings < Self.maximumReopenings, error.isStaleLink || used?.isClosed == true else {
                    throw error
                }
                reopenings += 1
                if let used { current.withLock { if $0 === used { $0 = nil } } }
            }
        }
    }

    /// How many new sessions one call opens, one after another, when the one it ran on turned
    /// out stale.
    ///
    /// One would do for a restarted daemon; the rest are for KWallet, which derives another key
    /// for about one session in 256 (``LibsecretCall/undecodable(_:)``), independently each time.
    /// A test run of the keyring target opens about a thousand sessions, so with a single new
    /// session a run met two mismatched sessions in a row now and then (a CI run did); with four,
    /// a call fails that way about once in 256⁴ stale calls. Each new session costs one
    /// `OpenSession` round trip, and all of them share the call's deadline.
    static let maximumReopenings = 4

    private func link(_ deadline: LibsecretDeadline) throws(LibsecretFailure) -> LibsecretLink {
        try current.withLock { (link: inout LibsecretLink?) throws(LibsecretFailure) -> LibsecretLink in
            if let open = link, !open.isClosed {
                open.drain()
                return open
            }
            // KWallet refuses about one opening in 256 (libsecret's random public key is then
            // shorter than the 128 bytes it wants): nothing was sent yet, so up to two more.
            var refused = 0
            while true {
                do throws(LibsecretFailure) {
                    let opened = try LibsecretLink(deadline: deadline)
                    link = opened
                    return opened
                } catch  where error.isRefusedPublicKey && refused < 2 && !deadline.expired {
                    refused += 1
                }
            }
        }
    }
}

/// A SecretService proxy with an open session, its connection, and the unique bus name of the
/// daemon that holds the session.
final class LibsecretLink: @unchecked Sendable {
    // @unchecked: the pointers and the name never change after init. The GDBus connection is
    // thread-safe; the service is used only to encode and decode secrets with the session's
    // key, which is read-only once the session is open; the context is drained under the
    // channel's lock only.
    fileprivate let bus: OpaquePointer
    fileprivate let service: OpaquePointer
    /// The daemon's unique name (`:1.42`): every request goes there.
    fileprivate let owner: String
    private let context: OpaquePointer

    /// Opens the Secret Service and a session within `deadline`.
    ///
    /// - Throws: ``LibsecretFailure`` at stage `.connectBus` (no bus) or `.openService` (no
    ///   provider, hung provider).
    init(deadline: LibsecretDeadline) throws(LibsecretFailure) {
        _ = secret_error_get_quark()  // registers libsecret's D-Bus error names (IsLocked, …)
        var error: UnsafeMutablePointer<GError>?
        // g_bus_get_sync apart from opening the service, so that "no bus" and "no provider"
        // are told apart. The reference is dropped: the service keeps its own.
        guard let shared = g_bus_get_sync(G_BUS_TYPE_SESSION, deadline.cancellable, &error) else {
            throw LibsecretFailure(stage: .connectBus, error: error, deadlineExpired: deadline.expired)
        }
        g_object_unref(UnsafeMutableRawPointer(shared))
        let context = g_main_context_new()!
        var owner: UnsafeMutablePointer<gchar>?
        guard let service = keepsake_service_open(context, deadline.cancellable, &owner, &error) else {
            g_main_context_unref(context)
            throw LibsecretFailure(stage: .openService, error: error, deadlineExpired: deadline.expired)
        }
        guard let owner else {
            // The provider was started by this very request (D-Bus activation) and the proxy did
            // not learn its name: open again, now that it runs.
            g_object_unref(UnsafeMutableRawPointer(service))
            g_main_context_unref(context)
            throw LibsecretFailure(
                stage: .openService, kind: .other,
                message:
                    "the Secret Service was just started and its bus name is not known yet; try again",
                isStaleLink: true)
        }
        self.owner = String(cString: owner)
        g_free(owner)
        self.bus = keepsake_service_bus(service)
        self.service = service
        self.context = context
    }

    deinit {
        g_object_unref(UnsafeMutableRawPointer(service))
        g_object_unref(UnsafeMutableRawPointer(bus))
        drain()
        g_main_context_unref(context)
    }

    var isClosed: Bool { g_dbus_connection_is_closed(bus) != 0 }

    /// Dispatches the proxy's pending signals, so that none pile up in a long-lived process.
    func drain() { keepsake_drain(context) }
}

/// An item's properties, and its secret when it was asked for and could be read.
struct LibsecretItem {
    /// The item's D-Bus object path: stable identity within one daemon run.
    var path: String
    /// The `username` attribute, or `nil` when the item has none.
    var username: String?
    var isLocked: Bool
    /// Seconds since 1970 of the item's last change.
    var modified: UInt64
    /// Seconds since 1970 of the item's creation.
    var created: UInt64
    var secret: Data?
}

/// The collection behind the `default` alias.
struct LibsecretCollection {
    /// The collection's D-Bus object path.
    var path: String
    /// Whether it is locked (its items' secrets cannot be read or written).
    var isLocked: Bool
}

/// One store call's requests on a link, under the call's deadline. Every request is one D-Bus
/// round trip (``readItems(_:loadSecrets:)`` and ``setSecretReadingBack(_:at:)`` send their
/// requests together and wait once).
struct LibsecretCall {
    let link: LibsecretLink
    let deadline: LibsecretDeadline
    /// Whether this is a later run of the call, on a new session, after an earlier one failed
    /// with a stale link. An earlier run may have been applied partly: KWallet adds an item
    /// before it decrypts the secret of a `CreateItem`, and keeps it, without a secret, when
    /// the decryption fails.
    let isRetry: Bool

    private var bus: OpaquePointer { link.bus }
    private var cancellable: OpaquePointer { deadline.cancellable }

    private func failure(_ stage: LibsecretFailure.Stage, _ error: UnsafeMutablePointer<GError>?) -> LibsecretFailure {
        LibsecretFailure(stage: stage, error: error, deadlineExpired: deadline.expired)
    }

    /// The collection behind the `default` alias and its lock state (two round trips), or `nil`
    /// when no collection has that alias.
    func defaultCollection() throws(LibsecretFailure) -> LibsecretCollection? {
        var error: UnsafeMutablePointer<GError>?
        guard let raw = keepsake_read_alias(bus, link.owner, "default", cancellable, &error) else {
            if let error { throw failure(.readAlias, error) }
            return nil
        }
        let path = String(cString: raw)
        g_free(raw)
        let locked = keepsake_collection_locked(bus, link.owner, path, cancellable, &error)
        if locked < 0 { throw failure(.readAlias, error) }
        return LibsecretCollection(path: path, isLocked: locked != 0)
    }

    /// The paths of the unlocked and the locked items, in any collection, whose attributes
    /// include `attributes`; `xdg:schema` is not matched, so items other clients wrote are found.
    func search(_ attributes: [String: String]) throws(LibsecretFailure) -> (unlocked: [String], locked: [String]) {
        let table = LibsecretAttributes.table(attributes)
        defer { g_hash_table_unref(table) }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var error: UnsafeMutablePointer<GError>?
        guard keepsake_search(bus, link.owner, table, cancellable, &unlocked, &locked, &error) != 0 else {
            throw failure(.search, error)
        }
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
        }
        return (Self.strings(unlocked), Self.strings(locked))
    }

    /// The properties of the items at `paths` and, with `loadSecrets`, their secrets, in one
    /// round trip (every request sent before any answer is awaited). Never unlocks anything.
    func readItems(_ paths: [String], loadSecrets: Bool) throws(LibsecretFailure) -> [LibsecretItem] {
        guard !paths.isEmpty else { return [] }
        let cPaths: [UnsafeMutablePointer<CChar>?] = paths.map { strdup($0) } + [nil]
        defer { for path in cPaths { free(path) } }
        var properties = [OpaquePointer?](repeating: nil, count: paths.count)
        var secrets: OpaquePointer?
        var error: UnsafeMutablePointer<GError>?
        let ok = cPaths.withUnsafeBufferPointer { pathBuffer in
            pathBuffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: cPaths.count) { base in
                keepsake_read_items(
                    bus, link.owner, loadSecrets ? link.service : nil, base, guint(paths.count), cancellable,
                    &properties, &secrets, &error)
            }
        }
        guard ok != 0 else { throw failure(loadSecrets ? .readSecret : .search, error) }
        defer {
            for property in properties where property != nil { g_variant_unref(property) }
            if let secrets { g_variant_unref(secrets) }
        }
        var items: [LibsecretItem] = []
        items.reserveCapacity(paths.count)
        for (index, path) in paths.enumerated() {
            guard let property = properties[index] else { continue }
            let attributes = keepsake_properties_attributes(property)
            let username = "username".withCString { g_hash_table_lookup(attributes, $0) }
                .map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
            g_hash_table_unref(attributes)
            var secret: Data?
            if let secrets {
                var listed: gboolean = 0
                if let value = keepsake_secret_for_path(link.service, secrets, path, &listed) {
                    secret = LibsecretSecret.take(value)
                } else if listed != 0 {
                    throw Self.undecodable(path)
                }
            }
            items.append(
                LibsecretItem(
                    path: path, username: username,
                    isLocked: keepsake_properties_bool(property, "Locked") == 1,
                    modified: UInt64(keepsake_properties_uint64(property, "Modified")),
                    created: UInt64(keepsake_properties_uint64(property, "Created")),
                    secret: secret))
        }
        return items
    }

    /// The unique bus name of the provider this call talks to (`:1.42`).
    var providerName: String { link.owner }

    /// The process ID of the provider, asked of the bus daemon (one round trip; the provider
    /// itself is not contacted).
    func providerProcessID() throws(LibsecretFailure) -> UInt32 {
        var pid: guint32 = 0
        var error: UnsafeMutablePointer<GError>?
        guard keepsake_owner_pid(bus, link.owner, cancellable, &pid, &error) != 0 else {
            throw failure(.identifyProvider, error)
        }
        return pid
    }

    /// The secret of the item at `path`, read again with one `Item.GetSecret` request (one round
    /// trip). Never unlocks anything.
    ///
    /// - Throws: a stale-link failure when the answer cannot be decoded with the session's key
    ///   (``undecodable(_:)``).
    func readSecret(at path: String) throws(LibsecretFailure) -> Data {
        var error: UnsafeMutablePointer<GError>?
        guard let value = keepsake_get_secret(bus, link.owner, link.service, path, cancellable, &error) else {
            if let error { throw failure(.readSecret, error) }
            throw Self.undecodable(path)
        }
        return LibsecretSecret.take(value)
    }

    /// An answer that held a secret for `path` that this session's key cannot decrypt.
    ///
    /// KWallet (kwalletd5, through QCA and OpenSSL) drops the leading zero byte of the
    /// Diffie-Hellman shared secret before it derives the session key, while libsecret keeps it:
    /// about one session in 256 then has a different key on each side. Every secret KWallet
    /// sends on it is undecodable here, and every secret sent to it is refused ("Can't find
    /// session"). Nothing is wrong with the item: the failure is marked stale, so that the call
    /// opens a new session and runs again (``LibsecretChannel/call(timeout:_:)``).
    static func undecodable(_ path: String) -> LibsecretFailure {
        LibsecretFailure(
            stage: .readSecret, kind: .other,
            message: """
                the secret of \(path) could not be decrypted with this process's secret session \
                (the provider derived another session key)
                """,
            isStaleLink: true)
    }

    /// Creates an item in `collection` with `attributes` plus `xdg:schema` (`schema`),
    /// replacing an item with exactly the same attributes if there is one and `replace` is set,
    /// and returns the new item's D-Bus path. A provider that asks for a prompt first (KeePassXC
    /// does for every new item) gets it run within the call's deadline (``runPrompt(_:doing:)``).
    @discardableResult
    func createItem(
        in collection: LibsecretCollection, schema: String = LibsecretSchema.name, attributes: [String: String],
        label: String, secret: Data, replace: Bool = true
    ) throws(LibsecretFailure) -> String {
        var all = attributes
        all["xdg:schema"] = schema
        let table = LibsecretAttributes.table(all)
        defer { g_hash_table_unref(table) }
        let value = LibsecretSecret.value(secret)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        var returned: UnsafeMutablePointer<gchar>?
        let outcome = keepsake_create_item(
            bus, link.owner, link.service, collection.path, table, label, value,
            replace ? 1 : 0, &returned, cancellable, &error)
        let path = returned.map { String(cString: $0) }
        g_free(returned)
        switch outcome {
        case 1: return path ?? ""
        case 0:
            let result: String?
            do throws(LibsecretFailure) {
                result = try runPrompt(path ?? "/", doing: .createItem)
            } catch  where error.kind == .locked || error.kind == .timedOut {
                throw afterDismissedCreate(error, attributes: all, secret: secret)
            }
            guard let created = result else {
                throw LibsecretFailure(
                    stage: .createItem, kind: .other,
                    message: "the keyring's prompt to create the item in \(collection.path) completed without naming it"
                )
            }
            return created
        default: throw failure(.createItem, error)
        }
    }

    /// `failure` (a create prompt the provider dismissed, or one dismissed at the deadline: then
    /// the call's time is up and the check below can only say so), once what the provider may have made
    /// anyway is gone: KeePassXC has been seen to leave an item with an empty secret behind a
    /// dismissed create. An item of Keepsake's schema with these attributes whose secret is empty
    /// or the one being written is removed (the caller's lock keeps other Keepsake writers away,
    /// and the write is reported as not done); the message says what was found, removed or left.
    private func afterDismissedCreate(
        _ failure: LibsecretFailure, attributes: [String: String], secret: Data
    ) -> LibsecretFailure {
        var failure = failure
        let nothingChanged = "; nothing was changed"
        let dismissedAtDeadline = "; it was dismissed and nothing was changed"
        var base = failure.message
        if base.hasSuffix(dismissedAtDeadline) {
            base = String(base.dropLast(dismissedAtDeadline.count)) + "; it was dismissed"
        } else if base.hasSuffix(nothingChanged) {
            base = String(base.dropLast(nothingChanged.count))
        }
        let found: [LibsecretItem]
        do throws(LibsecretFailure) {
            found = try readItems(search(attributes).unlocked, loadSecrets: true)
        } catch {
            failure.message = base + "; whether it left an item behind could not be checked (\(error.message))"
            return failure
        }
        var removed: [String] = [], left: [String] = []
        for item in found where item.secret == nil || item.secret?.isEmpty == true || item.secret == secret {
            do throws(LibsecretFailure) {
                try delete(item)
                removed.append(item.path)
            } catch {
                left.append(item.path)
            }
        }
        if left.isEmpty {
            failure.message =
                removed.isEmpty
                ? base + nothingChanged
                : base
                    + "; the item it made anyway (\(removed.joined(separator: ", "))) was removed, so nothing was changed"
        } else {
            failure.message =
                base + "; it left an item behind (\(left.joined(separator: ", "))) that could not be removed: "
                + "remove it in the keyring provider"
        }
        return failure
    }

    /// Runs the prompt at `path` that the provider asked for before `stage` (Prompt.Prompt with
    /// no parent window) and waits for it to complete, within the call's deadline; returns the
    /// object path it completed with, if any. Only ever asked for on an unlocked collection (a
    /// locked one is refused before): a provider that prompts even then (KeePassXC creating or
    /// deleting an item) completes it at once unless it is set to ask the user.
    ///
    /// - Throws: `.timedOut` when it did not complete before the deadline (it is then
    ///   dismissed: a confirmation nobody answered); `.locked` when the provider reports it
    ///   dismissed (access refused).
    /// - Important: A prompt dismissed at the deadline was not carried out, unless the provider
    ///   completed it at that same instant.
    func runPrompt(_ path: String, doing stage: LibsecretFailure.Stage) throws(LibsecretFailure) -> String? {
        var error: UnsafeMutablePointer<GError>?
        var result: OpaquePointer?
        switch keepsake_run_prompt(bus, link.owner, path, cancellable, &result, &error) {
        case 1:
            defer { if let result { g_variant_unref(result) } }
            guard let raw = keepsake_prompt_result_path(result) else { return nil }
            defer { g_free(raw) }
            return String(cString: raw)
        case 0:
            throw LibsecretFailure(
                stage: stage, kind: .locked,
                message:
                    "the keyring provider refused (its prompt \(path) was dismissed, by the user or by its settings); nothing was changed"
            )
        case 2:
            throw LibsecretFailure(
                stage: stage, kind: .timedOut,
                message:
                    "the keyring provider showed a prompt (\(path): a confirmation or unlock dialog) that was not answered before the deadline; it was dismissed and nothing was changed"
            )
        default: throw failure(stage, error)
        }
    }

    /// Replaces the secret of the item at `path` in place: the item keeps its path, label and
    /// attributes.
    func setSecret(_ secret: Data, on item: LibsecretItem) throws(LibsecretFailure) {
        let value = LibsecretSecret.value(secret)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        guard keepsake_set_secret(bus, link.owner, link.service, item.path, value, cancellable, &error) != 0 else {
            throw failure(.setSecret, error)
        }
    }

    /// Replaces the secret of the item at `path` in place, like ``setSecret(_:on:)``, with its
    /// read-back (`Item.GetSecret`) sent right behind the `Item.SetSecret`: one round trip for
    /// both. Returns what the read-back got: the secret, or why it failed (a stale-link failure
    /// when the answer cannot be decoded with the session's key, ``undecodable(_:)``).
    ///
    /// - Important: The bus delivers the two requests in order, but a provider could answer the
    ///   read-back before it applied the write: a secret other than the one written proves
    ///   nothing until it is read again on its own (``readSecret(at:)``).
    /// - Throws: The failure of the `Item.SetSecret` (the write was refused).
    func setSecretReadingBack(_ secret: Data, at path: String) throws(LibsecretFailure) -> Result<
        Data, LibsecretFailure
    > {
        let value = LibsecretSecret.value(secret)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        var readError: UnsafeMutablePointer<GError>?
        var back: OpaquePointer?
        guard
            keepsake_set_secret_read_back(
                bus, link.owner, link.service, path, value, cancellable, &back, &readError, &error) != 0
        else {
            throw failure(.setSecret, error)
        }
        if let back { return .success(LibsecretSecret.take(back)) }
        if let readError { return .failure(failure(.readSecret, readError)) }
        return .failure(Self.undecodable(path))
    }

    /// Deletes exactly `item`. A provider that asks for a prompt first gets it run within the
    /// call's deadline (``runPrompt(_:doing:)``).
    func delete(_ item: LibsecretItem) throws(LibsecretFailure) {
        var error: UnsafeMutablePointer<GError>?
        var prompt: UnsafeMutablePointer<gchar>?
        let outcome = keepsake_delete_item(bus, link.owner, item.path, &prompt, cancellable, &error)
        let path = prompt.map { String(cString: $0) }
        g_free(prompt)
        switch outcome {
        case 1: return
        case 0: _ = try runPrompt(path ?? "/", doing: .deleteItem)
        default: throw failure(.deleteItem, error)
        }
    }

    private static func strings(_ vector: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
        guard var cursor = vector else { return [] }
        var result: [String] = []
        while let string = cursor.pointee {
            result.append(String(cString: string))
            cursor += 1
        }
        return result
    }
}

/// Keepsake's schema name, the `xdg:schema` attribute of the items it creates. Lookups never
/// match it, so items other clients stored for the same service and key are found too.
enum LibsecretSchema {
    static let name = "org.keepsake.Record"
}

/// Attribute tables for libsecret calls.
enum LibsecretAttributes {
    /// A new `GHashTable` of UTF-8 strings (keys and values owned by the table).
    static func table(_ attributes: [String: String]) -> OpaquePointer {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        for (name, value) in attributes {
            g_hash_table_insert(table, name.withCString { g_strdup($0) }, value.withCString { g_strdup($0) })
        }
        return table
    }
}

/// Moving secrets between `Data` and libsecret's secure memory.
enum LibsecretSecret {
    /// A new `SecretValue` holding a copy of `data` (libsecret copies it into secure memory).
    static func value(_ data: Data) -> OpaquePointer {
        data.withUnsafeBytes { raw -> OpaquePointer in
            guard let base = raw.baseAddress, raw.count > 0 else {
                return secret_value_new("", 0, "text/plain")
            }
            return secret_value_new(base.assumingMemoryBound(to: CChar.self), gssize(raw.count), "text/plain")
        }
    }

    /// Copies the bytes of `value` out and releases it; the secure-memory copy is zeroed over
    /// its whole length before `secret_password_free` frees it.
    static func take(_ value: OpaquePointer) -> Data {
        var length: gsize = 0
        // secret_value_unref_to_password: consumes our reference; returns secure memory we own.
        guard let bytes = secret_value_unref_to_password(value, &length) else { return Data() }
        let data = Data(bytes: bytes, count: Int(length))
        memset(bytes, 0, Int(length))
        secret_password_free(bytes)
        return data
    }
}

/// The deadline of one conversation: a `GCancellable` that a timer cancels.
final class LibsecretDeadline: @unchecked Sendable {
    // @unchecked: `token` is immutable and thread-safe (g_cancellable_cancel may be called
    // from any thread); `timer` is only cancelled, which DispatchWorkItem allows from any thread.
    private let token: CancellableToken
    private let timer: DispatchWorkItem

    init(timeout: Duration) {
        let token = CancellableToken()
        let timer = DispatchWorkItem { token.cancel() }
        self.token = token
        self.timer = timer
        Self.timers.asyncAfter(deadline: .now() + Self.interval(timeout), execute: timer)
    }

    /// A queue of its own (labelled queues overcommit): the deadline fires even when every
    /// worker thread of the global queues is blocked in a keyring call.
    private static let timers = DispatchQueue(label: "org.keepsake.keyring.deadlines")

    var cancellable: OpaquePointer { token.pointer }

    /// Whether the deadline has passed (the cancellable was cancelled).
    var expired: Bool { g_cancellable_is_cancelled(token.pointer) != 0 }

    /// Stops the timer; the cancellable is released when the timer's closure is.
    func finish() { timer.cancel() }

    private static func interval(_ timeout: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0, attoseconds >= 0 else { return .nanoseconds(0) }
        guard seconds < Int64(Int.max / 1_000_000_000) - 1 else { return .never }
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}

/// A `GCancellable` reference, released with the value.
private final class CancellableToken: @unchecked Sendable {
    // @unchecked: GCancellable is thread-safe; the pointer never changes.
    let pointer: OpaquePointer
    init() { pointer = g_cancellable_new() }
    deinit { g_object_unref(UnsafeMutableRawPointer(pointer)) }
    func cancel() { g_cancellable_cancel(pointer) }
}
