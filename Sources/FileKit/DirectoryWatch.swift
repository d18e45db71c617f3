import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An inotify watch on one directory, read on a thread of its own: every entry written,
/// renamed into or out of, or removed from the directory is reported by name (an atomic
/// replace is seen as `IN_MOVED_TO` on the directory: the old file's inode is gone, so a watch
/// on the file itself would miss it). A queue overflow reports `nil`: anything may have changed.
///
/// When the directory itself goes away (removed, or renamed: `rm -r`, then a copy restored from
/// a backup), that is reported as `nil` too, and the path is looked at every quarter of a second
/// until a directory is there again; then it is watched again and reported as `nil` once more —
/// so a watch never goes blind for good.
package final class DirectoryWatch: Sendable {
    private let inotify: Int32
    /// A pipe's write end, written to wake the reading thread when the watch is stopped.
    private let wake: Int32

    /// Watches `directory` (which must exist) and calls `report` on the watch's thread with
    /// each changed entry's name, or `nil` after an overflow, until ``stop()``.
    ///
    /// `opened` is called once the watch is set up, just before its thread starts, and `closed`
    /// on that thread once it has ended and closed its descriptors: the engine counts the
    /// watches open in the process with them (its `WatchCount`).
    package init(
        _ directory: String, opened: () -> Void, closed: @escaping @Sendable () -> Void,
        report: @escaping @Sendable (String?) -> Void
    ) throws(SystemFailure) {
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        guard inotify >= 0 else { throw SystemFailure(call: "inotify_init1", errno: errno) }
        guard inotify_add_watch(inotify, directory, Self.mask) >= 0 else {
            let failure = SystemFailure(call: "inotify_add_watch", errno: errno)
            close(inotify)
            throw failure
        }
        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else {
            let failure = SystemFailure(call: "pipe", errno: errno)
            close(inotify)
            throw failure
        }
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let (wakeRead, wakeWrite) = (pipe[0], pipe[1])
        self.inotify = inotify
        self.wake = wakeWrite
        opened()
        let thread = Thread {
            Self.read(inotify: inotify, directory: directory, wake: wakeRead, report: report)
            close(inotify)
            close(wakeRead)
            close(wakeWrite)
            closed()
        }
        thread.name = "keepsake.watch"
        thread.start()
    }

    /// Stops the watch: its thread ends and closes its descriptors.
    package func stop() {
        var one: UInt8 = 1
        _ = write(wake, &one, 1)
    }

    /// What is watched: entries written, moved in or out, created, removed — and the directory
    /// itself removed or moved away.
    private static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)

    private static func read(
        inotify: Int32, directory: String, wake: Int32, report: @Sendable (String?) -> Void
    ) {
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        var descriptors = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
        ]
        /// Whether the directory went away and is waited for.
        var gone = false
        while true {
            let ready = poll(&descriptors, 2, gone ? 250 : -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[1].revents != 0 { return }
            if gone {
                // Back? Watch it again (a directory made in its place, or restored) and say that
                // anything may have changed.
                if inotify_add_watch(inotify, directory, mask) >= 0 {
                    gone = false
                    report(nil)
                }
                if ready == 0 { continue }
            }
            guard descriptors[0].revents & Int16(POLLIN) != 0 else {
                if descriptors[0].revents != 0 { return }  // error or hang-up
                continue
            }
            let count = Glibc.read(inotify, buffer, size)
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            var offset = 0
            // Each event: a fixed header, then `len` bytes of NUL-padded name.
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameLength = Int(event.len)
                guard offset + header + nameLength <= count else { break }
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    report(nil)
                } else if event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                    // The directory went away (a moved one is still watched where it went: stop).
                    _ = inotify_rm_watch(inotify, event.wd)
                    if !gone {
                        gone = true
                        report(nil)
                    }
                } else if nameLength > 0 {
                    let bytes = UnsafeRawBufferPointer(start: buffer + offset + header, count: nameLength)
                    let name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                    report(name)
                }
                offset += header + nameLength
            }
        }
    }
}
