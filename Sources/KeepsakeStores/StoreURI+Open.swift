import Keepsake
import KeepsakeKeyring
import KeepsakeSodium

/// What opening a store from a `StoreURI` needs besides the URI: the master key of
/// a `file:` store and the deadline of keyring calls.
///
/// Each option applies to one kind of store; ``Keepsake/StoreURI/open(options:)`` refuses a
/// master key for a store that is not encrypted with it, so a configuration that expects
/// encryption never silently gets a plain store.
///
/// ```swift
/// let options = StoreOpenOptions(masterKey: .keyFile(path: "/etc/myapp/records.key"))
/// let store = try StoreURI(parsing: "file:/var/lib/myapp/records").open(options: options)
/// ```
public struct StoreOpenOptions: Sendable {
    /// Where a `file:` store's master key comes from; required for `file:`, refused for others.
    public var masterKey: MasterKeySource?

    /// How long each keyring call may wait for the Secret Service (positive); used by `keyring:`.
    public var keyringTimeout: Duration

    /// Options for opening a store.
    ///
    /// - Parameters:
    ///   - masterKey: The master key source of a `file:` store; `nil` for other stores.
    ///   - keyringTimeout: The deadline of each keyring call (`KeyringStore.defaultTimeout`
    ///     by default).
    public init(masterKey: MasterKeySource? = nil, keyringTimeout: Duration = KeyringStore.defaultTimeout) {
        self.masterKey = masterKey
        self.keyringTimeout = keyringTimeout
    }
}

extension StoreURI {
    /// Opens the store this URI names.
    ///
    /// One call for every backend, so an app and its `migrate` tool open a store from the same
    /// configured text the same way:
    /// - `defaults:PATH` → a `DefaultsStore` on the suite file (created on its first write);
    /// - `file:DIR` → the existing `SodiumFileStore` in `DIR`, opened with
    ///   ``StoreOpenOptions/masterKey`` (create one with `SodiumFileStore.create(directory:key:passphraseLimits:lockTimeout:)`);
    /// - `keyring:SERVICE` → `KeyringStore.open(service:timeout:)`, which first checks that
    ///   the keyring can be used now;
    /// - `memory:NAME` → a new, empty `InMemoryStore` named `NAME`.
    ///
    /// ```swift
    /// let uri = try StoreURI(parsing: configuration.storeURI)
    /// let store = try uri.open(options: StoreOpenOptions(masterKey: .keyFile(path: keyPath)))
    /// let person = try Vault(store: store).load(Person.chain)?.value
    /// ```
    ///
    /// - Parameter options: The master key of a `file:` store and the keyring timeout.
    /// - Returns: The open store; its `RecordStore.uri` names the same store as this URI
    ///   (with a relative path made absolute).
    /// - Throws: `KeepsakeError` naming the store: `.invalidArgument` for a `file:` URI without
    ///   ``StoreOpenOptions/masterKey``, for a master key given for another kind of store, or for
    ///   a keyring timeout that is not positive; otherwise whatever the backend throws when it
    ///   opens (`wrongKey`, `.unavailable`, `.corruptStore`, `.locked`, `.timeout`, …).
    /// - Important: Opening never creates a store or writes a record, whether it returns or
    ///   throws: a `defaults:` suite file is created by its first write; a `file:` store must
    ///   already exist, and opening it only removes temporary files a crashed writer left; a
    ///   `keyring:` store only asks the Secret Service whether it can be used.
    public func open(options: StoreOpenOptions = StoreOpenOptions()) throws(KeepsakeError) -> any RecordStore {
        if scheme != .file, options.masterKey != nil {
            throw KeepsakeError(
                .invalidArgument, store: description,
                """
                a master key applies only to file: stores; a \(scheme): store is not encrypted with \
                one, so leave StoreOpenOptions.masterKey nil or use a file:DIR store
                """)
        }
        switch scheme {
        case .defaults:
            return DefaultsStore(path: location)
        case .file:
            guard let key = options.masterKey else {
                throw KeepsakeError(
                    .invalidArgument, store: description,
                    """
                    a file: store needs its master key: pass StoreOpenOptions(masterKey:) with \
                    .keyFile(path:), .passphrase(_:origin:), .keyring() or .provider(_:)
                    """)
            }
            return try SodiumFileStore(directory: location, key: key)
        case .keyring:
            return try KeyringStore.open(service: location, timeout: options.keyringTimeout)
        case .memory:
            return InMemoryStore(name: location)
        }
    }
}
