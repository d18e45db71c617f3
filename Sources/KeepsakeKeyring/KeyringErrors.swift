import Keepsake

extension LibsecretFailure {
    /// The ``KeepsakeError`` a store call throws for this failure: the code says what it
    /// means (`.timeout`, `.unavailable`, `.locked`, `.io`); the GError is kept as the cause.
    func keepsakeError(store: String?, key: String?, timeout: Duration) -> KeepsakeError {
        let cause: KeepsakeError.Cause? = domain.map { .library(domain: $0, code: code, message: message) }
        // A failure Keepsake found itself carries its own sentence; a GError gets one that
        // says what it means, and the GError's text stays in the cause.
        let own = domain == nil ? message : nil
        let errorCode: KeepsakeError.Code
        let meaning: String
        switch kind {
        case .timedOut:
            errorCode = .timeout
            meaning =
                "the Secret Service did not answer within \(Self.describe(timeout)) while \(stage.rawValue); the keyring daemon may be hung"
        case .noSessionBus:
            errorCode = .unavailable
            meaning =
                "no D-Bus session bus could be reached (is DBUS_SESSION_BUS_ADDRESS set?); the keyring needs a desktop or dbus-run-session session"
        case .noProvider:
            errorCode = .unavailable
            meaning =
                "no Secret Service provider (such as gnome-keyring-daemon) is running or activatable on the session bus"
        case .noDefaultCollection:
            errorCode = .unavailable
            meaning = "the Secret Service has no default collection; create a keyring first"
        case .locked:
            errorCode = .locked
            meaning = "the keyring is locked; unlock it and try again"
        case .other where stage == .connectBus || stage == .openService:
            errorCode = .unavailable
            meaning = "the Secret Service could not be reached while \(stage.rawValue)"
        case .other:
            errorCode = .io
            meaning = "the Secret Service failed while \(stage.rawValue)"
        }
        return KeepsakeError(errorCode, store: store, key: key, own ?? meaning, cause: cause)
    }

    /// `5 s`, `250 ms`.
    static func describe(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(milliseconds) ms"
    }
}
