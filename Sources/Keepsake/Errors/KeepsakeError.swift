import Foundation

/// The one error type Keepsake throws.
///
/// Every error carries a ``Code`` you can match, the store and the record key it is about
/// (when there is one), a message written for a person, and the underlying cause
/// (an `errno`, a parse position, a C library status) when there was one.
///
/// ```swift
/// do {
///     let person = try vault.load(Person.chain)
/// } catch where error.code == .newerVersion {
///     // written by a newer release: leave it alone
/// } catch {
///     print(error)  // "<store URI>, key 'person': … (cause)"
/// }
/// ```
///
/// Messages never contain a secret value: record contents are not quoted, only their shape.
public struct KeepsakeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a value you can match. New codes may be added.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name (`"corruptRecord"`), as `migrate --json` prints it.
        public let rawValue: String
        /// A code with this name; codes of other libraries (`wrongKey`) are made this way.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        // MARK: Records
        /// The stored bytes are not valid JSON, or a field has the wrong type or is missing.
        public static let corruptRecord = Code(rawValue: "corruptRecord")
        /// The record is JSON but its layout matches no version of the chain.
        public static let unrecognisedRecord = Code(rawValue: "unrecognisedRecord")
        /// A bare record's key set matches more than one version of the chain.
        public static let ambiguousRecord = Code(rawValue: "ambiguousRecord")
        /// The record was written by a newer release: its version is above the chain's latest.
        public static let newerVersion = Code(rawValue: "newerVersion")
        /// An envelope names another schema than the chain it was read with.
        public static let schemaMismatch = Code(rawValue: "schemaMismatch")
        /// A migration step threw.
        public static let migrationFailed = Code(rawValue: "migrationFailed")
        /// The migrated record did not survive encode → decode → encode unchanged.
        public static let verificationFailed = Code(rawValue: "verificationFailed")
        /// A value could not be encoded for storage.
        public static let encodingFailed = Code(rawValue: "encodingFailed")
        /// The record changed in the store between read and write; nothing was written.
        public static let conflict = Code(rawValue: "conflict")
        /// A save over a newer release's record would lose that release's data: this release
        /// changed the length of an array whose elements hold keys it does not know, or replaced
        /// a structure that holds them. The message names the path; nothing was written.
        public static let mergeRefused = Code(rawValue: "mergeRefused")
        /// The change given to `Vault.update` threw; its error is ``KeepsakeError/underlying``.
        /// Nothing was written.
        public static let updateFailed = Code(rawValue: "updateFailed")
        /// No record is stored under the key (only for calls that require one).
        public static let notFound = Code(rawValue: "notFound")
        /// A migration step needs this device's identity and the migration context has none
        /// (see ``MigrationContext``); that record was left as stored.
        public static let deviceIdentityUnavailable = Code(rawValue: "deviceIdentityUnavailable")

        // MARK: Stores
        /// The store's own data (a defaults document, a store header) is damaged.
        public static let corruptStore = Code(rawValue: "corruptStore")
        /// A file system call failed; `errno` is kept in ``KeepsakeError/cause``.
        public static let io = Code(rawValue: "io")
        /// The file system refused access (EACCES, EPERM, EROFS).
        public static let permissionDenied = Code(rawValue: "permissionDenied")
        /// Another process held the store's lock for longer than the lock timeout.
        public static let lockTimeout = Code(rawValue: "lockTimeout")
        /// The backend is present but locked (a locked keyring collection).
        public static let locked = Code(rawValue: "locked")
        /// The backend cannot be reached at all (no session bus, no provider, no directory).
        public static let unavailable = Code(rawValue: "unavailable")
        /// A call did not finish before its deadline.
        public static let timeout = Code(rawValue: "timeout")
        /// A caller passed something the store cannot accept (an empty key, a bad location).
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// The store cannot hold this value as given — a defaults suite holds one JSON value, the
        /// keyring UTF-8 text, and KeePassXC would return placeholders expanded — so nothing was
        /// written; the message says what the store holds.
        public static let valueRefused = Code(rawValue: "valueRefused")
        /// Writing a backup copy of a record failed; the record itself was not written.
        public static let backupFailed = Code(rawValue: "backupFailed")
    }

    /// The underlying cause, kept for diagnostics and matching.
    public enum Cause: Sendable, Equatable, CustomStringConvertible {
        /// A failed system call and its `errno`.
        case posix(call: String, errno: Int32)
        /// A JSON syntax error at a byte offset.
        case json(offset: Int, reason: String)
        /// A decoding error, with the coding path that failed.
        case decoding(path: String, reason: String)
        /// A C library status (domain, code, message), for the libsodium and libsecret stores.
        case library(domain: String, code: Int, message: String)
        /// Any other error, described.
        case other(String)

        public var description: String {
            switch self {
            case let .posix(call, errno):
                return "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
            case let .json(offset, reason):
                return "JSON syntax error at byte \(offset): \(reason)"
            case let .decoding(path, reason):
                return path.isEmpty ? reason : "at \(path): \(reason)"
            case let .library(domain, code, message):
                return "\(domain) \(code): \(message)"
            case let .other(text):
                return text
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// The store, as its URI (``StoreURI``: `scheme:location`).
    public var store: String?
    /// The record key, when the error is about one record.
    public var key: String?
    /// A sentence for a person: what happened and, where it helps, what to do.
    public var message: String
    /// The underlying cause, when there is one.
    public var cause: Cause?
    /// The error that caused this one, as it was thrown: an app's own error from its migration
    /// step, a `DecodingError`, an `Encodable` conformance's error. Match it with
    /// ``underlying(as:)``.
    public var underlying: (any Error)?
    /// Whether the write this error is about may have been applied all the same: a server
    /// store sent it, then lost the answer with the connection (the code is then
    /// ``Code/unavailable`` or ``Code/timeout``). Every other failed write left the store as it
    /// was. Read the key again before trying such a write again: an increment tried again
    /// blindly may count twice.
    ///
    /// ```swift
    /// do {
    ///     try vault.save(settings, for: .settings)
    /// } catch where error.mayHaveBeenApplied {
    ///     let stored = try vault.load(.settings)?.value  // this save's value, or the one before
    /// }
    /// ```
    public var mayHaveBeenApplied: Bool

    /// An error with `code` and a `message` for a person, naming the `store` and the `key` it is
    /// about where there are ones, with its `cause` and the `underlying` error that was thrown;
    /// `mayHaveBeenApplied` for a write whose answer was lost after it was sent.
    public init(
        _ code: Code, store: String? = nil, key: String? = nil, _ message: String, cause: Cause? = nil,
        underlying: (any Error)? = nil, mayHaveBeenApplied: Bool = false
    ) {
        self.code = code
        self.store = store
        self.key = key
        self.message = message
        self.cause = cause
        self.underlying = underlying
        self.mayHaveBeenApplied = mayHaveBeenApplied
    }

    /// The underlying error as the app's own type, when it is one: how an app catches the
    /// errors its own migration steps throw.
    ///
    /// ```swift
    /// do {
    ///     _ = try vault.load(.settings)
    /// } catch let error where error.underlying(as: SettingsMigrationError.self) == .unknownTheme {
    ///     // the app's own step refused the stored theme
    /// }
    /// ```
    public func underlying<E: Error>(as type: E.Type) -> E? {
        if let match = underlying as? E { return match }
        if let nested = underlying as? KeepsakeError { return nested.underlying(as: type) }
        return nil
    }

    /// Errors are equal when their code, store, key, message, cause and
    /// ``mayHaveBeenApplied`` are; the underlying errors are compared by their descriptions.
    public static func == (lhs: KeepsakeError, rhs: KeepsakeError) -> Bool {
        lhs.code == rhs.code && lhs.store == rhs.store && lhs.key.map(ExactString.init) == rhs.key.map(ExactString.init)
            && lhs.message == rhs.message
            && lhs.cause == rhs.cause && lhs.mayHaveBeenApplied == rhs.mayHaveBeenApplied
            && lhs.underlying.map { String(describing: $0) } == rhs.underlying.map { String(describing: $0) }
    }

    /// `store`, `key: message (cause)` on one line.
    public var description: String {
        var text = ""
        if let store { text += store }
        if let key { text += (text.isEmpty ? "" : ", ") + "key '\(key)'" }
        if !text.isEmpty { text += ": " }
        text += message
        if let cause { text += " (\(cause))" }
        return text
    }

    /// The `errno` of the underlying system call, if the cause was one.
    public var errno: Int32? {
        if case let .posix(_, value) = cause { return value }
        return nil
    }

    /// A copy naming `store` and `key` where they were not yet set.
    @usableFromInline
    package func located(store: String?, key: String?) -> KeepsakeError {
        var copy = self
        if copy.store == nil { copy.store = store }
        if copy.key == nil { copy.key = key }
        return copy
    }
}

extension KeepsakeError: LocalizedError {
    public var errorDescription: String? { description }
}
