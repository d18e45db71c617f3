import Foundation
import Keepsake

/// The trial record as the first release stored it: `{"version": 0, "startDate"}`. Frozen.
public struct TrialInfoV0: ModelVersion, Equatable {
    public static let version = 0

    /// Always 0: the record carries its own version.
    public let version: Int
    /// When the trial started. Never changed by a migration.
    public let startDate: Date

    public init(startDate: Date) {
        self.version = Self.version
        self.startDate = startDate
    }
}
