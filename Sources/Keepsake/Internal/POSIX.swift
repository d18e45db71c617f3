import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Every system call Keepsake's file code makes goes through here, so that each failure keeps
/// the call's name and `errno`, and EINTR is retried in one place.
enum POSIX {
    struct Failure: Error {
        let call: String
        let errno: Int32

        var cause: KeepsakeError.Cause { .posix(call: call, errno: errno) }

        /// The Keepsake error code for this errno.
        var code: KeepsakeError.Code {
            switch errno {
            case EACCES, EPERM, EROFS: return .permissionDenied
            default: return .io
            }
        }

        func error(store: String, key: String? = nil, _ message: String) -> KeepsakeError {
            KeepsakeError(code, store: store, key: key, message, cause: cause)
        }
    }

    private static func retrying(_ call: String, _ body: () -> Int32) throws(Failure) -> Int32 {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw Failure(call: call, errno: code)
        }
    }

    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) throws(Failure) -> Int32 {
        try retrying("open") { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    static func fsync(_ fd: Int32) throws(Failure) {
        _ = try retrying("fsync") { Glibc.fsync(fd) }
    }

    static func rename(_ from: String, _ to: String) throws(Failure) {
        _ = try retrying("rename") { Glibc.rename(from, to) }
    }

    static func unlink(_ path: String) {
        _ = Glibc.unlink(path)
    }

    static func mkdir(_ path: String, _ mode: mode_t) throws(Failure) {
        _ = try retrying("mkdir") { Glibc.mkdir(path, mode) }
    }

    // `flock` and `stat` name both a struct and a function in Glibc: an annotated result type
    // makes the call resolve to the function.
    private static func cFlock(_ fd: Int32, _ operation: Int32) -> Int32 {
        let result: Int32 = flock(fd, operation)
        return result
    }

    static func lock(_ fd: Int32, _ operation: Int32) throws(Failure) {
        _ = try retrying("flock") { cFlock(fd, operation) }
    }

    static func unlockQuietly(_ fd: Int32) {
        _ = cFlock(fd, LOCK_UN)
    }

    static func fileSize(_ fd: Int32) throws(Failure) -> Int {
        var info = Glibc.stat()
        _ = try retrying("fstat") {
            let result: Int32 = fstat(fd, &info)
            return result
        }
        return Int(info.st_size)
    }

    /// Reads the whole file at `path`; `nil` if it does not exist.
    static func readFile(_ path: String) throws(Failure) -> Data? {
        let fd: Int32
        do throws(Failure) {
            fd = try open(path, O_RDONLY)
        } catch {
            if error.errno == ENOENT { return nil }
            throw error
        }
        defer { close(fd) }
        var data = Data(count: max(try fileSize(fd), 0) + 1)
        var filled = 0
        while true {
            if filled == data.count { data.count += max(4096, data.count) }
            let count = data.withUnsafeMutableBytes { buffer in
                Glibc.read(fd, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(call: "read", errno: errno)
            }
            if count == 0 { break }
            filled += count
        }
        data.count = filled
        return data
    }

    static func writeAll(_ fd: Int32, _ data: Data) throws(Failure) {
        var written = 0
        while written < data.count {
            let result = data.withUnsafeBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw Failure(call: "write", errno: errno)
            }
            written += result
        }
    }
}
