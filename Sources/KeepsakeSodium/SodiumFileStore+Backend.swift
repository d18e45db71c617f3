import Foundation
import Keepsake

extension StoreURI.Scheme {
    /// `file:DIR`: an encrypted store directory (``SodiumFileStore``).
    public static let file: Self = "file"
}

extension StoreOpenOptions.Option {
    /// Where an encrypted store's master key comes from (``StoreOpenOptions/masterKey``).
    public static let masterKey = StoreOpenOptions.Option("masterKey")
    /// The master key that seals a store whose values may be sealed or plain
    /// (``StoreOpenOptions/sealingKey``).
    public static let sealingKey = StoreOpenOptions.Option("sealingKey")
}

extension StoreOpenOptions {
    /// Where a `file:` store's master key comes from: required for `file:`, refused by stores
    /// that are not encrypted with one.
    public var masterKey: MasterKeySource? {
        get { self[.masterKey, as: MasterKeySource.self] }
        set { self[.masterKey, as: MasterKeySource.self] = newValue }
    }

    /// The master key that seals a store whose values may be sealed or plain (a `postgresql:`
    /// table); `nil` (the default) stores them as given, unless the store's URI names a key.
    ///
    /// Sealing is optional for such a store, while `masterKey` is required by `file:` stores:
    /// hence an option of its own. `migrate --master-key` sets whichever the store takes.
    public var sealingKey: MasterKeySource? {
        get { self[.sealingKey, as: MasterKeySource.self] }
        set { self[.sealingKey, as: MasterKeySource.self] = newValue }
    }
}

/// The `file:DIR` backend: opens the existing ``SodiumFileStore`` in `DIR` with
/// `StoreOpenOptions.masterKey` (create one with
/// ``SodiumFileStore/create(directory:key:passphraseLimits:lockTimeout:)``).
public struct SodiumFileBackend: StoreBackend {
    /// A backend for `file:` URIs.
    public init() {}

    public var scheme: StoreURI.Scheme { .file }
    public var locationName: String { "DIR" }
    public var summary: String { "an encrypted store directory (libsodium), one file per record" }
    public var locationIsPath: Bool { true }
    public var acceptedOptions: Set<StoreOpenOptions.Option> { [.masterKey] }

    /// The store in the URI's directory, opened with its master key.
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` without a master key; what
    ///   ``SodiumFileStore/init(directory:key:lockTimeout:)`` throws (a wrong key, a missing
    ///   or damaged store).
    /// - Important: Opening only removes temporary files a crashed writer left; it creates no
    ///   store and writes no record.
    public func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        guard let key = options.masterKey else {
            throw KeepsakeError(
                .invalidArgument, store: uri.description,
                """
                a file: store needs its master key: pass StoreOpenOptions(masterKey:) with \
                .keyFile(path:), .passphrase(_:origin:), .keyring() or .provider(_:)
                """)
        }
        return try SodiumFileStore(directory: uri.location, key: key)
    }
}

/// A store whose records are encrypted under a master key that can be changed: what `migrate
/// rekey` works on.
public protocol MasterKeyedStore: RecordStore {
    /// Re-encrypts the store's data key under `newSource` (see ``SodiumFileStore/changeMasterKey(to:passphraseLimits:)``).
    func changeMasterKey(to newSource: MasterKeySource, passphraseLimits: PassphraseLimits) throws(KeepsakeError)
    /// How many times the master key has been changed.
    func keyGeneration() throws(KeepsakeError) -> Int
}

extension MasterKeyedStore {
    /// Re-encrypts the store's data key under `newSource`, with moderate Argon2id limits for a
    /// passphrase.
    ///
    /// - Important: If this throws, the store opens with its old master key, every record intact.
    public func changeMasterKey(to newSource: MasterKeySource) throws(KeepsakeError) {
        try changeMasterKey(to: newSource, passphraseLimits: .moderate)
    }
}

extension SodiumFileStore: MasterKeyedStore {
    /// The store directory reached through any path: its device and inode; the URI while it
    /// does not exist.
    public var identity: String {
        var info = stat()
        guard stat(directory, &info) == 0 else { return uri }
        return "file:\(info.st_dev):\(info.st_ino)"
    }
}
