import Keepsake

/// Whether the keyring can be used right now, and if not, why: what `migrate doctor` reports.
///
/// ```swift
/// let diagnosis = KeyringStore.diagnose(timeout: .seconds(2))
/// print("keyring:", diagnosis)          // "keyring: usable (default collection /org/…/login)"
/// if let error = diagnosis.error { print(error.cause ?? "") }
/// ```
public struct KeyringDiagnosis: Sendable, Equatable, CustomStringConvertible {
    /// The outcome of the check, from the first step that failed.
    public enum Status: String, Sendable, Equatable, CaseIterable {
        /// A session bus, a Secret Service provider, and an unlocked default collection.
        case usable
        /// No D-Bus session bus could be reached.
        case noSessionBus
        /// The session bus has no Secret Service provider, and none can be activated.
        case noProvider
        /// The provider answers but has no default collection (no keyring was created).
        case noDefaultCollection
        /// The default collection is locked: reads and writes would throw `.locked`.
        case locked
        /// The provider did not answer before the deadline (a hung daemon).
        case timedOut
        /// Another failure; see ``KeyringDiagnosis/error``.
        case failed
    }

    /// What was found.
    public let status: Status
    /// The D-Bus object path of the default collection, when one was found.
    public let defaultCollection: String?
    /// Why the keyring cannot be used — code `.unavailable`, `.locked`, `.timeout` or `.io`,
    /// with the GError kept as the cause — or `nil` when ``status`` is ``Status/usable``.
    public let error: KeepsakeError?

    /// The sandbox the check ran in: inside Flatpak or Snap, ``description`` and the error's
    /// message say what the app must request for the Secret Service to be reachable.
    public internal(set) var sandbox: Sandbox = .unconfined

    /// Whether ``status`` is ``Status/usable``.
    public var isUsable: Bool { status == .usable }

    /// `usable (default collection /org/freedesktop/secrets/collection/login)`, or the status
    /// and the error's message.
    public var description: String {
        switch (status, error) {
        case (.usable, _):
            let note = sandbox.kind == .none ? "" : "; \(sandbox.secretServiceNote)"
            return "usable (default collection \(defaultCollection ?? "?"))\(note)"
        case let (_, error?): return "\(status.rawValue): \(error.message)\(error.cause.map { " (\($0))" } ?? "")"
        case (_, nil): return status.rawValue
        }
    }

    /// Connects to the session bus, opens the Secret Service (and a session) and reads the
    /// default collection's lock state, all within `timeout`. Never prompts, never writes.
    static func run(timeout: Duration) -> KeyringDiagnosis {
        let store: String? = nil  // not about one service; open(service:timeout:) names its store
        do throws(LibsecretFailure) {
            // A connection of its own, closed when the check ends.
            let found = try LibsecretChannel().call(timeout: timeout) { call throws(LibsecretFailure) in
                try call.defaultCollection()
            }
            guard let collection = found else {
                let failure = LibsecretFailure(
                    stage: .readAlias, kind: .noDefaultCollection,
                    message:
                        "the Secret Service has no default collection; create a keyring first")
                return KeyringDiagnosis(
                    status: .noDefaultCollection, defaultCollection: nil,
                    error: failure.keepsakeError(store: store, key: nil, timeout: timeout))
            }
            let path = collection.path
            guard !collection.isLocked else {
                let failure = LibsecretFailure(
                    stage: .readAlias, kind: .locked,
                    message:
                        "the default collection \(path) is locked; unlock the keyring and try again")
                return KeyringDiagnosis(
                    status: .locked, defaultCollection: path,
                    error: failure.keepsakeError(store: store, key: nil, timeout: timeout))
            }
            return KeyringDiagnosis(status: .usable, defaultCollection: path, error: nil)
        } catch {
            let status: Status
            switch error.kind {
            case .timedOut: status = .timedOut
            case .noSessionBus: status = .noSessionBus
            case .noProvider: status = .noProvider
            case .noDefaultCollection: status = .noDefaultCollection
            case .locked: status = .locked
            case .other: status = .failed
            }
            return KeyringDiagnosis(
                status: status, defaultCollection: nil,
                error: error.keepsakeError(store: store, key: nil, timeout: timeout))
        }
    }
}

extension KeyringStore {
    /// Checks, within `timeout` and without prompting, whether the keyring can be used:
    /// a session bus, a Secret Service provider, an unlocked default collection. For
    /// `migrate doctor`; ``open(service:timeout:)`` runs the same check.
    ///
    /// Never throws: every failure is a ``KeyringDiagnosis/Status`` with its error.
    ///
    /// - Parameters:
    ///   - timeout: The deadline of the whole check.
    ///   - sandbox: The sandbox the app runs in (detected when not given). Inside one, a
    ///     failure's message ends with what the app must request
    ///     (`--talk-name=org.freedesktop.secrets` for Flatpak, the `password-manager-service`
    ///     interface for Snap).
    public static func diagnose(
        timeout: Duration = KeyringStore.defaultTimeout, sandbox: Sandbox = .current
    ) -> KeyringDiagnosis {
        var diagnosis = KeyringDiagnosis.run(timeout: max(timeout, .milliseconds(1)))
        diagnosis.sandbox = sandbox
        if sandbox.kind != .none, var error = diagnosis.error,
            [.noSessionBus, .noProvider, .timedOut, .failed].contains(diagnosis.status)
        {
            error.message += " (\(sandbox.secretServiceNote))"
            diagnosis = KeyringDiagnosis(
                status: diagnosis.status, defaultCollection: diagnosis.defaultCollection,
                error: error, sandbox: sandbox)
        }
        return diagnosis
    }
}
