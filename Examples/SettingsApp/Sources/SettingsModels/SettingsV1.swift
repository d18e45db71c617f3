import Foundation
import Keepsake

/// The app's colour scheme, from version 1 on.
///
/// Frozen with ``SettingsV1``: stored records hold these raw values, so a case is never renamed
/// or removed. A new case is a new version of the chain (older releases could not read it).
public enum Theme: String, Codable, Sendable, Hashable {
    /// Dark text on a light background.
    case light
    /// Light text on a dark background.
    case dark
    /// Follow the desktop's preference.
    case system
}

/// Settings with a theme instead of a dark-mode switch, and an install identity:
/// `{"theme", "fontSize", "installID", "installedAt"}`. Frozen.
public struct SettingsV1: ModelVersion, Equatable {
    public typealias Predecessor = SettingsV0
    public static let version = 1

    /// The colour scheme.
    public let theme: Theme
    /// The text size in points.
    public let fontSize: Int
    /// Identifies this installation (sent with crash reports, never with personal data).
    public let installID: UUID
    /// When this installation was first seen.
    public let installedAt: Date

    /// Settings of version 1.
    public init(theme: Theme, fontSize: Int, installID: UUID, installedAt: Date) {
        self.theme = theme
        self.fontSize = fontSize
        self.installID = installID
        self.installedAt = installedAt
    }

    /// Dark mode becomes the dark theme, anything else the light one (what the user saw). The
    /// install gets a new identity, and the time of this upgrade as its install date: the first
    /// release kept none.
    public init(migrating previous: SettingsV0, context: MigrationContext) {
        self.init(theme: previous.darkMode ? .dark : .light, fontSize: previous.fontSize,
                  installID: UUID(installIdentifier: context.makeIdentifier()), installedAt: context.now)
    }
}

extension UUID {
    /// The UUID a migration identifier names: the identifier itself when it is a UUID (a live
    /// context makes random UUIDs), otherwise a version-8 UUID hashed from it, so that a fixed
    /// test context (`id-1`, `id-2`, …) gives the same UUID on every run.
    ///
    /// The hash: 64-bit FNV-1a of `"installID-1:" + identifier` and of `"installID-2:" +
    /// identifier`, each passed through the SplitMix64 finalizer, big-endian, then the version
    /// and variant bits set. Frozen with ``SettingsV1``: stored records depend on it.
    init(installIdentifier identifier: String) {
        if let uuid = UUID(uuidString: identifier) {
            self = uuid
            return
        }
        func hash(_ text: String) -> UInt64 {
            var value: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in text.utf8 { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            value = (value ^ (value >> 30)) &* 0xbf58_476d_1ce4_e5b9
            value = (value ^ (value >> 27)) &* 0x94d0_49bb_1331_11eb
            return value ^ (value >> 31)
        }
        var bytes: [UInt8] = []
        for half in [hash("installID-1:" + identifier), hash("installID-2:" + identifier)] {
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: half >> ($0 * 8)) }
        }
        bytes[6] = bytes[6] & 0x0F | 0x80  // version 8: custom
        bytes[8] = bytes[8] & 0x3F | 0x80  // variant: RFC 9562
        self = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
