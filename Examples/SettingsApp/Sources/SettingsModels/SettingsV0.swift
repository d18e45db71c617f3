import Keepsake

/// Settings as the first release stored them: `{"darkMode": true, "fontSize": 13}`, bare —
/// no version number, no envelope. Frozen: records like this are on users' disks, so this type
/// never changes.
public struct SettingsV0: ModelVersion, Equatable {
    public static let version = 0

    /// Whether the app was dark.
    public let darkMode: Bool
    /// The text size in points.
    public let fontSize: Int

    /// Settings of the first release.
    public init(darkMode: Bool, fontSize: Int) {
        self.darkMode = darkMode
        self.fontSize = fontSize
    }
}
