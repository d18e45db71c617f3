import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The system calls Keepsake's file-backed stores make, each wrapped once: EINTR retried, failures kept with
/// the call's name and `errno`.
/// A buffer ``Syscall/readToEnd(_:size:as:limit:)`` reads into: `Data` or `[UInt8]`. Each
/// conformance sizes itself with its own code — never the generic `RangeReplaceableCollection`
/// algorithms, which outside their module go byte by byte through witness tables (growing a
/// 64 MiB `Data` that way took 10 s of `migrate status` on a 99 MB suite).
package protocol ReadableBuffer {
    /// `count` zero bytes.
    init(zeroes count: Int)
    var count: Int { get }
    /// Grows (with zero bytes) or shortens the buffer to `count` bytes.
    mutating func resize(to count: Int)
    mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R
}

extension Data: ReadableBuffer {
    package init(zeroes count: Int) { self.init(count: count) }
    package mutating func resize(to count: Int) { self.count = count }
}

extension Array: ReadableBuffer where Element == UInt8 {
    package init(zeroes count: Int) { self.init(repeating: 0, count: count) }
    package mutating func resize(to count: Int) {
        if count < self.count {
            removeLast(self.count - count)
        } else {
            append(contentsOf: repeatElement(0, count: count - self.count))
        }
    }
}

