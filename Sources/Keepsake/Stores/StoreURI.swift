import Foundation

/// Which store a text such as `defaults:~/settings.json` or `keyring:com.example.app` names.
///
/// A store URI is `SCHEME:LOCATION`, the same text every store reports as its
/// ``RecordStore/uri``, so a URI from a configuration file, a command line or an error message
/// names the same store everywhere. Which schemes exist, and what their locations are, is up to
/// the ``StoreBackends`` it is parsed with; `KeepsakeStores` lists the ones Keepsake ships
/// (`StoreBackends.standard`: `defaults:PATH`, `file:DIR`, `keyring:SERVICE`, `memory:NAME`).
///
/// A path location that starts with `~/` (or is `~`) is expanded against `$HOME` when the URI
/// is parsed; other locations are kept as given (a relative path is taken from the current
/// directory when the store is opened). Parsing only checks the text: nothing is opened or
/// touched.
///
/// ```swift
/// let uri = try StoreBackends.standard.parse("defaults:~/.config/myapp/settings.json")
/// uri.scheme        // "defaults"
/// uri.location      // "/home/ada/.config/myapp/settings.json"
/// uri.description   // "defaults:/home/ada/.config/myapp/settings.json"
/// ```
public struct StoreURI: Sendable, Hashable, CustomStringConvertible {
    /// The kind of store a URI names: the text before the first colon. Each backend module
    /// names its own (`.file` in KeepsakeSodium, `.keyring` in KeepsakeKeyring).
    public struct Scheme: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The scheme's text, without the colon.
        public let rawValue: String
        /// The scheme `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The scheme `value`.
        public init(stringLiteral value: String) { rawValue = value }
        /// The scheme's text.
        public var description: String { rawValue }
    }

    /// The kind of store.
    public let scheme: Scheme

    /// Where the store is: for a path location, the path with a leading `~/` already expanded
    /// against `$HOME`; otherwise the text after the colon, exactly. Never empty.
    public let location: String

    /// Parses `SCHEME:LOCATION` for one of `backends`, expanding a leading `~/` of a path
    /// location against `environment["HOME"]`.
    ///
    /// - Parameters:
    ///   - text: The URI. The scheme is matched exactly; everything after the first colon is
    ///     the location.
    ///   - backends: The store kinds known (`StoreBackends.standard` in KeepsakeStores).
    ///   - environment: Where `HOME` is looked up (the process environment by default).
    /// - Throws: ``KeepsakeError/Code/invalidArgument``, with a message that shows what a valid
    ///   URI looks like, when `text` has no colon, names an unknown scheme, has an empty
    ///   location, contains NUL, or starts a path with `~/` while `HOME` is unset or empty.
    /// - Important: Parsing never touches the file system or the keyring, whether it returns
    ///   or throws.
    public init(
        parsing text: String, backends: StoreBackends,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw KeepsakeError(.invalidArgument, "'\(text)' is not a store URI; \(backends.expected)")
        }
        let schemeText = String(text[..<colon])
        guard let backend = backends.backend(for: Scheme(rawValue: schemeText)) else {
            throw KeepsakeError(.invalidArgument, "unknown store kind '\(schemeText)'; \(backends.expected)")
        }
        let scheme = backend.scheme
        var location = String(text[text.index(after: colon)...])
        guard !location.isEmpty else {
            throw KeepsakeError(
                .invalidArgument,
                """
                '\(text)' has no location after the colon; write \(scheme):\(backend.locationName)
                """)
        }
        guard !location.utf8.contains(0) else {
            throw KeepsakeError(.invalidArgument, "a store URI must not contain NUL; \(backends.expected)")
        }
        if backend.locationIsPath, location == "~" || location.hasPrefix("~/") {
            guard let home = environment["HOME"], !home.isEmpty else {
                throw KeepsakeError(
                    .invalidArgument,
                    """
                    '\(text)' starts with '~' but HOME is not set; give the full path, as in \
                    \(scheme):/path/to/\(backend.locationName == "DIR" ? "store" : "suite.json")
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

    /// A URI of `scheme` at `location`, as given (nothing is expanded or checked).
    public init(scheme: Scheme, location: String) {
        self.scheme = scheme
        self.location = location
    }

    /// The canonical text, `SCHEME:LOCATION`, with `~/` already expanded: parsing it again
    /// gives an equal URI.
    public var description: String { "\(scheme.rawValue):\(location)" }
}

extension StoreURI {
    /// Names of query parameters whose values are never shown.
    private static let secretParameters: Set<String> = [
        "password", "passwd", "pass", "secret", "token", "secret_id", "role_id", "client_secret", "access_token",
        "api_key", "apikey"
    ]

    /// `text` with every password it may hold replaced by `***`: the one of
    /// `scheme://user:password@host`, and the value of a `password=`, `secret=`, `token=`,
    /// `secret_id=`, `role_id=`, `client_secret=`, `access_token=` or `api_key=` query parameter
    /// (in any case). For messages and reports that show a URI as given.
    package static func redactingSecrets(_ text: String) -> String {
        var result = Substring(text)
        var query = Substring("")
        if let mark = result.firstIndex(of: "?") {
            query = result[result.index(after: mark)...]
            result = result[..<mark]
        }
        var head = String(result)
        if let slashes = head.range(of: "//") {
            let authorityEnd = head[slashes.upperBound...].firstIndex(of: "/") ?? head.endIndex
            let authority = head[slashes.upperBound..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                head.replaceSubrange(head.index(after: colon)..<at, with: "***")
            }
        }
        guard !query.isEmpty || text.contains("?") else { return head }
        let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals].removingPercentEncoding?.lowercased() ?? pair[..<equals].lowercased()
            return secretParameters.contains(name) ? pair[..<equals] + "=***" : String(pair)
        }
        return head + "?" + parameters.joined(separator: "&")
    }
}

extension StoreURI {
    /// The parts of a location of the form `//AUTHORITY[/PATH][?QUERY]` — what follows the colon
    /// of a network store's URI (`postgresql://…`, `openbao://…`) — as written: nothing is decoded.
    package struct NetworkLocation: Sendable {
        /// Between `//` and the first `/` (or the query).
        package var authority: Substring
        /// After the `/` that ends the authority; `nil` when there is none.
        package var path: Substring?
        /// After the first `?`; empty when there is none.
        package var query: Substring

        /// The query's `NAME=VALUE` parameters in order, split at `&` and at the first `=` of
        /// each (empty ones left out): the value is `nil` for one with no `=`.
        package var parameters: [(name: Substring, value: Substring?)] {
            query.split(separator: "&").map { pair in
                guard let equals = pair.firstIndex(of: "=") else { return (pair, nil) }
                return (pair[..<equals], pair[pair.index(after: equals)...])
            }
        }

        /// Splits `location`.
        ///
        /// - Throws: `invalid("the location must start with //")` for a location that does not.
        package init(_ location: String, invalid: (String) -> KeepsakeError) throws(KeepsakeError) {
            guard location.hasPrefix("//") else { throw invalid("the location must start with //") }
            var rest = Substring(location.dropFirst(2))
            query = ""
            if let mark = rest.firstIndex(of: "?") {
                query = rest[rest.index(after: mark)...]
                rest = rest[..<mark]
            }
            path = nil
            if let slash = rest.firstIndex(of: "/") {
                path = rest[rest.index(after: slash)...]
                rest = rest[..<slash]
            }
            authority = rest
        }

        /// The host and the port text of an `authority` (or what is left of one) that starts with
        /// `[`: an IPv6 address in brackets, then nothing or `:PORT`; `nil` for one that does not
        /// start with `[`.
        ///
        /// - Throws: `invalid(…)` for a bracket that is not closed, or other text after it.
        package static func bracketedHost(
            _ authority: Substring, invalid: (String) -> KeepsakeError
        ) throws(KeepsakeError) -> (host: Substring, port: Substring?)? {
            guard authority.hasPrefix("[") else { return nil }
            guard let close = authority.firstIndex(of: "]") else { throw invalid("an IPv6 host has no closing ]") }
            let host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { return (host, after.dropFirst()) }
            guard after.isEmpty else { throw invalid("unexpected text after the IPv6 host") }
            return (host, nil)
        }
    }
}
