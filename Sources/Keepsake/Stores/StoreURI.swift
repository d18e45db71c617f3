import Foundation

/// Which store a text such as `defaults:~/settings.json` or `keyring:com.example.app` names.
///
/// A store URI is `SCHEME:LOCATION`, the same text every store reports as its
/// ``RecordStore/uri``, so a URI from a configuration file, a command line or an error message
/// names the same store everywhere:
///
/// | URI | store | location |
/// | --- | --- | --- |
/// | `defaults:PATH` | a defaults-style JSON suite file | the file's path |
/// | `file:DIR` | an encrypted file store (KeepsakeSodium) | the store's directory |
/// | `keyring:SERVICE` | the desktop keyring (KeepsakeKeyring) | the items' `service` attribute |
/// | `memory:NAME` | an ``InMemoryStore``, for tests and previews | the store's name |
///
/// A path that starts with `~/` (or is `~`) is expanded against `$HOME` when the URI is
/// parsed; other paths are kept as given (a relative path is taken from the current directory
/// when the store is opened). A keyring service or memory name is kept exactly as given.
/// Parsing only checks the text: nothing is opened or touched. To open the store, use
/// `open(options:)` from the `KeepsakeStores` library, which knows every backend.
///
/// ```swift
/// let uri = try StoreURI(parsing: "defaults:~/.config/myapp/settings.json")
/// uri.scheme        // .defaults
/// uri.location      // "/home/ada/.config/myapp/settings.json"
/// uri.description   // "defaults:/home/ada/.config/myapp/settings.json"
/// ```
public struct StoreURI: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    /// The kind of store a URI names: the text before the first colon.
    public enum Scheme: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `defaults:PATH`, a defaults-style JSON suite file (``DefaultsStore``).
        case defaults
        /// `file:DIR`, an encrypted store directory (`SodiumFileStore` in KeepsakeSodium).
        case file
        /// `keyring:SERVICE`, the Secret Service keyring (`KeyringStore` in KeepsakeKeyring).
        case keyring
        /// `memory:NAME`, an ``InMemoryStore``; each opening is a new, empty store.
        case memory

        /// `defaults`, `file`, `keyring`, `memory`.
        public var description: String { rawValue }

        /// What the location of this kind of URI is, for messages: `PATH`, `DIR`, `SERVICE`.
        var locationName: String {
            switch self {
            case .defaults: return "PATH"
            case .file: return "DIR"
            case .keyring: return "SERVICE"
            case .memory: return "NAME"
            }
        }

        /// Whether the location is a file system path (and `~/` is expanded).
        var isPath: Bool { self == .defaults || self == .file }
    }

    /// The kind of store.
    public let scheme: Scheme

    /// Where the store is: for `defaults:` and `file:`, a path with a leading `~/` already
    /// expanded against `$HOME`; for `keyring:`, the service name; for `memory:`, the name.
    /// Never empty.
    public let location: String

    /// Parses `SCHEME:LOCATION`, expanding a leading `~/` of a path against `environment["HOME"]`.
    ///
    /// - Parameters:
    ///   - text: The URI: `defaults:PATH`, `file:DIR`, `keyring:SERVICE` or `memory:NAME`.
    ///     The scheme is matched exactly (lower case); everything after the first colon is the
    ///     location.
    ///   - environment: Where `HOME` is looked up (the process environment by default).
    /// - Throws: ``KeepsakeError/Code/invalidArgument``, with a message that shows what a valid
    ///   URI looks like, when `text` has no colon, names an unknown scheme, has an empty
    ///   location, contains NUL, or starts a path with `~/` while `HOME` is unset or empty.
    /// - Important: Parsing never touches the file system or the keyring, whether it returns
    ///   or throws.
    public init(
        parsing text: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw KeepsakeError(.invalidArgument, "'\(text)' is not a store URI; \(Self.expected)")
        }
        let schemeText = String(text[..<colon])
        guard let scheme = Scheme(rawValue: schemeText) else {
            throw KeepsakeError(.invalidArgument, "unknown store kind '\(schemeText)'; \(Self.expected)")
        }
        var location = String(text[text.index(after: colon)...])
        guard !location.isEmpty else {
            throw KeepsakeError(
                .invalidArgument,
                """
                '\(text)' has no location after the colon; write \(scheme):\(scheme.locationName)
                """)
        }
        guard !location.utf8.contains(0) else {
            throw KeepsakeError(.invalidArgument, "a store URI must not contain NUL; \(Self.expected)")
        }
        if scheme.isPath, location == "~" || location.hasPrefix("~/") {
            guard let home = environment["HOME"], !home.isEmpty else {
                throw KeepsakeError(
                    .invalidArgument,
                    """
                    '\(text)' starts with '~' but HOME is not set; give the full path, as in \
                    \(scheme):/path/to/\(scheme == .file ? "store" : "suite.json")
                    """)
            }
            // "~" is HOME; "~/x" is HOME + "/x", without doubling a trailing slash of HOME.
            var base = home
            while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
            let rest = location.dropFirst()
            location = base == "/" && !rest.isEmpty ? String(rest) : base + rest
        }
        self.scheme = scheme
        self.location = location
    }

    /// Parses `description` like ``init(parsing:environment:)``; `nil` where that throws.
    public init?(_ description: String) {
        guard let parsed = try? StoreURI(parsing: description) else { return nil }
        self = parsed
    }

    /// The canonical text, `SCHEME:LOCATION`, with `~/` already expanded: parsing it again
    /// gives an equal URI.
    public var description: String { "\(scheme.rawValue):\(location)" }

    /// The valid forms, for messages.
    private static let expected =
        "a store URI is defaults:PATH, file:DIR, keyring:SERVICE or memory:NAME (a PATH or DIR may start with ~/)"
}