package enum Syscall {
    private static func retrying(_ call: String, _ body: () -> Int32) throws(SystemFailure) -> Int32 {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw SystemFailure(call: call, errno: code)
        }
    }

    package static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) throws(SystemFailure) -> Int32 {
        try retrying("open") { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    package static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    package static func fsync(_ fd: Int32) throws(SystemFailure) { _ = try retrying("fsync") { Glibc.fsync(fd) } }

    package static func rename(_ from: String, _ to: String) throws(SystemFailure) {
        _ = try retrying("rename") { Glibc.rename(from, to) }
    }

    /// `renameat2(2)` (glibc 2.28 and later; looked up at run time), or `nil` where it is missing.
    private static let renameat2:
        (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32)? = {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return nil }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32).self)
        }()

    /// How ``renameAtomically(_:_:_:)`` moves a file.
    package enum RenameMode: UInt32 {
        /// `RENAME_NOREPLACE`: fails with `EEXIST` when something is at the target.
        case noReplace = 1
        /// `RENAME_EXCHANGE`: swaps the two names atomically; both must exist (`ENOENT`).
        case exchange = 2
    }

    /// `renameat2(from, to, mode)`. Throws `ENOSYS` when the C library lacks `renameat2`, and
    /// the kernel's `EINVAL` (or `ENOSYS`, `EOPNOTSUPP`) where the file system does not support
    /// the mode: see ``isUnsupportedRename(_:)``.
    package static func renameAtomically(_ from: String, _ to: String, _ mode: RenameMode) throws(SystemFailure) {
        guard let renameat2 else { throw SystemFailure(call: "renameat2", errno: ENOSYS) }
        _ = try retrying("renameat2") { renameat2(AT_FDCWD, from, AT_FDCWD, to, mode.rawValue) }
    }

    /// Whether a ``renameAtomically(_:_:_:)`` failure means the mode is not available here
    /// (rather than a failure of this rename).
    package static func isUnsupportedRename(_ failure: SystemFailure) -> Bool {
        failure.errno == EINVAL || failure.errno == ENOSYS || failure.errno == EOPNOTSUPP
    }

    /// For rollbacks after another failure, which is what gets reported.
    package static func renameQuietly(_ from: String, _ to: String) { _ = Glibc.rename(from, to) }

    package static func link(_ from: String, _ to: String) throws(SystemFailure) {
        _ = try retrying("link") { Glibc.link(from, to) }
    }

    /// `O_TMPFILE`: Glibc defines it as an expression Swift does not import. `__O_TMPFILE` is
    /// 020000000 on x86-64 and AArch64, with `O_DIRECTORY`; other architectures use other
    /// values, so there no unnamed files are made (see ``canLinkUnnamedFiles``).
    #if arch(x86_64) || arch(arm64)
    package static let temporaryFileFlag: Int32 = 0o20000000 | O_DIRECTORY
    #else
    package static let temporaryFileFlag: Int32 = -1
    #endif

    /// Whether an unnamed file can be given a name: through `/proc/self/fd` (linking with
    /// `AT_EMPTY_PATH` needs a capability unprivileged processes lack). Never on an
    /// architecture whose `O_TMPFILE` value is not known here: named temporary files are used.
    package static let canLinkUnnamedFiles: Bool = temporaryFileFlag != -1 && access("/proc/self/fd", X_OK) == 0

    /// Gives the unnamed file open as `fd` (`O_TMPFILE`) the name `path`; `EEXIST` when
    /// something is there (an existing file is never replaced).
    package static func linkUnnamed(_ fd: Int32, to path: String) throws(SystemFailure) {
        _ = try retrying("linkat") { Glibc.linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, path, AT_SYMLINK_FOLLOW) }
    }

    /// Removal of a temporary or rollback file; a failure leaves a file that the next open
    /// removes, so it is not reported.
    package static func unlink(_ path: String) { _ = Glibc.unlink(path) }

    /// Removes many temporary or rollback files (as ``unlink(_:)``), several at a time.
    ///
    /// Removing a file's last name frees its blocks, and where the file system discards freed
    /// blocks synchronously (ext4 without a journal, mounted `discard`) each removal waits for
    /// the device: about 1–3 ms for one small file, so a batch of 1,000 replaced records spent
    /// seconds here one at a time. The wait happens after the directory's lock is released, so
    /// eight threads overlap it (measured: 1,000 removals from 1.2–2.6 s to 0.07–0.2 s). A
    /// batch of fewer than 32 files is removed on the calling thread.
    package static func unlinkAll(_ paths: [String]) {
        let workers = min(8, paths.count / 16)
        guard workers > 1 else {
            for path in paths { unlink(path) }
            return
        }
        let finished = DispatchSemaphore(value: 0)
        for worker in 0..<workers {
            let thread = Thread {
                var index = worker
                while index < paths.count {
                    unlink(paths[index])
                    index += workers
                }
                finished.signal()
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
        for _ in 0..<workers { finished.wait() }
    }

    package static func mkdir(_ path: String, _ mode: mode_t) throws(SystemFailure) {
        _ = try retrying("mkdir") { Glibc.mkdir(path, mode) }
    }

    package static func syncDirectory(_ path: String) throws(SystemFailure) {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try fsync(fd)
    }

    package static func syncDirectoryQuietly(_ path: String) {
        do throws(SystemFailure) { try syncDirectory(path) } catch { /* reported by the caller's first failure */  }
    }

    // `flock` names both a struct and a function in Glibc: the annotated type picks the function.
    private static func cFlock(_ fd: Int32, _ operation: Int32) -> Int32 {
        let result: Int32 = flock(fd, operation)
        return result
    }

    package static func lock(_ fd: Int32, _ operation: Int32) throws(SystemFailure) {
        _ = try retrying("flock") { cFlock(fd, operation) }
    }

    package static func unlock(_ fd: Int32) { _ = cFlock(fd, LOCK_UN) }

    /// Opens `path` for reading only if it is a regular file, and returns the descriptor with
    /// the file's `stat`. The open is non-blocking, so a FIFO with no writer never blocks it,
    /// and the type is checked on the open descriptor (`fstat`): a FIFO, socket, device or
    /// directory is refused (``SystemFailure/fileType``) before a byte is read.
    ///
    /// - Parameter followSymlinks: Whether a symbolic link at `path` is followed (`false`:
    ///   `ELOOP`, for files a store keeps itself).
    package static func openRegularFile(
        _ path: String, followSymlinks: Bool = false
    ) throws(SystemFailure) -> (fd: Int32, info: Glibc.stat) {
        let fd: Int32
        do throws(SystemFailure) {
            fd = try open(path, O_RDONLY | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW))
        } catch  where error.errno == ENXIO {
            throw SystemFailure(notRegularFile: "a socket")  // open(2) of a Unix socket
        }
        var info = Glibc.stat()
        guard fstat(fd, &info) == 0 else {
            let failure = SystemFailure(call: "fstat", errno: errno)
            close(fd)
            throw failure
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            close(fd)
            switch type {
            case S_IFIFO: throw SystemFailure(notRegularFile: "a FIFO")
            case S_IFSOCK: throw SystemFailure(notRegularFile: "a socket")
            case S_IFCHR: throw SystemFailure(notRegularFile: "a character device")
            case S_IFBLK: throw SystemFailure(notRegularFile: "a block device")
            case S_IFDIR: throw SystemFailure(notRegularFile: "a directory")
            default: throw SystemFailure(notRegularFile: "an unknown kind of file")
            }
        }
        return (fd, info)
    }

    /// Reads the whole regular file at `path` (symbolic links not followed); `nil` when it does
    /// not exist. Anything else at `path` is refused at once (see ``openRegularFile(_:followSymlinks:)``).
    package static func readFile(_ path: String, followSymlinks: Bool = false) throws(SystemFailure) -> [UInt8]? {
        try readFileWithInfo(path, followSymlinks: followSymlinks)?.bytes
    }

    /// As ``readFile(_:followSymlinks:)``, with the `fstat` of the descriptor the bytes were
    /// read from: the identity of the version read.
    package static func readFileWithInfo(
        _ path: String, followSymlinks: Bool = false
    ) throws(SystemFailure) -> (bytes: [UInt8], info: Glibc.stat)? {
        let fd: Int32
        let size: Int
        let info: Glibc.stat
        do throws(SystemFailure) {
            let opened = try openRegularFile(path, followSymlinks: followSymlinks)
            fd = opened.fd
            info = opened.info
            size = Int(clamping: opened.info.st_size)
        } catch {
            if error.errno == ENOENT { return nil }
            throw error
        }
        defer { close(fd) }
        return (try readToEnd(fd, size: size), info)
    }

    /// The bytes of the regular file open at `fd`, from its offset to its end, read straight
    /// into the buffer type the caller keeps (`Data` or `[UInt8]`: no copy after); `size` is the
    /// size `fstat` gave for it, a hint: the buffer starts at that size (at most `limit`) and
    /// doubles while the file goes on.
    ///
    /// The hint is trusted up to 1 GiB by default: a buffer that must grow is zero-filled as it
    /// grows, so a 99 MB suite read into a buffer that started smaller held 160 MiB resident;
    /// started at its size it holds its size. The limit only keeps a size that lies (a file cut
    /// short after `fstat`) from reserving more than that.
    package static func readToEnd<Bytes: ReadableBuffer>(
        _ fd: Int32, size: Int, as type: Bytes.Type = [UInt8].self, limit: Int = 1 << 30
    ) throws(SystemFailure) -> Bytes {
        // Room for the size fstat gave, plus a byte to see the end.
        var bytes = Bytes(zeroes: max(4096, min(size, limit) + 1))
        var filled = 0
        while true {
            if filled == bytes.count { bytes.resize(to: 2 * bytes.count) }
            let count = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(fd, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemFailure(call: "read", errno: errno)
            }
            if count == 0 { break }
            filled += count
            // A regular file reads whole until its end: a short read that stops exactly at the
            // size fstat gave is the end, without another `read` to see 0.
            if filled == size && filled < bytes.count { break }
        }
        bytes.resize(to: filled)
        return bytes
    }

    package static func writeAll(_ fd: Int32, _ data: Data) throws(SystemFailure) {
        // `Data.withUnsafeBytes` rethrows untyped: carry the typed failure out as a Result.
        try data.withUnsafeBytes { buffer in
            Result { () throws(SystemFailure) in try writeAll(fd, buffer) }
        }.get()
    }

    package static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemFailure) {
        var written = 0
        while written < buffer.count {
            let result = Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
            if result < 0 {
                if errno == EINTR { continue }
                throw SystemFailure(call: "write", errno: errno)
            }
            written += result
        }
    }

    /// Where `d_name` starts in a `dirent`.
    private static let direntNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// The names in `directory`, without `.` and `..`.
    package static func listDirectory(_ directory: String) throws(SystemFailure) -> [String] {
        guard let stream = opendir(directory) else { throw SystemFailure(call: "opendir", errno: errno) }
        defer { closedir(stream) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw SystemFailure(call: "readdir", errno: errno) }
                return names
            }
            // The name is read where it lies: `entry.pointee.d_name` would copy the whole
            // 256-byte field, past the end of an entry `readdir` made shorter (`d_reclen`).
            let name = String(
                cString: UnsafeRawPointer(entry).advanced(by: direntNameOffset)
                    .assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// Whether `path` is a directory; `nil` when nothing is there.
    package static func isDirectory(_ path: String) throws(SystemFailure) -> Bool? {
        var info = Glibc.stat()
        let result: Int32 = stat(path, &info)
        if result != 0 {
            if errno == ENOENT { return nil }
            throw SystemFailure(call: "stat", errno: errno)
        }
        return (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Creates `path` and missing parents, each with mode 0700 (never changed afterwards);
    /// an existing directory is left as it is.
    package static func makeDirectories(_ path: String) throws(SystemFailure) {
        do throws(SystemFailure) {
            try mkdir(path, 0o700)
        } catch {
            switch error.errno {
            case EEXIST:
                return
            case ENOENT:
                let parent = FilePath.directory(of: path)
                guard parent != path, parent != ".", parent != "/" else { throw error }
                try makeDirectories(parent)
                try mkdir(path, 0o700)
            default:
                throw error
            }
        }
    }
}
