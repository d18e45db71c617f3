import Foundation
import Keepsake

/// The trial record without a user: `{"version": 2, "startDate", "deviceId"}`. Frozen.
public struct TrialInfoV2: ModelVersion, Equatable {
    public typealias Predecessor = TrialInfoV1
    public static let version = 2

    public let version: Int
    public let startDate: Date
    public let deviceId: String

    public init(startDate: Date, deviceId: String) {
        self.version = Self.version
        self.startDate = startDate
        self.deviceId = deviceId
    }

    /// Keeps the start date and device; drops the user.
    public init(migrating previous: TrialInfoV1, context: MigrationContext) {
        self.init(startDate: previous.startDate, deviceId: previous.deviceId)
    }
}
