import Keepsake

extension StoreURI.Scheme {
    /// `memory:NAME`: an ``InMemoryStore``; each opening is a new, empty store.
    public static let memory: Self = "memory"
}

/// The `memory:NAME` backend: each opening is a new, empty ``InMemoryStore`` named `NAME`, for
/// tests and previews. It does not persist, so command-line tools refuse it.
public struct InMemoryBackend: StoreBackend {
    /// A backend for `memory:` URIs.
    public init() {}

    public var scheme: StoreURI.Scheme { .memory }
    public var locationName: String { "NAME" }
    public var summary: String { "records in memory, for tests and previews; each opening is a new, empty store" }
    public var persists: Bool { false }

    /// A new, empty store named by the URI's location.
    public func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        InMemoryStore(name: uri.location)
    }
}
