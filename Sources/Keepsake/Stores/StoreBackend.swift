import Foundation

/// A kind of store that a URI can name: its scheme, what its location is, how a store of it is
/// opened, and what a caller must know about it.
///
/// Every store kind — the ones Keepsake ships and any an app adds — is a backend registered in
/// a ``StoreBackends`` list; nothing else in the engine or the `migrate` CLI knows which kinds
/// exist. An app adds a store of its own in one file: a ``RecordStore``, a backend that opens
/// it, and one line that registers it.
///
/// ```swift
/// struct FolderBackend: StoreBackend {
///     let scheme: StoreURI.Scheme = "folder"
///     let locationName = "DIR"
///     let summary = "one plain file per record in a directory"
///     var locationIsPath: Bool { true }
///
///     func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
///         try FolderStore(directory: uri.location)
///     }
/// }
///
/// let backends = try StoreBackends.standard.adding(FolderBackend())
/// let store = try backends.open("folder:~/records")
/// ```
public protocol StoreBackend: Sendable {
    /// The URI scheme, without the colon: `defaults`, `file`, `keyring`.
    var scheme: StoreURI.Scheme { get }

    /// What the location after the colon is, for usage text and messages: `PATH`, `DIR`,
    /// `SERVICE`.
    var locationName: String { get }

    /// One line saying what the store is, for help: "a defaults-style JSON suite file".
    var summary: String { get }

    /// Whether the location is a file system path, whose leading `~/` is expanded against
    /// `$HOME` when a URI is parsed (default `false`).
    var locationIsPath: Bool { get }

    /// Whether a store opened from a URI keeps its records after the process ends (default
    /// `true`). A command-line tool refuses a store that does not (`memory:`): each opening
    /// would be a new, empty store.
    var persists: Bool { get }

    /// The options of ``StoreOpenOptions`` this backend uses (default none). Opening refuses
    /// an expectation given for a backend that does not use it, so that a configuration
    /// expecting, say, encryption with a master key never silently gets a plain store; a
    /// tuning (a deadline) is ignored where it does not apply.
    var acceptedOptions: Set<StoreOpenOptions.Option> { get }

    /// Opens the store `uri` names (its ``StoreURI/scheme`` is this backend's).
    ///
    /// - Throws: ``KeepsakeError`` naming the store: what the backend cannot open, and
    ///   ``KeepsakeError/Code/notFound`` when ``StoreOpenOptions/requireExisting`` is set and
    ///   the store does not exist yet.
    /// - Important: Opening creates no store and writes no record, whether it returns or throws.
    func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore
}

extension StoreBackend {
    public var locationIsPath: Bool { false }
    public var persists: Bool { true }
    public var acceptedOptions: Set<StoreOpenOptions.Option> { [] }
}

/// What opening a store needs besides its URI: a master key, a deadline, whether it must
/// already exist. Each backend module adds the options it uses as properties (`masterKey` in
/// KeepsakeSodium, `keyringTimeout` in KeepsakeKeyring); a backend declares them in
/// ``StoreBackend/acceptedOptions``.
public struct StoreOpenOptions: Sendable {
    /// The name of one option.
    public struct Option: Hashable, Sendable, CustomStringConvertible {
        /// The option's name, as messages show it: `masterKey`.
        public let name: String
        /// Whether giving the option to a store kind that does not use it is refused (an
        /// expectation, such as encryption with a master key) rather than ignored (a tuning,
        /// such as a deadline).
        public let refusedWhereUnused: Bool
        /// The option named `name`; see ``refusedWhereUnused``.
        public init(_ name: String, refusedWhereUnused: Bool = true) {
            self.name = name
            self.refusedWhereUnused = refusedWhereUnused
        }
        public var description: String { name }
        public static func == (lhs: Option, rhs: Option) -> Bool { lhs.name == rhs.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }

    /// Whether opening must find a store that already exists, rather than one its first write
    /// would create (a mistyped path would otherwise read as an empty store). Default `false`.
    public var requireExisting: Bool

    private var values: [Option: any Sendable] = [:]

    /// No options: what every backend opens with unless it needs one.
    public init(requireExisting: Bool = false) {
        self.requireExisting = requireExisting
    }

    /// The value of option `key`, if given and of type `T`. Backend modules wrap this in a
    /// typed property.
    public subscript<T: Sendable>(key: Option, as type: T.Type = T.self) -> T? {
        get { values[key] as? T }
        set { values[key] = newValue }
    }

    /// The options given a value.
    public var given: Set<Option> { Set(values.keys) }
}

/// The store kinds a program knows, by scheme: what parses a URI and opens its store.
///
/// `KeepsakeStores` provides `StoreBackends.standard` (`defaults:`, `file:`, `keyring:`,
/// `memory:`); an app adds its own with ``adding(_:)``, and passes the list to its `migrate`
/// (`MigrateCommand.main(chains:backends:)`).
public struct StoreBackends: Sendable {
    /// Every backend, in the order they were given.
    public let all: [any StoreBackend]

