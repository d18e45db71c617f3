import Foundation
import Synchronization

/// What a migration step may use from the outside world: the clock, a source of new
/// identifiers and this device's identity. Injected so that steps are deterministic in tests.
///
/// ```swift
/// // In an app whose steps never record a device: nothing to configure.
/// let context = MigrationContext.live()
/// // In an app whose steps do (TrialInfo's V0 → V1 records `deviceId`): derived on first use.
/// let context = MigrationContext.live(appID: "com.example.notes")
/// // In a test:
/// let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000),
///                                      deviceIdentity: "device-1")
/// ```
///
/// A device identity is needed only by steps that record which device a record belongs to. A
/// context may have none (`/etc/machine-id` is often missing in containers): a step that asks
/// for it then fails that record alone with ``KeepsakeError/Code/deviceIdentityUnavailable``,
/// leaving it as stored, and every other record still migrates.
public struct MigrationContext: Sendable {
    /// One reference, so that passing a context to every step of every record copies a pointer.
    private let sources: Sources
    /// Set for the steps of one record, to notice a step that read a missing identity.
    private let requests: IdentityRequests?

    private var clock: @Sendable () -> Date { sources.clock }
    private var identifiers: @Sendable () -> String { sources.identifiers }
    private var identity: IdentitySource { sources.identity }

    private final class Sources: Sendable {
        let clock: @Sendable () -> Date
        let identifiers: @Sendable () -> String
        let identity: IdentitySource

        init(
            clock: @escaping @Sendable () -> Date, identifiers: @escaping @Sendable () -> String,
            identity: IdentitySource
        ) {
            self.clock = clock
            self.identifiers = identifiers
            self.identity = identity
        }
    }

    /// - Parameters:
    ///   - clock: The current time.
    ///   - makeIdentifier: A new unique identifier per call.
    ///   - deviceIdentity: This device's identity, or `nil` when there is none.
    public init(
        clock: @escaping @Sendable () -> Date,
        makeIdentifier: @escaping @Sendable () -> String,
        deviceIdentity: String? = nil
    ) {
        self.init(
            clock: clock, makeIdentifier: makeIdentifier,
            identity: deviceIdentity.map(IdentitySource.value) ?? .none, requests: nil)
    }

    private init(
        clock: @escaping @Sendable () -> Date, makeIdentifier: @escaping @Sendable () -> String,
        identity: IdentitySource, requests: IdentityRequests?
    ) {
        self.init(sources: Sources(clock: clock, identifiers: makeIdentifier, identity: identity), requests: requests)
    }

    private init(sources: Sources, requests: IdentityRequests?) {
        self.sources = sources
        self.requests = requests
    }

    /// The current time, from the context's clock.
    public var now: Date { clock() }

    /// A new unique identifier, from the context's generator.
    public func makeIdentifier() -> String { identifiers() }

    /// This device's identity, as steps that record one should store it.
    ///
    /// For steps written before identities were optional. When the context has none, this
    /// returns `""` and the pipeline discards the step's result: the record fails with
    /// ``KeepsakeError/Code/deviceIdentityUnavailable`` and is left as stored. New steps should
    /// call ``requireDeviceIdentity()``, which throws instead.
    public var deviceIdentity: String {
        do throws(KeepsakeError) {
            return try requireDeviceIdentity()
        } catch {
            requests?.record(error)
            return ""
        }
    }

    /// This device's identity.
    ///
    /// - Throws: ``KeepsakeError/Code/deviceIdentityUnavailable`` when the context has none or
    ///   it cannot be derived; the record being migrated is then left as stored.
    public func requireDeviceIdentity() throws(KeepsakeError) -> String {
        switch identity {
        case let .value(identity): return identity
        case let .derived(derivation): return try derivation.identity()
        case .none:
            throw KeepsakeError(
                .deviceIdentityUnavailable,
                """
                this migration context has no device identity; build it with \
                MigrationContext.live(appID:) or pass deviceIdentity
                """)
        }
    }

    /// The system clock, random UUIDs, and `deviceIdentity` (none by default).
    public static func live(deviceIdentity: String? = nil) -> MigrationContext {
        MigrationContext(clock: { Date() }, makeIdentifier: { UUID().uuidString }, deviceIdentity: deviceIdentity)
    }

    /// The system clock, random UUIDs, and this device's app-specific identity
    /// (``DeviceIdentity/derived(appID:machineIDPath:)``), derived the first time a step asks
    /// for it — so a machine without a machine id can still load records whose steps need none.
    public static func live(appID: String, machineIDPath: String = "/etc/machine-id") -> MigrationContext {
        MigrationContext(
            clock: { Date() }, makeIdentifier: { UUID().uuidString },
            identity: .derived(Derivation(appID: appID, machineIDPath: machineIDPath)), requests: nil)
    }

    /// A stopped clock and identifiers `prefix-1`, `prefix-2`, … in order: for tests and fixtures.
    public static func fixed(
        now: Date, deviceIdentity: String? = nil, identifierPrefix: String = "id"
    ) -> MigrationContext {
        let counter = Mutex(0)
        return MigrationContext(
            clock: { now },
            makeIdentifier: {
                let next = counter.withLock { value -> Int in
                    value += 1
                    return value
                }
                return "\(identifierPrefix)-\(next)"
            },
            deviceIdentity: deviceIdentity
        )
    }

    /// Used only to re-decode a latest-version record, where no step runs.
    @usableFromInline
    static let verification = MigrationContext(
        clock: { Date(timeIntervalSinceReferenceDate: 0) }, makeIdentifier: { "" }, deviceIdentity: nil)

    // MARK: Tracking one record's steps

    /// A copy whose reads of a missing identity are noticed, for the steps of one record.
    @usableFromInline
    func scopedToOneRecord() -> MigrationContext {
        if case .value = identity { return self }
        return MigrationContext(sources: sources, requests: IdentityRequests())
    }

    /// The error of a step that read ``deviceIdentity`` when there was none.
    @usableFromInline
    func missingDeviceIdentity() -> KeepsakeError? {
        requests?.missing
    }

    private enum IdentitySource: Sendable {
        case value(String)
        case derived(Derivation)
        case none
    }

    /// Derives the identity once, on first use, and remembers the answer (or the failure).
    private final class Derivation: Sendable {
        let appID: String
        let machineIDPath: String
        let result = Mutex<Result<String, KeepsakeError>?>(nil)

        init(appID: String, machineIDPath: String) {
            self.appID = appID
            self.machineIDPath = machineIDPath
        }

        func identity() throws(KeepsakeError) -> String {
            let outcome = result.withLock { cached -> Result<String, KeepsakeError> in
                if let cached { return cached }
                let fresh: Result<String, KeepsakeError>
                do throws(KeepsakeError) {
                    fresh = .success(try DeviceIdentity.derived(appID: appID, machineIDPath: machineIDPath))
                } catch {
                    var error = error
                    error.code = .deviceIdentityUnavailable
                    fresh = .failure(error)
                }
                cached = fresh
                return fresh
            }
            return try outcome.get()
        }
    }

    private final class IdentityRequests: Sendable {
        private let first = Mutex<KeepsakeError?>(nil)

        func record(_ error: KeepsakeError) {
            first.withLock { if $0 == nil { $0 = error } }
        }

        var missing: KeepsakeError? { first.withLock { $0 } }
    }
}
