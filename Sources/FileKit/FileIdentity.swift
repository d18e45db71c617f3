import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What identifies one version of a file without reading it: device, inode, size, and the
/// modification and status-change times to the nanosecond. The stores that trust a file they
/// read before by its identity (the defaults suite's cache, the encrypted file store's seen
/// records) share it, and the rule for when that trust is earned: ``isSettled(changed:readAt:)``.
package struct FileIdentity: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modified: timespec
    package var changed: timespec

    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    package static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
            && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
    }

    /// How far (whole seconds) a file system's timestamps may lag the clock (coarse ticks, 1 s
    /// or 2 s granularity on some file systems).
    package static let settledSeconds = 2

    /// Whether a version stamped `changed` and read at `readAt` (`CLOCK_REALTIME`) can be known
    /// by its identity alone from then on: its status-change time, in whole seconds, more than
    /// ``settledSeconds`` before the second it was read in — so it was at least 2 s old, and
    /// every version at least 3 s old qualifies. Any later change gets a status-change time at
    /// or after that read, so its identity differs.
    package static func isSettled(changed: timespec, readAt: timespec) -> Bool {
        changed.tv_sec + settledSeconds < readAt.tv_sec
    }
}
