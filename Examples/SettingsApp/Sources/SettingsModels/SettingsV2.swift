import Foundation
import Keepsake

/// Settings with `fontSize` renamed to `textSize`, a window size and the last sync time:
/// `{"theme", "textSize", "installID", "installedAt", "window", "lastSyncedAt"?}`. Frozen.
public struct SettingsV2: ModelVersion, Equatable {
    public typealias Predecessor = SettingsV1
    public static let version = 2

    /// The main window's size in points. Frozen with ``SettingsV2``.
    public struct Window: Codable, Sendable, Hashable {
        /// The width in points.
        public var width: Int
        /// The height in points.
        public var height: Int

        /// A window size.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }

        /// The size a window opens at when none was saved.
        public static let standard = Window(width: 800, height: 600)
    }

    /// The colour scheme.
    public var theme: Theme
    /// The text size in points (`fontSize` before version 2).
    public var textSize: Int
    /// Identifies this installation.
    public var installID: UUID
    /// When this installation was first seen.
    public var installedAt: Date
    /// The main window's size.
    public var window: Window
    /// When settings were last synced; `nil` (and absent from the record) until the first sync.
    public var lastSyncedAt: Date?

    /// Settings of version 2.
    public init(theme: Theme, textSize: Int, installID: UUID, installedAt: Date, window: Window = .standard,
                lastSyncedAt: Date? = nil) {
        self.theme = theme
        self.textSize = textSize
        self.installID = installID
        self.installedAt = installedAt
        self.window = window
        self.lastSyncedAt = lastSyncedAt
    }

    /// The font size becomes the text size; the window opens at the standard size; nothing was
    /// ever synced.
    public init(migrating previous: SettingsV1, context: MigrationContext) {
        self.init(theme: previous.theme, textSize: previous.fontSize, installID: previous.installID,
                  installedAt: previous.installedAt, window: .standard, lastSyncedAt: nil)
    }
}