    /// A list of `backends`.
    ///
    /// - Throws: ``KeepsakeError/Code/invalidArgument`` when two share a scheme, or a scheme is
    ///   not a valid URI scheme (a letter, then letters, digits, `+`, `-` or `.`).
    public init(_ backends: [any StoreBackend]) throws(KeepsakeError) {
        var seen = Set<String>()
        for backend in backends {
            let scheme = backend.scheme.rawValue
            guard Self.isValidScheme(scheme) else {
                throw KeepsakeError(
                    .invalidArgument,
                    "'\(scheme)' is not a valid store URI scheme (a letter, then letters, digits, '+', '-' or '.')")
            }
            guard seen.insert(scheme).inserted else {
                throw KeepsakeError(.invalidArgument, "two store backends share the scheme '\(scheme)'")
            }
        }
        all = backends
    }

    /// A list the caller knows to be consistent (distinct, valid schemes), for fixed lists.
    package init(unchecked backends: [any StoreBackend]) {
        all = backends
    }

    /// This list with `backends` added.
    ///
    /// - Throws: ``KeepsakeError/Code/invalidArgument`` when a scheme is taken or invalid.
    public func adding(_ backends: any StoreBackend...) throws(KeepsakeError) -> StoreBackends {
        try adding(contentsOf: backends)
    }

    /// This list with `backends` added.
    ///
    /// - Throws: ``KeepsakeError/Code/invalidArgument`` when a scheme is taken or invalid.
    public func adding(contentsOf backends: [any StoreBackend]) throws(KeepsakeError) -> StoreBackends {
        try StoreBackends(all + backends)
    }

    /// The backend for `scheme`, if there is one.
    public func backend(for scheme: StoreURI.Scheme) -> (any StoreBackend)? {
        all.first { $0.scheme == scheme }
    }

    /// Parses `text` as a URI of one of these backends (see ``StoreURI/init(parsing:backends:environment:)``).
    public func parse(
        _ text: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) -> StoreURI {
        try StoreURI(parsing: text, backends: self, environment: environment)
    }

    /// Opens the store `uri` names with its backend.
    ///
    /// - Throws: ``KeepsakeError/Code/invalidArgument`` naming the store when no backend has
    ///   its scheme, or an option its backend does not use is given that is
    ///   ``StoreOpenOptions/Option/refusedWhereUnused`` (a master key); what the backend throws.
    /// - Important: Opening creates no store and writes no record, whether it returns or throws.
    public func open(_ uri: StoreURI, options: StoreOpenOptions = StoreOpenOptions()) throws(KeepsakeError)
        -> any RecordStore
    {
        guard let backend = backend(for: uri.scheme) else {
            throw KeepsakeError(
                .invalidArgument, store: uri.description, "unknown store kind '\(uri.scheme)'; \(expected)")
        }
        let unusedOptions = options.given.subtracting(backend.acceptedOptions).filter(\.refusedWhereUnused)
        if let unused = unusedOptions.sorted(by: { $0.name < $1.name }).first {
            let users = all.filter { $0.acceptedOptions.contains(unused) }.map { "\($0.scheme):" }
            throw KeepsakeError(
                .invalidArgument, store: uri.description,
                """
                the option \(unused) applies only to \(users.isEmpty ? "no store" : users.joined(separator: ", ")) \
                stores; \(withArticle(uri.scheme.rawValue)): store does not use it, so leave it out or use another store
                """)
        }
        return try backend.open(uri, options: options)
    }

    /// Parses `text` and opens the store it names.
    ///
    /// - Important: Opening creates no store and writes no record, whether it returns or throws.
    public func open(_ text: String, options: StoreOpenOptions = StoreOpenOptions()) throws(KeepsakeError)
        -> any RecordStore
    {
        try open(parse(text), options: options)
    }

    /// The forms of URI these backends take, for messages: `defaults:PATH, file:DIR or keyring:SERVICE`.
    public func forms(persistentOnly: Bool = false) -> String {
        let forms = all.filter { !persistentOnly || $0.persists }.map { "\($0.scheme):\($0.locationName)" }
        guard forms.count > 1, let last = forms.last else { return forms.first ?? "none" }
        return forms.dropLast().joined(separator: ", ") + " or " + last
    }

    /// "a store URI is defaults:PATH, … (a PATH or DIR may start with ~/)".
    var expected: String {
        let paths = all.filter(\.locationIsPath).map(\.locationName)
        var text = "a store URI is \(forms())"
        if !paths.isEmpty {
            var unique: [String] = []
            for name in paths where !unique.contains(name) { unique.append(name) }
            text += " (a \(unique.joined(separator: " or ")) may start with ~/)"
        }
        return text
    }

    static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else {
            return false
        }
        return scheme.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "+-.".unicodeScalars.contains(scalar))
        }
    }
}

/// A store that can say more about where it is than its URI, for `migrate doctor --store`: a
/// server's version, say.
public protocol DiagnosableStore: RecordStore {
    /// One line about the store as it is now (`PostgreSQL 15.18`).
    ///
    /// - Throws: ``KeepsakeError`` naming the store when it cannot be reached.
    /// - Important: Nothing is written, whether this returns or throws.
    func diagnosis() throws(KeepsakeError) -> String
}
