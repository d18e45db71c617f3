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
        /// The provider asks the user to confirm every read by another program (KeePassXC's
        /// "Confirm when passwords are retrieved by clients", `[FdoSecrets] ConfirmAccessItem`):
        /// Keepsake never answers such a prompt, so reads of items it did not create would throw
        /// `.locked`. The error names the setting to turn off.
        case confirmationRequired
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

    /// The program that provides the Secret Service (gnome-keyring, KeePassXC, KWallet, …),
    /// found through the bus without contacting it; `nil` when no provider was reached.
    public internal(set) var provider: KeyringProvider?

    /// Whether ``status`` is ``Status/usable``.
    public var isUsable: Bool { status == .usable }

    /// `usable (default collection /org/freedesktop/secrets/collection/login)`, or the status
    /// and the error's message.
    public var description: String {
        switch (status, error) {
        case (.usable, _):
            let note = sandbox.kind == .none ? "" : "; \(sandbox.secretServiceNote)"
            return "usable (default collection \(defaultCollection ?? "?"))\(providerNote)\(note)"
        case let (_, error?):
            return "\(status.rawValue): \(error.message)\(error.cause.map { " (\($0))" } ?? "")\(providerNote)"
        case (_, nil): return status.rawValue + providerNote
        }
    }

    /// `; provider KeePassXC 2.7.4 (keepassxc, pid 4242)`, or nothing when none was reached.
    private var providerNote: String {
        provider.map { "; provider \($0)" } ?? ""
    }

    /// Connects to the session bus, opens the Secret Service (and a session) and reads the
    /// default collection's lock state, all within `timeout`. Never prompts, never writes.
    static func run(timeout: Duration) -> KeyringDiagnosis {
        let store: String? = nil  // not about one service; open(service:timeout:) names its store
        var provider: KeyringProvider?
        var diagnosis = run(timeout: timeout, store: store, provider: &provider)
        diagnosis.provider = provider
        return diagnosis
    }

    private static func run(timeout: Duration, store: String?, provider: inout KeyringProvider?) -> KeyringDiagnosis {
        do throws(LibsecretFailure) {
            // A connection of its own, closed when the check ends.
            let found = try LibsecretChannel().call(timeout: timeout) { call throws(LibsecretFailure) in
                // Who provides the service, asked of the bus before the provider is asked
                // anything, so that a provider that then hangs is still named.
                do throws(LibsecretFailure) {
                    provider = KeyringProvider.identify(processID: try call.providerProcessID())
                } catch  where error.kind != .timedOut {
                    provider = KeyringProvider(
                        kind: .unknown, processName: nil, processID: nil, version: nil,
                        note: "the bus did not say which process owns \(call.providerName): \(error.message)")
                }
                return try call.defaultCollection()
            }
            /// Not usable: `status`, with an error of `kind` saying `message`.
            func unusable(
                _ status: Status, _ kind: LibsecretFailure.Kind, collection: String?, _ message: String
            ) -> KeyringDiagnosis {
                let failure = LibsecretFailure(stage: .readAlias, kind: kind, message: message)
                return KeyringDiagnosis(
                    status: status, defaultCollection: collection,
                    error: failure.keepsakeError(store: store, key: nil, timeout: timeout))
            }
            guard let collection = found else {
                return unusable(
                    .noDefaultCollection, .noDefaultCollection, collection: nil,
                    "the Secret Service has no default collection; create a keyring first")
            }
            let path = collection.path
            guard !collection.isLocked else {
                return unusable(
                    .locked, .locked, collection: path,
                    "the default collection \(path) is locked; unlock the keyring and try again")
            }
            if let prompts = provider?.prompts, prompts.confirmsAccess {
                return unusable(
                    .confirmationRequired, .locked, collection: path,
                    """
                    KeePassXC asks the user to confirm every read by another program, which Keepsake never \
                    answers, so records it did not write would read as locked; turn off "Confirm when \
                    passwords are retrieved by clients" (Settings → Secret Service Integration), that is \
                    ConfirmAccessItem=false under [FdoSecrets] in \(prompts.file)
                    """)
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
                error: error, sandbox: sandbox, provider: diagnosis.provider)
        }
        return diagnosis
    }
}
