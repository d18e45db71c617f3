import Keepsake

extension StoreURI.Scheme {
    /// `keyring:SERVICE`: the Secret Service keyring (``KeyringStore``).
    public static let keyring: Self = "keyring"
}

extension StoreOpenOptions.Option {
    /// How long each keyring call may wait (``StoreOpenOptions/keyringTimeout``); ignored by
    /// other stores.
    public static let keyringTimeout = StoreOpenOptions.Option("keyringTimeout", refusedWhereUnused: false)
}

extension StoreOpenOptions {
    /// How long each keyring call may wait for the Secret Service (positive); used by
    /// `keyring:` stores, ``KeyringStore/defaultTimeout`` when not given.
    public var keyringTimeout: Duration? {
        get { self[.keyringTimeout, as: Duration.self] }
        set { self[.keyringTimeout, as: Duration.self] = newValue }
    }
}

/// The `keyring:SERVICE` backend: ``KeyringStore/open(service:timeout:)``, which first checks
/// that the keyring can be used now.
public struct KeyringBackend: StoreBackend {
    /// A backend for `keyring:` URIs.
    public init() {}

    public var scheme: StoreURI.Scheme { .keyring }
    public var locationName: String { "SERVICE" }
    public var summary: String { "the desktop keyring (Secret Service), one item per record" }
    public var acceptedOptions: Set<StoreOpenOptions.Option> { [.keyringTimeout] }

    /// The store for the URI's service, after checking that the keyring can be used.
    ///
    /// - Throws: What ``KeyringStore/open(service:timeout:)`` throws.
    /// - Important: Nothing is written and nothing prompts, whether this returns or throws.
    public func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        try KeyringStore.open(service: uri.location, timeout: options.keyringTimeout ?? KeyringStore.defaultTimeout)
    }
}
