import Foundation
import Synchronization

/// What a migration step may use from the outside world: the clock, a source of new
/// identifiers and this device's identity. Injected so that steps are deterministic in tests.
///
/// ```swift
/// // In an app:
/// let context = MigrationContext.live(deviceIdentity: try DeviceIdentity.derived(appID: "com.example.app"))
/// // In a test:
/// let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000),
///                                      deviceIdentity: "device-1")
/// ```
public struct MigrationContext: Sendable {
    private let clock: @Sendable () -> Date
    private let identifiers: @Sendable () -> String
    /// This device's identity, as steps that record one should store it.
    public let deviceIdentity: String

    public init(
        clock: @escaping @Sendable () -> Date,
        makeIdentifier: @escaping @Sendable () -> String,
        deviceIdentity: String
    ) {
        self.clock = clock
        self.identifiers = makeIdentifier
        self.deviceIdentity = deviceIdentity
    }

    /// The current time, from the context's clock.
    public var now: Date { clock() }

    /// A new unique identifier, from the context's generator.
    public func makeIdentifier() -> String { identifiers() }

    /// The system clock and random UUIDs.
    public static func live(deviceIdentity: String) -> MigrationContext {
        MigrationContext(clock: { Date() }, makeIdentifier: { UUID().uuidString }, deviceIdentity: deviceIdentity)
    }

    /// A stopped clock and identifiers `prefix-1`, `prefix-2`, … in order: for tests and fixtures.
    public static func fixed(now: Date, deviceIdentity: String, identifierPrefix: String = "id") -> MigrationContext {
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
}
