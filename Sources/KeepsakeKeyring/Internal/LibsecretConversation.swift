internal import CLibsecret
import Dispatch
import Foundation

// Every libsecret and GLib call of KeepsakeKeyring is in this folder (`Internal/`). The rest of
// the module sees Swift values only: `Data`, `String`, `LibsecretFailure`.

/// One conversation with the Secret Service on the session bus, under one deadline.
///
/// Opens its own `SecretService` proxy (not libsecret's process-wide shared one), so that a
/// daemon restarted by `gnome-keyring-daemon --replace` is met with a fresh session, and so
/// that every D-Bus round trip of one store call shares the same `GCancellable`: a timer
/// cancels it when the deadline passes, and the blocked libsecret call returns at once with
/// `G_IO_ERROR_CANCELLED` instead of waiting for D-Bus's own 25–50 s timeout.
///
/// Not thread-safe: one conversation serves one store call on one thread.
final class LibsecretConversation {
    private let deadline: LibsecretDeadline
    private let service: UnsafeMutablePointer<SecretService>

    /// Connects to the session bus and opens the Secret Service, both within `timeout`.
    ///
    /// - Throws: ``LibsecretFailure`` at stage `.connectBus` (no bus) or `.openService`
    ///   (no provider, hung provider).
    init(timeout: Duration) throws(LibsecretFailure) {
        let deadline = LibsecretDeadline(timeout: timeout)
        var error: UnsafeMutablePointer<GError>?
        // g_bus_get_sync: the process's shared session connection (a new reference). Done
        // apart from opening the service so that "no bus" and "no provider" are told apart.
        guard let bus = g_bus_get_sync(G_BUS_TYPE_SESSION, deadline.cancellable, &error) else {
            deadline.finish()
            throw LibsecretFailure(stage: .connectBus, error: error, deadlineExpired: deadline.expired)
        }
        g_object_unref(UnsafeMutableRawPointer(bus))
        // secret_service_open_sync: a new, unshared proxy; no session is opened until a secret
        // is transferred, and SECRET_SERVICE_LOAD_COLLECTIONS is not needed.
        guard let service = secret_service_open_sync(
            secret_service_get_type(), nil, SECRET_SERVICE_NONE, deadline.cancellable, &error)
        else {
            deadline.finish()
            throw LibsecretFailure(stage: .openService, error: error, deadlineExpired: deadline.expired)
        }
        self.deadline = deadline
        self.service = service
    }

    deinit {
        deadline.finish()
        g_object_unref(service)
    }

    private var cancellable: UnsafeMutablePointer<GCancellable> { deadline.cancellable }

    private func failure(_ stage: LibsecretFailure.Stage, _ error: UnsafeMutablePointer<GError>?) -> LibsecretFailure {
        LibsecretFailure(stage: stage, error: error, deadlineExpired: deadline.expired)
    }

    // MARK: Collections

    /// The collection behind the `default` alias, or `nil` when no collection has that alias.
    func defaultCollection() throws(LibsecretFailure) -> LibsecretCollection? {
        var error: UnsafeMutablePointer<GError>?
        // secret_collection_for_alias_sync: NULL with no error when the alias is not set.
        let collection = secret_collection_for_alias_sync(
            service, "default", SECRET_COLLECTION_NONE, cancellable, &error)
        if let error { throw failure(.readAlias, error) }
        return collection.map(LibsecretCollection.init(taking:))
    }

    // MARK: Items

    /// Every item, in any collection, locked or not, whose attributes include `attributes`;
    /// the item's `xdg:schema` is not matched, so items other clients wrote are found too.
    ///
    /// - Parameter loadSecrets: Also fetch the secrets of the unlocked items (one round trip).
    ///   Never unlocks anything, so never prompts.
    func search(
        _ attributes: [String: String], schema: LibsecretSchema = .record, loadSecrets: Bool
    ) throws(LibsecretFailure) -> [LibsecretItem] {
        let table = LibsecretAttributes.table(attributes)
        defer { g_hash_table_unref(table) }
        var flags = SECRET_SEARCH_ALL.rawValue
        if loadSecrets { flags |= SECRET_SEARCH_LOAD_SECRETS.rawValue }
        var error: UnsafeMutablePointer<GError>?
        // secret_service_search_sync: a GList of new SecretItem references; NULL is also an
        // empty result, so only the GError tells failure apart.
        let list = secret_service_search_sync(
            service, schema.pointer, table, SecretSearchFlags(rawValue: flags), cancellable, &error)
        if let error {
            g_list_free_full(list, g_object_unref)
            throw failure(.search, error)
        }
        var items: [LibsecretItem] = []
        var node = list
        while let current = node {
            if let raw = current.pointee.data {
                items.append(LibsecretItem(taking: raw.assumingMemoryBound(to: SecretItem.self)))
            }
            node = current.pointee.next
        }
        g_list_free(list)  // the items' references now belong to the LibsecretItems
        return items
    }

    /// The secret of `item` as loaded by ``search(_:loadSecrets:)``, or `nil` when it was not
    /// loaded (a locked item). The copy libsecret kept in secure memory is wiped before it is freed.
    func loadedSecret(of item: LibsecretItem) -> Data? {
        // secret_item_get_secret: a new reference to the cached SecretValue, or NULL.
        guard let value = secret_item_get_secret(item.pointer) else { return nil }
        return LibsecretSecret.take(value)
    }

