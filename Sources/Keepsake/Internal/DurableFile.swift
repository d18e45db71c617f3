import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Durable file replacement and private directories.
enum DurableFile {
    /// Creates `path` and any missing parents with mode 0700. Existing directories are left as
    /// they are.
    static func makeDirectory(_ path: String) throws(POSIX.Failure) {
        do throws(POSIX.Failure) {
            try POSIX.mkdir(path, 0o700)
        } catch {
            switch error.errno {
            case EEXIST:
                return
            case ENOENT:
                let parent = (path as NSString).deletingLastPathComponent
                guard !parent.isEmpty, parent != path else { throw error }
                try makeDirectory(parent)
                try makeDirectory(path)
            default:
                throw error
            }
        }
    }

    /// Replaces the file at `path` with `data`, durably: a temporary file in the same directory
    /// created with mode 0600, written, fsync'd, renamed over `path`, then the directory
    /// fsync'd. A reader sees the old bytes or the new bytes, never a mix; after a crash the
    /// file holds one or the other.
    static func replace(_ path: String, with data: Data) throws(POSIX.Failure) {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let temporary = (directory.isEmpty ? "" : directory + "/") + temporaryPrefix(for: name) + randomSuffix()
        let fd = try POSIX.open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        do throws(POSIX.Failure) {
            try POSIX.writeAll(fd, data)
            try POSIX.fsync(fd)
            POSIX.close(fd)
        } catch {
            POSIX.close(fd)
            POSIX.unlink(temporary)
            throw error
        }
        do throws(POSIX.Failure) {
            try POSIX.rename(temporary, path)
        } catch {
            POSIX.unlink(temporary)
            throw error
        }
        try syncDirectory(directory.isEmpty ? "." : directory)
    }

    static func syncDirectory(_ directory: String) throws(POSIX.Failure) {
        let fd = try POSIX.open(directory, O_RDONLY | O_DIRECTORY)
        defer { POSIX.close(fd) }
        try POSIX.fsync(fd)
    }

    /// Temporary files for `name` start with this, so leftovers of a crash can be recognised.
    static func temporaryPrefix(for name: String) -> String { ".\(name).tmp-" }

    private static func randomSuffix() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36)
    }

    /// Removes temporary files a crashed writer left beside `path`. Call while holding the lock.
    static func removeLeftovers(beside path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = temporaryPrefix(for: (path as NSString).lastPathComponent)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)
        } catch {
            return  // Cleaning is best effort: a leftover is harmless and the write reports its own errors.
        }
        for name in names where name.hasPrefix(prefix) {
            POSIX.unlink((directory.isEmpty ? "" : directory + "/") + name)
        }
    }
}

/// An exclusive `flock` on a lock file, held until ``unlock()`` or deinit.
final class FileLock {
    private var fd: Int32

    /// Takes the lock, waiting up to `timeout` while another process holds it; `nil` on timeout.
    static func acquire(_ path: String, timeout: Duration) throws(POSIX.Failure) -> FileLock? {
        let fd = try POSIX.open(path, O_RDWR | O_CREAT, 0o600)
        let deadline = ContinuousClock.now + timeout
        var pause = Duration.milliseconds(1)
        while true {
            do throws(POSIX.Failure) {
                try POSIX.lock(fd, LOCK_EX | LOCK_NB)
                return FileLock(fd: fd)
            } catch {
                guard error.errno == EWOULDBLOCK else {
                    POSIX.close(fd)
                    throw error
                }
            }
            if ContinuousClock.now >= deadline {
                POSIX.close(fd)
                return nil
            }
            let (seconds, attoseconds) = pause.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    private init(fd: Int32) { self.fd = fd }

    func unlock() {
        guard fd >= 0 else { return }
        POSIX.unlockQuietly(fd)
        POSIX.close(fd)
        fd = -1
    }

    deinit { unlock() }
}
