import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeKeyring
import KeepsakeMemory
import KeepsakeSodium

extension StoreBackends {
    /// The stores Keepsake ships: `defaults:PATH` (`DefaultsBackend`), `file:DIR`
    /// (`SodiumFileBackend`), `keyring:SERVICE`
    /// (`KeyringBackend`) and `memory:NAME` (`InMemoryBackend`).
    /// Add an app's own with `StoreBackends.adding(_:)`.
    ///
    /// ```swift
    /// let store = try StoreBackends.standard.open(
    ///     "file:/var/lib/myapp/records", options: StoreOpenOptions(masterKey: .keyFile(path: "/etc/myapp/records.key")))
    /// ```
    public static let standard = StoreBackends(
        unchecked: [DefaultsBackend(), SodiumFileBackend(), KeyringBackend(), InMemoryBackend()])
}

extension StoreOpenOptions {
    /// Options for the standard stores: the master key of a `file:` store and the deadline of
    /// keyring calls.
    ///
    /// - Parameters:
    ///   - masterKey: The master key source of a `file:` store; `nil` for other stores.
    ///   - keyringTimeout: The deadline of each keyring call (`KeyringStore.defaultTimeout`
    ///     when `nil`).
    ///   - requireExisting: Whether opening must find an existing store.
    public init(masterKey: MasterKeySource? = nil, keyringTimeout: Duration? = nil, requireExisting: Bool = false) {
        self.init(requireExisting: requireExisting)
        self.masterKey = masterKey
        self.keyringTimeout = keyringTimeout
    }
}

extension StoreURI {
    /// Parses `text` as a URI of one of the standard stores (``Keepsake/StoreBackends/standard``).
    ///
    /// - Throws: What `StoreURI.init(parsing:backends:environment:)` throws.
    /// - Important: Parsing never touches the file system or the keyring.
    public init(
        parsing text: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        try self.init(parsing: text, backends: .standard, environment: environment)
    }

    /// Parses `description` like ``init(parsing:environment:)``; `nil` where that throws.
    public init?(_ description: String) {
        do throws(KeepsakeError) {
            try self.init(parsing: description)
        } catch {
            return nil
        }
    }

    /// Opens the store this URI names with the standard backends.
    ///
    /// One call for every backend, so an app and its `migrate` tool open a store from the same
    /// configured text the same way:
    /// - `defaults:PATH` → a `DefaultsStore` on the suite file (created on its first write);
    /// - `file:DIR` → the existing `SodiumFileStore` in `DIR`, opened with
    ///   `StoreOpenOptions.masterKey` (create one with `SodiumFileStore.create(directory:key:passphraseLimits:lockTimeout:)`);
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
    ///   `StoreOpenOptions.masterKey`, for an option given for a kind of store that
    ///   does not use it (a master key for a `defaults:` store), or for a keyring timeout that is
    ///   not positive; otherwise whatever the backend throws when it opens (`wrongKey`,
    ///   `.unavailable`, `.corruptStore`, `.locked`, `.timeout`, …).
    /// - Important: Opening never creates a store or writes a record, whether it returns or
    ///   throws: a `defaults:` suite file is created by its first write; a `file:` store must
    ///   already exist, and opening it only removes temporary files a crashed writer left; a
    ///   `keyring:` store only asks the Secret Service whether it can be used.
    public func open(options: StoreOpenOptions = StoreOpenOptions()) throws(KeepsakeError) -> any RecordStore {
        try StoreBackends.standard.open(self, options: options)
    }
}