    /// Creates an item in `collection` with `schema` (`xdg:schema` is added by libsecret),
    /// replacing an item with exactly the same attributes if there is one and `replace` is set.
    func createItem(
        in collection: LibsecretCollection, schema: LibsecretSchema = .record, attributes: [String: String],
        label: String, secret: Data, replace: Bool = true
    ) throws(LibsecretFailure) {
        let table = LibsecretAttributes.table(attributes)
        defer { g_hash_table_unref(table) }
        let value = LibsecretSecret.value(secret)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        // secret_item_create_sync: returns the new item (a reference we drop) or NULL + GError.
        let created = secret_item_create_sync(
            collection.pointer, schema.pointer, table, label, value,
            replace ? SECRET_ITEM_CREATE_REPLACE : SECRET_ITEM_CREATE_NONE, cancellable, &error)
        guard let created else { throw failure(.createItem, error) }
        g_object_unref(created)
    }

    /// Replaces the secret of `item` in place: the item keeps its path, label and attributes.
    func setSecret(_ secret: Data, on item: LibsecretItem) throws(LibsecretFailure) {
        let value = LibsecretSecret.value(secret)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        guard secret_item_set_secret_sync(item.pointer, value, cancellable, &error) != 0 else {
            throw failure(.setSecret, error)
        }
    }

    /// Deletes exactly `item`.
    func delete(_ item: LibsecretItem) throws(LibsecretFailure) {
        var error: UnsafeMutablePointer<GError>?
        guard secret_item_delete_sync(item.pointer, cancellable, &error) != 0 else {
            throw failure(.deleteItem, error)
        }
    }
}

/// A `SecretCollection` reference, released with the value.
final class LibsecretCollection {
    fileprivate let pointer: UnsafeMutablePointer<SecretCollection>

    fileprivate init(taking pointer: UnsafeMutablePointer<SecretCollection>) { self.pointer = pointer }
    deinit { g_object_unref(pointer) }

    /// Whether the collection is locked (its items' secrets cannot be read or written).
    var isLocked: Bool { secret_collection_get_locked(pointer) != 0 }

    /// The collection's D-Bus object path, for messages.
    var path: String {
        let proxy = UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GDBusProxy.self)
        return String(cString: g_dbus_proxy_get_object_path(proxy))
    }
}

/// A `SecretItem` reference, released with the value.
final class LibsecretItem {
    fileprivate let pointer: UnsafeMutablePointer<SecretItem>

    fileprivate init(taking pointer: UnsafeMutablePointer<SecretItem>) { self.pointer = pointer }
    deinit { g_object_unref(pointer) }

    var isLocked: Bool { secret_item_get_locked(pointer) != 0 }

    /// Seconds since 1970 of the item's last change.
    var modified: UInt64 { UInt64(secret_item_get_modified(pointer)) }

    /// Seconds since 1970 of the item's creation.
    var created: UInt64 { UInt64(secret_item_get_created(pointer)) }

    /// The item's D-Bus object path: stable identity within one daemon run.
    var path: String {
        let proxy = UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GDBusProxy.self)
        return String(cString: g_dbus_proxy_get_object_path(proxy))
    }

    /// The value of one attribute, or `nil` when the item does not have it.
    func attribute(_ name: String) -> String? {
        // secret_item_get_attributes: a new GHashTable reference (utf8 → utf8).
        guard let table = secret_item_get_attributes(pointer) else { return nil }
        defer { g_hash_table_unref(table) }
        guard let value = name.withCString({ g_hash_table_lookup(table, $0) }) else { return nil }
        return String(cString: value.assumingMemoryBound(to: CChar.self))
    }
}

/// Keepsake's `SecretSchema`s: `org.keepsake.Record` with string attributes `service` and
/// `username`, flagged `SECRET_SCHEMA_DONT_MATCH_NAME` so searches find other clients' items;
/// `org.keepsake.MasterKey` for a file store's master key, matched by name too.
final class LibsecretSchema: @unchecked Sendable {
    // @unchecked: the schema is created once, never mutated, and only read by libsecret
    // (its reference count is touched only here, at creation).
    fileprivate let pointer: UnsafeMutablePointer<SecretSchema>

    static let name = "org.keepsake.Record"
    static let record = LibsecretSchema(name: name, attributes: ["service", "username"], matchName: false)
    static let masterKey = LibsecretSchema(
        name: "org.keepsake.MasterKey", attributes: ["keepsake-purpose", "keepsake-store-id"], matchName: true)

    private init(name: String, attributes: [String], matchName: Bool) {
        // A GHashTable of attribute name → SecretSchemaAttributeType (as a pointer-sized int).
        let types = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, nil)
        defer { g_hash_table_unref(types) }
        for attribute in attributes {
            let key = attribute.withCString { g_strdup($0) }
            // SECRET_SCHEMA_ATTRIBUTE_STRING is 0: GINT_TO_POINTER(0) is NULL.
            g_hash_table_insert(types, key, UnsafeMutableRawPointer(bitPattern: Int(SECRET_SCHEMA_ATTRIBUTE_STRING.rawValue)))
        }
        // secret_schema_newv copies the names; the table is ours to release.
        pointer = secret_schema_newv(name, matchName ? SECRET_SCHEMA_NONE : SECRET_SCHEMA_DONT_MATCH_NAME, types)
    }
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

    fileprivate var cancellable: UnsafeMutablePointer<GCancellable> { token.pointer }

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
    let pointer: UnsafeMutablePointer<GCancellable>
    init() { pointer = g_cancellable_new() }
    deinit { g_object_unref(pointer) }
    func cancel() { g_cancellable_cancel(pointer) }
}
