import Foundation
import Keepsake

/// The trial record with the device and user it belongs to:
/// `{"version": 1, "startDate", "deviceId", "userId"}`. Frozen.
public struct TrialInfoV1: ModelVersion, Equatable {
    public typealias Predecessor = TrialInfoV0
    public static let version = 1

    public let version: Int
    public let startDate: Date
    public let deviceId: String
    public let userId: String

    public init(startDate: Date, deviceId: String, userId: String) {
        self.version = Self.version
        self.startDate = startDate
        self.deviceId = deviceId
        self.userId = userId
    }

    /// Keeps the start date; the device is this device, the user a new identifier.
    public init(migrating previous: TrialInfoV0, context: MigrationContext) {
        self.init(startDate: previous.startDate, deviceId: context.deviceIdentity, userId: context.makeIdentifier())
    }
}
