#if OpenBao
import Foundation
import Keepsake

extension StoreURI.Scheme {
    /// `openbao://HOST:PORT/MOUNT/PREFIX?…`: a folder of an OpenBao KV version 2 engine
    /// (``OpenBaoStore``).
    public static let openbao: Self = "openbao"
    /// `vault://…`: the same store on HashiCorp Vault, whose KV version 2 API is OpenBao's.
    public static let vault: Self = "vault"
}

/// The `openbao:` (and `vault:`) backend: opens an ``OpenBaoStore`` from its URI
/// (``OpenBaoConfiguration/init(parsing:environment:)``).
///
/// Register it beside the standard stores, as the stock `migrate` does:
///
/// ```swift
/// let backends = try StoreBackends.standard.adding(contentsOf: OpenBaoBackend.all)
/// let store = try backends.open("openbao://bao.internal:8200/secret/myapp?cacert=/etc/myapp/bao-ca.pem&token_file=/run/secrets/bao-token")
/// ```
public struct OpenBaoBackend: StoreBackend {
    /// Both schemes: `openbao:` and `vault:`.
    public static let all: [OpenBaoBackend] = [OpenBaoBackend(scheme: .openbao), OpenBaoBackend(scheme: .vault)]

    /// The scheme this backend answers to.
    public let scheme: StoreURI.Scheme

    /// A backend for `scheme` (`StoreURI.Scheme.openbao` by default).
    public init(scheme: StoreURI.Scheme = .openbao) {
        self.scheme = scheme
    }

    public var locationName: String { "//HOST:PORT/MOUNT/PREFIX" }
    public var summary: String { "a folder of an OpenBao (or Vault) KV version 2 engine, one entry per record" }

    /// The store the URI names; with `StoreOpenOptions.requireExisting`, after checking that the
    /// mount is a KV version 2 engine the token can reach.
    ///
    /// - Throws: What ``OpenBaoConfiguration/init(parsing:environment:)`` and
    ///   ``OpenBaoStore/init(configuration:requireExisting:)`` throw.
    /// - Important: Opening writes nothing.
    public func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        let configuration = try OpenBaoConfiguration(
            scheme: scheme.rawValue, location: uri.location, environment: ProcessInfo.processInfo.environment)
        return try OpenBaoStore(configuration: configuration, requireExisting: options.requireExisting)
    }
}
#endif
