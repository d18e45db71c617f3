internal import CLibsecret

/// A failed libsecret or GDBus call: the GError it returned, where in the conversation it
/// happened, and what it means for the store.
///
/// Built only from a `GError` (``init(stage:error:deadline:)``), which is freed there.
struct LibsecretFailure: Error, Sendable {
    /// The step of a conversation with the Secret Service.
    enum Stage: String, Sendable {
        case connectBus = "connecting to the session bus"
        case openService = "opening the Secret Service"
        case readAlias = "reading the default collection"
        case search = "searching items"
        case readSecret = "reading a secret"
        case createItem = "creating an item"
        case setSecret = "replacing a secret"
        case deleteItem = "deleting an item"
        case identifyProvider = "asking the bus which process provides the Secret Service"
    }

    /// What the failure means, independent of the GError's wording.
    enum Kind: Sendable, Equatable {
        /// The deadline fired (our `GCancellable`), or D-Bus itself timed out.
        case timedOut
        /// No session bus could be reached.
        case noSessionBus
        /// The bus has no Secret Service provider, and none can be activated.
        case noProvider
        /// The provider has no default collection (no keyring was ever created).
        case noDefaultCollection
        /// The collection or item is locked.
        case locked
        /// Anything else.
        case other
    }

    var stage: Stage
    var kind: Kind
    /// The GError's domain (`g-io-error-quark`, `g-dbus-error-quark`, `secret-error`), or
    /// `nil` for a failure Keepsake found itself (a locked collection seen by a lookup).
    var domain: String?
    var code: Int
    var message: String
    /// Whether the failure says that this process's connection or secret session no longer
    /// exists (the daemon restarted, the bus went away) or cannot carry secrets (KWallet derived
    /// another key for it): the call may run again on a new session. The request was refused,
    /// or only its answer could not be decrypted; see ``LibsecretCall/isRetry`` for what a
    /// refused `CreateItem` may still leave.
    var isStaleLink = false

    /// Whether the failure says that the object the request named is not there (any more): an
    /// item another client deleted between a search that found it and a request about it.
    /// gnome-keyring answers "No such interface … on object at path …" (UnknownMethod), Qt
    /// providers UnknownObject, KWallet to GetSecrets InvalidArgs "Can't find item at path …",
    /// and the Secret Service's own error is NoSuchObject. Never a
    /// stale link ("Can't find session" is KWallet's word for a session, not an item).
    var isVanishedObject = false

    /// Whether the provider refused to open a session because of the length of the public key
    /// libsecret sent (KWallet wants exactly 128 bytes; one random key in 256 is shorter).
    var isRefusedPublicKey: Bool { message.contains("Client public key size is invalid") }

    /// A failure found by Keepsake rather than reported by libsecret.
    init(stage: Stage, kind: Kind, message: String, isStaleLink: Bool = false) {
        self.isStaleLink = isStaleLink
        self.stage = stage
        self.kind = kind
        self.domain = nil
        self.code = 0
        self.message = message
    }

    /// Classifies and frees `error`.
    ///
    /// - Parameters:
    ///   - deadlineExpired: Whether our deadline's `GCancellable` was cancelled: then a
    ///     `G_IO_ERROR_CANCELLED` is a timeout, not a user cancellation.
    init(stage: Stage, error: UnsafeMutablePointer<GError>?, deadlineExpired: Bool) {
        self.stage = stage
        guard let error else {
            // libsecret returns FALSE without a GError only for programmer errors (an
            // attribute outside the schema); keep that visible rather than inventing a code.
            domain = nil
            code = 0
            message = "libsecret reported a failure without an error (\(stage.rawValue))"
            kind = deadlineExpired ? .timedOut : .other
            return
        }
        defer { g_error_free(error) }
        let quark = error.pointee.domain
        domain = String(cString: g_quark_to_string(quark))
        code = Int(error.pointee.code)
        message = error.pointee.message.map { String(cString: $0) } ?? ""

        let ioError = g_io_error_quark()
        let dbusError = g_dbus_error_quark()
        let secretError = secret_error_get_quark()
        let raw = error.pointee.code
        let remoteName = keepsake_remote_error_name(error).map { name in
            defer { g_free(name) }
            return String(cString: name)
        }
        // Requests go to the unique name of the daemon that opened the session: when that name
        // has no owner any more, the daemon was replaced (or stopped).
        isStaleLink =
            remoteName == "org.freedesktop.Secret.Error.NoSession"
            // KWallet's words for a session it refused to open because libsecret's random public
            // key happened to start with a zero byte (one open in 256), and for a secret it
            // could not decrypt with the session (InvalidObjectPath from CreateItem,
            // UnknownObject from SetSecret): a session it no longer has, or one whose key it
            // derived differently (see LibsecretCall.undecodable). Fine on a new session.
            || ((remoteName == "org.qtproject.QtDBus.Error.InvalidObjectPath"
                || remoteName == "org.freedesktop.DBus.Error.UnknownObject")
                && message.contains("Can't find session"))
            || message.contains("Client public key size is invalid")
            || (quark == ioError && raw == Int32(G_IO_ERROR_CLOSED.rawValue))
            || (quark == dbusError
                && (raw == Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue)
                    || raw == Int32(G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue)))
        isVanishedObject =
            !isStaleLink
            && (remoteName == "org.freedesktop.Secret.Error.NoSuchObject"
                || ((remoteName == "org.freedesktop.DBus.Error.UnknownMethod"
                    || remoteName == "org.freedesktop.DBus.Error.UnknownInterface"
                    || remoteName == "org.freedesktop.DBus.Error.UnknownObject")
                    && message.contains("/org/freedesktop/secrets/"))
                || (remoteName == "org.freedesktop.DBus.Error.InvalidArgs" && message.contains("Can't find item")))
        if quark == ioError && raw == Int32(G_IO_ERROR_CANCELLED.rawValue) && deadlineExpired {
            kind = .timedOut
        } else if quark == ioError && raw == Int32(G_IO_ERROR_TIMED_OUT.rawValue) {
            kind = .timedOut
        } else if quark == dbusError
            && (raw == Int32(G_DBUS_ERROR_NO_REPLY.rawValue) || raw == Int32(G_DBUS_ERROR_TIMEOUT.rawValue)
                || raw == Int32(G_DBUS_ERROR_TIMED_OUT.rawValue))
        {
            kind = .timedOut
        } else if stage == .connectBus {
            kind = .noSessionBus
        } else if quark == dbusError
            && (raw == Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue)
                || raw == Int32(G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue)
                || raw == Int32(G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND.rawValue)
                || raw == Int32(G_DBUS_ERROR_SPAWN_EXEC_FAILED.rawValue)
                || raw == Int32(G_DBUS_ERROR_SPAWN_CHILD_EXITED.rawValue)
                || raw == Int32(G_DBUS_ERROR_SPAWN_FAILED.rawValue))
        {
            kind = .noProvider
        } else if quark == dbusError && raw == Int32(G_DBUS_ERROR_DISCONNECTED.rawValue) {
            kind = .noSessionBus
        } else if (quark == secretError && raw == Int32(SECRET_ERROR_IS_LOCKED.rawValue))
            || remoteName == "org.freedesktop.Secret.Error.IsLocked"
        {
            kind = .locked
        } else {
            kind = .other
        }
    }
}
