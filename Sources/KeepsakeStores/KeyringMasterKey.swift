import Keepsake
import KeepsakeKeyring
import KeepsakeSodium

/// A `file:` store's master key kept in the desktop keyring: a random 32-byte key, one keyring
/// item per store, found by the store id in the store's header (see `KeyringMasterKeyItem` in KeepsakeKeyring
/// for the item's attributes).
///
/// ```swift
/// // Once: a new store whose key is made and kept in the keyring.
/// let store = try SodiumFileStore.create(directory: dir, key: .keyring())
/// // Afterwards, on this user's desktop:
/// let reopened = try SodiumFileStore(directory: dir, key: .keyring())
/// // Rotating the key: a new one in the item, the old kept after it.
/// try reopened.changeMasterKey(to: .keyring())
/// // Moving to a headless server: rekey to a key file (the keyring item is left as it is).
/// try reopened.changeMasterKey(to: .keyFile(path: "/etc/myapp/records.key"))
/// ```
///
/// A key is made only when a store is created (and the keyring positively holds none for that
/// store id) or rekeyed to the keyring: a rekey puts a new key first in the item and keeps the
/// earlier ones after it, so that a rekey interrupted before the header was rewritten, and a
/// copy of an older header, still open. Opening never makes one: a missing item is
/// `KeepsakeError.Code.notFound`, and a locked, unavailable or hung keyring is the keyring's
/// own error (`.locked`, `.unavailable`, `.timeout`) — never a new key. A key that does not open
/// the store is refused by the header's key check (`.wrongKey`) before any record is read.
public struct KeyringMasterKey: MasterKeyProvider {
    /// How long one keyring call may wait for the Secret Service.
    public let timeout: Duration

    /// The keyring-held key, with a deadline for each keyring call.
    public init(timeout: Duration = KeyringStore.defaultTimeout) {
        self.timeout = timeout
    }

    /// `master key in the keyring`.
    public var description: String { "master key in the keyring" }

    /// A keyring key belongs to one store, so it is asked for with the store's id
    /// (``masterKey(createIfAbsent:storeID:)``); without one this throws.
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` always.
    public func masterKey(createIfAbsent: Bool) throws(KeepsakeError) -> SecureBytes {
        throw KeepsakeError(.invalidArgument, "the \(self) is looked up by the store id; it is used by SodiumFileStore")
    }

    /// The key the keyring holds for the store `storeID`; with `createIfAbsent`, a new random
    /// key is stored first when the keyring positively holds none.
    ///
    /// - Throws: `KeepsakeError.Code.notFound` when opening and the keyring holds no key for
    ///   the store; `.locked`, `.unavailable`, `.timeout`, `.io` from the keyring;
    ///   `.invalidArgument` when the item holds no key.
    /// - Important: An existing key is never replaced, and no key is made while opening.
    public func masterKey(createIfAbsent: Bool, storeID: String) throws(KeepsakeError) -> SecureBytes {
        let item = try KeyringMasterKeyItem(storeID: storeID, timeout: timeout)
        var key: [UInt8]
        if createIfAbsent {
            let fresh = SecureBytes.random(count: KeyringMasterKeyItem.keyBytes)
            var bytes = fresh.withUnsafeBytes { [UInt8]($0) }
            defer { bytes.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
            key = try item.storeIfAbsent(bytes)
        } else {
            guard let stored = try item.read() else {
                throw KeepsakeError(
                    .notFound,
                    """
                    the keyring holds no master key for this store (store id \(storeID)): it was not created \
                    here, or its item was deleted; open the store with the key file or passphrase it was \
                    rekeyed to, or restore the keyring
                    """)
            }
            key = stored
        }
        defer { key.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        return SecureBytes(copying: key)
    }

    /// The keys the store's item holds, the current one first, then the ones earlier rekeys
    /// replaced (newest first).
    ///
    /// - Throws: As ``masterKey(createIfAbsent:storeID:)`` when opening.
    public func masterKeys(storeID: String) throws(KeepsakeError) -> [SecureBytes] {
        guard var keys = try KeyringMasterKeyItem(storeID: storeID, timeout: timeout).readAll() else {
            return [try masterKey(createIfAbsent: false, storeID: storeID)]  // the notFound error
        }
        defer { for index in keys.indices { keys[index].withUnsafeMutableBufferPointer { $0.update(repeating: 0) } } }
        return keys.map { SecureBytes(copying: $0) }
    }

    /// A new random key, put first in the store's item with the earlier keys kept after it
    /// (`KeyringMasterKeyItem.replaceKey(with:)` in KeepsakeKeyring): a rekey to the keyring always makes a new
    /// key, and one interrupted before the header is rewritten still opens with the old.
    ///
    /// - Throws: `.locked`, `.unavailable`, `.timeout`, `.lockTimeout`, `.io` from the keyring;
    ///   `.invalidArgument` when the item holds something other than keys.
    public func newMasterKey(storeID: String) throws(KeepsakeError) -> SecureBytes {
        let fresh = SecureBytes.random(count: KeyringMasterKeyItem.keyBytes)
        var bytes = fresh.withUnsafeBytes { [UInt8]($0) }
        defer { bytes.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        var held = try KeyringMasterKeyItem(storeID: storeID, timeout: timeout).replaceKey(with: bytes)
        for index in held.indices { held[index].withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        return fresh
    }
}

extension MasterKeySource {
    /// The master key kept in the keyring for the store (``KeyringMasterKey``).
    ///
    /// - Parameter timeout: The deadline of each keyring call.
    public static func keyring(timeout: Duration = KeyringStore.defaultTimeout) -> MasterKeySource {
        .provider(KeyringMasterKey(timeout: timeout))
    }
}
