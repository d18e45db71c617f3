import Keepsake

extension LibsecretFailure {
    /// The ``KeepsakeError`` a store call throws for this failure: the code says what it
    /// means (`.timeout`, `.unavailable`, `.locked`, `.io`); the GError is kept as the cause.
    func keepsakeError(store: String?, key: String?, timeout: Duration) -> KeepsakeError {
        let cause: KeepsakeError.Cause? = domain.map { .library(domain: $0, code: code, message: message) }
        // A failure Keepsake found itself carries its own sentence; a GError gets one that
        // says what it means, and the GError's text stays in the cause.
        let own = domain == nil ? message : nil
        switch kind {
        case .timedOut:
            return KeepsakeError(
                .timeout, store: store, key: key,
                own
                    ?? "the Secret Service did not answer within \(Self.describe(timeout)) while \(stage.rawValue); the keyring daemon may be hung",
                cause: cause)
        case .noSessionBus:
            return KeepsakeError(
                .unavailable, store: store, key: key,
                own
                    ?? "no D-Bus session bus could be reached (is DBUS_SESSION_BUS_ADDRESS set?); the keyring needs a desktop or dbus-run-session session",
                cause: cause)
        case .noProvider:
            return KeepsakeError(
                .unavailable, store: store, key: key,
                own
                    ?? "no Secret Service provider (such as gnome-keyring-daemon) is running or activatable on the session bus",
                cause: cause)
        case .noDefaultCollection:
            return KeepsakeError(
                .unavailable, store: store, key: key,
                own ?? "the Secret Service has no default collection; create a keyring first", cause: cause)
        case .locked:
            return KeepsakeError(
                .locked, store: store, key: key, own ?? "the keyring is locked; unlock it and try again", cause: cause)
        case .other where stage == .connectBus || stage == .openService:
            return KeepsakeError(
                .unavailable, store: store, key: key,
                own ?? "the Secret Service could not be reached while \(stage.rawValue)", cause: cause)
        case .other:
            return KeepsakeError(
                .io, store: store, key: key, own ?? "the Secret Service failed while \(stage.rawValue)", cause: cause)
        }
    }

    /// `5 s`, `250 ms`.
    static func describe(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(milliseconds) ms"
    }
}
