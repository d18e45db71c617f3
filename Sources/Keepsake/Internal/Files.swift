import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call: its name and `errno` — or a path that is not a regular file (a FIFO,
/// a socket, a device, a directory), refused before anything is read from it. Paths are not
/// kept: they may hold a hashed record name at most, but messages say which file in words.
package struct SystemFailure: Error, Equatable {
    package let call: String
    package let errno: Int32
    /// What the path is, when it is not a regular file: `"a FIFO"`, `"a socket"`.
    package let fileType: String?

    package init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
        self.fileType = nil
    }

    /// The path is `fileType`, not a regular file.
    package init(notRegularFile fileType: String) {
        self.call = "fstat"
        self.errno = 0
        self.fileType = fileType
    }

    package var cause: KeepsakeError.Cause {
        if let fileType { return .other("it is \(fileType), not a regular file") }
        return .posix(call: call, errno: errno)
    }

    /// `.invalidArgument` for a path that is not a regular file (a bad location), else by `errno`.
    package var code: KeepsakeError.Code {
        if fileType != nil { return .invalidArgument }
        switch errno {
        case EACCES, EPERM, EROFS: return .permissionDenied
        default: return .io
        }
    }

    /// A ``KeepsakeError`` with this failure's code and cause.
    package func error(store: String, key: String? = nil, _ message: String) -> KeepsakeError {
        KeepsakeError(code, store: store, key: key, message, cause: cause)
    }
}

/// The parts of a path given by a user, taken apart byte by byte as POSIX `dirname` and
/// `basename` do.
///
/// Foundation's path-component methods trap on some relative paths (`deletingLastPathComponent`
/// of `"k"`, `"."` or `"a/"` stops the process), so paths from the command line, a
/// configuration or an app are never given to them. Only `/` separates components; every other
/// byte (a `~`, a `.`, bytes that were not UTF-8 and were repaired) is part of a name, and
/// nothing is expanded or resolved.
package enum FilePath {
    private static let slash = UInt8(ascii: "/")

    /// The directory holding what `path` names, as POSIX `dirname`: `"k"`, `"."`, `".."`, `"~"`,
    /// `"a/"` and `""` → `"."`; `"/"`, `"//"` and `"/a"` → `"/"`; `"a/b"` and `"a//b/"` → `"a"`.
    package static func directory(of path: String) -> String {
        var bytes = Array(path.utf8)
        // Trailing slashes name the same thing as none (but "/" stays "/").
        while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
        guard let last = bytes.lastIndex(of: slash) else { return "." }
        bytes.removeSubrange(last...)
        while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
        if bytes.isEmpty || bytes == [slash] { return "/" }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The last component of `path`, as POSIX `basename`: `"a/b/"` → `"b"`, `"k"` → `"k"`,
    /// `"/"` → `"/"`, `""` → `"."`.
    package static func lastComponent(of path: String) -> String {
        var bytes = Array(path.utf8)
        guard !bytes.isEmpty else { return "." }
        while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
        if bytes == [slash] { return "/" }
        if let last = bytes.lastIndex(of: slash) { bytes.removeSubrange(...last) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The steps of a durable write, where a test's fault (``FileSystem/init(fault:temporaryPrefix:unnamedFiles:)``,
/// debug builds only) can make one fail.
package enum FileStep: String, CaseIterable, Sendable {
    /// Creating a temporary file (`open` with `O_CREAT | O_EXCL`, mode 0600).
    case create
    /// Writing its bytes.
    case write
    /// `fsync` of the file.
    case fsync
    /// Keeping the previous file under a rollback name (`link`), or publishing a new key file.
    case link
    /// `rename` into place (or out of place, for a delete).
    case rename
    /// `fsync` of the directory, which makes the rename durable.
    case syncDirectory
}

/// Durable file operations for the stores that keep files: durable replace, durable delete,
/// exclusive create.
///
/// In debug builds — the ones tests run, where `@testable import` works — a test can make one
/// step fail as the real system call would, and turn unnamed files off
/// (``init(fault:temporaryPrefix:unnamedFiles:)``); only faults are injected, every other effect
/// is the real file system's. Release builds, the ones that ship, have neither seam: both are
/// compiled out, and every step is the real call.
package struct FileSystem: Sendable {
    /// Temporary and rollback files start with this, so a store can recognise (and remove)
    /// the leftovers of a crashed writer of its own, and only those.
    package var temporaryPrefix: String

    #if DEBUG
    /// For tests only (debug builds): returns an `errno` to make `step` fail before the real
    /// call is made, or `nil`.
    package var fault: (@Sendable (FileStep) -> Int32?)?

    /// For tests only (debug builds): whether ``createExclusively(_:with:)`` may write an unnamed
    /// file (`O_TMPFILE`) when the system can; tests turn it off to exercise the named temporary
    /// file used elsewhere. Release builds always may.
    package var unnamedFiles: Bool
    #endif

    package init(temporaryPrefix: String = ".tmp-") {
        self.temporaryPrefix = temporaryPrefix
        #if DEBUG
        self.fault = nil
        self.unnamedFiles = true
        #endif
    }

    #if DEBUG
    /// For tests only (debug builds): the real file system, but for the steps `fault` makes
    /// fail with the `errno` it returns, and without unnamed files unless `unnamedFiles`.
    package init(
        fault: (@Sendable (FileStep) -> Int32?)?, temporaryPrefix: String = ".tmp-", unnamedFiles: Bool = true
    ) {
        self.temporaryPrefix = temporaryPrefix
        self.fault = fault
        self.unnamedFiles = unnamedFiles
    }
    #endif

    package static let live = FileSystem()

    /// Throws the test's fault for `step`, if any, as a failure of `call`; nothing in release builds.
    @inline(__always)
    func inject(_ step: FileStep, _ call: String) throws(SystemFailure) {
        #if DEBUG
        if let code = fault?(step) { throw SystemFailure(call: call, errno: code) }
        #endif
    }

    // MARK: Durable operations

    /// Replaces (or creates) `name` in `directory` with `data`: a 0600 temporary file, written
    /// and fsync'd, renamed over `name`, then the directory fsync'd. If a step fails, the
    /// previous file is left in place — after the rename too: the previous file is kept under
    /// a rollback name until the directory sync succeeds, and put back if it fails.
    package func replace(_ name: String, in directory: String, with data: Data) throws(SystemFailure) {
        try replace(name, in: directory) { fd throws(SystemFailure) in try Syscall.writeAll(fd, data) }
    }

    /// ``replace(_:in:with:)`` with the new contents written by `write` into the temporary
    /// file's descriptor (a large document streamed rather than built first).
    package func replace(
        _ name: String, in directory: String, writing write: (Int32) throws(SystemFailure) -> Void
    ) throws(SystemFailure) {
        let target = directory + "/" + name
        let temporary = try writeTemporary(in: directory, write)
        // Keep the previous file reachable until the new one is durable.
        var rollback: String? = directory + "/" + temporaryName()
        do throws(SystemFailure) {
            try inject(.link, "link")
            try Syscall.link(target, rollback!)
        } catch {
            if error.errno == ENOENT {
                rollback = nil  // nothing to keep: the file is new
            } else {
                Syscall.unlink(temporary)
                throw error
            }
        }
        do throws(SystemFailure) {
            try inject(.rename, "rename")
            try Syscall.rename(temporary, target)
        } catch {
            Syscall.unlink(temporary)
            if let rollback { Syscall.unlink(rollback) }
            throw error
        }
        do throws(SystemFailure) {
            try inject(.syncDirectory, "fsync")
            try Syscall.syncDirectory(directory)
        } catch {
            if let rollback {
                Syscall.renameQuietly(rollback, target)
            } else {
                Syscall.unlink(target)
            }
            Syscall.syncDirectoryQuietly(directory)
            throw error
        }
        if let rollback { Syscall.unlink(rollback) }
    }

    /// Removes `name` from `directory` durably: renamed to a rollback name, the directory
    /// fsync'd, then unlinked. If a step fails the file is left in place. Absent is not an error.
    package func remove(_ name: String, in directory: String) throws(SystemFailure) {
        let target = directory + "/" + name
        let rollback = directory + "/" + temporaryName()
        do throws(SystemFailure) {
            try inject(.rename, "rename")
            try Syscall.rename(target, rollback)
        } catch {
            if error.errno == ENOENT { return }
            throw error
        }
        do throws(SystemFailure) {
            try inject(.syncDirectory, "fsync")
            try Syscall.syncDirectory(directory)
        } catch {
            Syscall.renameQuietly(rollback, target)
            Syscall.syncDirectoryQuietly(directory)
            throw error
        }
        Syscall.unlink(rollback)
    }

    /// Creates the file at `path` holding `data`, mode 0600, only if nothing is there
    /// (`EEXIST` otherwise), then fsyncs the directory. Nothing is left behind if a step fails —
    /// nor if the process is killed at any point:
    ///
    /// - Where the kernel and file system allow it, the file is written as an unnamed file
    ///   (`O_TMPFILE`), fsync'd, and only then given its name (`linkat`, which never replaces):
    ///   until the link there is no name to leave behind.
    /// - Elsewhere (no `O_TMPFILE`, no `/proc`), a named temporary file (``temporaryPrefix`` and
    ///   16 hex digits) is written, fsync'd and linked into place, then removed; a kill in
    ///   between leaves it, and the owner removes such leftovers the next time it uses the path
    ///   (see ``removeLeftovers(in:)``).
    package func createExclusively(_ path: String, with data: UnsafeRawBufferPointer) throws(SystemFailure) {
        let parent = FilePath.directory(of: path)
        if let fd = try openUnnamed(in: parent) {
            do throws(SystemFailure) {
                try inject(.write, "write")
                try Syscall.writeAll(fd, data)
                try inject(.fsync, "fsync")
                try Syscall.fsync(fd)
                try inject(.link, "linkat")
                try Syscall.linkUnnamed(fd, to: path)
                Syscall.close(fd)
            } catch {
                Syscall.close(fd)  // the unnamed file goes with its last descriptor
                throw error
            }
        } else {
            let temporary = try writeTemporary(in: parent) { fd throws(SystemFailure) in try Syscall.writeAll(fd, data)
            }
            do throws(SystemFailure) {
                try inject(.link, "link")
                try Syscall.link(temporary, path)
            } catch {
                Syscall.unlink(temporary)
                throw error
            }
            Syscall.unlink(temporary)
        }
        do throws(SystemFailure) {
            try inject(.syncDirectory, "fsync")
            try Syscall.syncDirectory(parent)
        } catch {
            Syscall.unlink(path)
            throw error
        }
    }

    /// A new unnamed 0600 file in `directory` (`O_TMPFILE`), or `nil` when this system cannot
    /// make one that ``Syscall/linkUnnamed(_:to:)`` can name (then a named temporary is used).
    private func openUnnamed(in directory: String) throws(SystemFailure) -> Int32? {
        #if DEBUG
        guard unnamedFiles else { return nil }
        #endif
        guard Syscall.canLinkUnnamedFiles else { return nil }
        let fd: Int32
        do throws(SystemFailure) {
            fd = try Syscall.open(directory, O_WRONLY | Syscall.temporaryFileFlag, 0o600)
        } catch  where [EOPNOTSUPP, EISDIR, EINVAL].contains(error.errno) {
            return nil  // the file system (or kernel) has no O_TMPFILE
        }
        do throws(SystemFailure) {
            try inject(.create, "open")
        } catch {
            Syscall.close(fd)
            throw error
        }
        return fd
    }

    /// Removes the temporary files a killed writer left in `directory`: names of
    /// ``temporaryPrefix`` followed by exactly 16 hex digits, as ``temporaryName()`` makes them.
    /// Best effort: a leftover that cannot be removed is tried again next time.
    package func removeLeftovers(in directory: String) {
        let names: [String]
        do throws(SystemFailure) {
            names = try Syscall.listDirectory(directory)
        } catch {
            return  // the caller's own reads and writes report an unreadable directory
        }
        for name in names where isTemporaryName(name) {
            Syscall.unlink(directory + "/" + name)
        }
    }

    /// Whether `name` is one ``temporaryName()`` makes.
    package func isTemporaryName(_ name: String) -> Bool {
        guard name.hasPrefix(temporaryPrefix) else { return false }
        let digits = name.utf8.dropFirst(temporaryPrefix.utf8.count)
        return digits.count == 16
            && digits.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }

    /// Creates a 0600 temporary file in `directory`, lets `write` fill it, fsyncs and closes it,
    /// and returns its path; on any failure the file is removed.
    private func writeTemporary(
        in directory: String, _ write: (Int32) throws(SystemFailure) -> Void
    ) throws(SystemFailure) -> String {
        let temporary = directory + "/" + temporaryName()
        try inject(.create, "open")
        let fd = try Syscall.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        do throws(SystemFailure) {
            try inject(.write, "write")
            try write(fd)
            try inject(.fsync, "fsync")
            try Syscall.fsync(fd)
            Syscall.close(fd)
        } catch {
            Syscall.close(fd)
            Syscall.unlink(temporary)
            throw error
        }
        return temporary
    }

    /// A temporary file name: the prefix and 16 hex digits — nothing about the record.
    ///
    /// The digits are a SplitMix64 step over a per-process random seed plus a counter: distinct
    /// within the process, unguessable outside it, and made without a `getrandom` call per
    /// file. Temporary files are created with `O_EXCL`, so a name that happens to be taken
    /// fails the create and is never written through.
    package func temporaryName() -> String {
        var value =
            Self.temporarySeed &+ Self.temporaryCounter.add(1, ordering: .relaxed).oldValue
            &* 0x9E37_79B9_7F4A_7C15
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        value ^= value >> 31
        let hex = String(value, radix: 16)
        return temporaryPrefix + String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static let temporarySeed: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }()
    private static let temporaryCounter = Atomic<UInt64>(0)
}

/// The system calls Keepsake's file-backed stores make, each wrapped once: EINTR retried, failures kept with
/// the call's name and `errno`.
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
        // Room for the size fstat gave (capped: it is only a hint), plus a byte to see the end.
        var bytes = [UInt8](repeating: 0, count: max(4096, min(size, 64 << 20) + 1))
        var filled = 0
        while true {
            if filled == bytes.count { bytes += [UInt8](repeating: 0, count: bytes.count) }
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
        bytes.removeSubrange(filled...)
        return (bytes, info)
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

/// An exclusive `flock` on the store's lock file, held until ``unlock()`` or deinit.
///
/// Waiters take turns: before the `flock`, a waiter takes the lock file's turnstile (an
/// open-file-description lock on its first byte, independent of the `flock`) and keeps it until
/// it has the `flock`. A holder that releases the lock and asks for it again at once must first
/// get through the turnstile, which the waiter next in line holds — so a writer in a tight loop
/// lets the others in instead of taking the lock back every time (with the `flock` alone, a
/// waiter that sleeps between tries could wait past its timeout). Waiters poll every few
/// milliseconds at most, so that none falls behind one that arrived later. A release that
/// does not take the turnstile (an older one) still excludes by the `flock` as before.
package final class StoreLock {
    private var fd: Int32

    /// `F_OFD_SETLK` (Linux 3.15 and later; not exported by Glibc's Swift module).
    private static let setOpenFileLock: Int32 = 37

    /// Takes the lock, waiting up to `timeout`; `nil` on timeout (or at once when `timeout` is zero).
    package static func acquire(_ path: String, timeout: Duration) throws(SystemFailure) -> StoreLock? {
        let fd = try Syscall.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0o600)
        let deadline = ContinuousClock.now + timeout
        var pause = Duration.milliseconds(1)
        var inTurnstile = false
        var waited = false
        while true {
            do throws(SystemFailure) {
                if !inTurnstile {
                    inTurnstile = try turnstile(fd, take: true)
                    // Next in line: the lock comes free within one write; look often.
                    if inTurnstile { pause = .microseconds(20) }
                }
                if inTurnstile {
                    try Syscall.lock(fd, LOCK_EX | LOCK_NB)
                    _ = try? turnstile(fd, take: false)  // best effort: closing the file releases it too
                    return StoreLock(fd: fd)
                }
            } catch {
                guard error.errno == EWOULDBLOCK else {
                    Syscall.close(fd)
                    throw error
                }
            }
            if !waited {
                waited = true
                Log.engine.debug("waiting for a store's lock", metadata: ["lock": "\(path)"])
            }
            if ContinuousClock.now >= deadline {
                if timeout > .zero {
                    // The caller throws lockTimeout: the app hears of it there.
                    Log.engine.debug(
                        "gave up waiting for a store's lock after \(timeout)", metadata: ["lock": "\(path)"])
                } else {
                    // A try without waiting (a reader's best-effort clean-up): not a warning.
                    Log.engine.debug("a store's lock is held; not waiting", metadata: ["lock": "\(path)"])
                }
                Syscall.close(fd)  // releases the turnstile, if held
                return nil
            }
            let (seconds, attoseconds) = pause.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            // Next in line (in the turnstile): the lock is released within one write. Otherwise a
            // short pause still, so that a waiter that came first is not outpaced by a newcomer.
            pause = min(pause * 2, inTurnstile ? .milliseconds(1) : .milliseconds(5))
        }
    }

    /// Takes (`take`) or releases the turnstile without waiting: whether it is held now. A
    /// system without open-file-description locks (`EINVAL`) has no turnstile: `true`.
    private static func turnstile(_ fd: Int32, take: Bool) throws(SystemFailure) -> Bool {
        var region = flock()
        region.l_type = Int16(take ? F_WRLCK : F_UNLCK)
        region.l_whence = Int16(SEEK_SET)
        region.l_start = 0
        region.l_len = 1
        region.l_pid = 0
        while fcntl(fd, setOpenFileLock, &region) != 0 {
            switch errno {
            case EINTR: continue
            case EAGAIN, EACCES: return false
            case EINVAL: return true
            default: throw SystemFailure(call: "fcntl(F_OFD_SETLK)", errno: errno)
            }
        }
        return take
    }

    private init(fd: Int32) { self.fd = fd }

    /// The lock file's bytes (at most `limit`), which the holder may use to leave a note for
    /// the next holder; `[]` once unlocked.
    package func contents(limit: Int = 1 << 20) throws(SystemFailure) -> [UInt8] {
        guard fd >= 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: limit)
        var filled = 0
        while filled < limit {
            let count = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress! + filled, limit - filled, off_t(filled))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemFailure(call: "pread", errno: errno)
            }
            if count == 0 { break }
            filled += count
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// Replaces the lock file's bytes with `bytes` (not fsync'd: a note for the next holder,
    /// not data).
    package func replaceContents(_ bytes: [UInt8]) throws(SystemFailure) {
        guard fd >= 0 else { return }
        while ftruncate(fd, 0) != 0 {
            if errno != EINTR { throw SystemFailure(call: "ftruncate", errno: errno) }
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                pwrite(fd, buffer.baseAddress! + written, buffer.count - written, off_t(written))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemFailure(call: "pwrite", errno: errno)
            }
            written += count
        }
    }

    package func unlock() {
        guard fd >= 0 else { return }
        Syscall.unlock(fd)
        Syscall.close(fd)
        fd = -1
    }

    deinit { unlock() }
}

extension Syscall {
    /// The directory for lock files that every process of this user shares — the move lock's
    /// and the keyring writers' — the first of these that is, or can be made, a directory private
    /// to this user:
    ///
    /// 1. `$XDG_RUNTIME_DIR/keepsake`, when `XDG_RUNTIME_DIR` is absolute;
    /// 2. `$XDG_CACHE_HOME/keepsake/locks`, else `$HOME/.cache/keepsake/locks` — in the user's own
    ///    home, where no other user can make it first (cron, ssh without a login session and
    ///    services often have no `XDG_RUNTIME_DIR`);
    /// 3. `<TMPDIR or /tmp>/keepsake-<uid>`.
    ///
    /// Private means a real directory (not a symbolic link) owned by this user that group and
    /// others cannot use; one of this user's that others can is narrowed to mode 0700. Anything
    /// else there (another user's directory made first in `/tmp`) is passed over, never used.
    ///
    /// - Throws: ``KeepsakeError/Code/permissionDenied`` naming each place and why it cannot be
    ///   used, and what to do, when none can.
    package static func userLockDirectory(environment: [String: String]) throws(KeepsakeError) -> String {
        let uid = geteuid()
        func absolute(_ name: String) -> String? {
            guard var value = environment[name], value.hasPrefix("/") else { return nil }
            while value.count > 1 && value.hasSuffix("/") { value.removeLast() }
            return value == "/" ? "" : value
        }
        var candidates: [String] = []
        if let runtime = absolute("XDG_RUNTIME_DIR") { candidates.append(runtime + "/keepsake") }
        if let cache = absolute("XDG_CACHE_HOME") {
            candidates.append(cache + "/keepsake/locks")
        } else if let home = absolute("HOME"), !home.isEmpty {
            candidates.append(home + "/.cache/keepsake/locks")
        }
        candidates.append((absolute("TMPDIR") ?? "/tmp") + "/keepsake-\(uid)")
        var refused: [String] = []
        for directory in candidates {
            if let reason = privateDirectory(directory, uid: uid) {
                refused.append("\(directory): \(reason)")
                continue
            }
            return directory
        }
        throw KeepsakeError(
            .permissionDenied,
            """
            no directory for lock files is private to this user (uid \(uid)): \(refused.joined(separator: "; ")); \
            remove a directory another user made, or set XDG_RUNTIME_DIR (or HOME) to a directory of this user's
            """)
    }

    /// Makes `directory` (and its missing parents, mode 0700) or checks the one there: `nil` when
    /// it is a directory private to `uid` now, else why it cannot be used.
    private static func privateDirectory(_ directory: String, uid: uid_t) -> String? {
        var info = Glibc.stat()
        if lstat(directory, &info) != 0 {
            guard errno == ENOENT else { return String(cString: strerror(errno)) }
            // Missing: make it, and its missing parents, for this user alone.
            var path = ""
            for component in directory.split(separator: "/") {
                path += "/" + component
                if Glibc.mkdir(path, 0o700) != 0 && errno != EEXIST { return String(cString: strerror(errno)) }
            }
            guard lstat(directory, &info) == 0 else { return String(cString: strerror(errno)) }
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "not a directory (a symbolic link?)" }
        guard info.st_uid == uid else { return "owned by uid \(info.st_uid)" }
        if info.st_mode & 0o077 != 0 {
            // This user's, open to others: narrowed rather than refused.
            guard chmod(directory, 0o700) == 0 else {
                return "mode \(String(info.st_mode & 0o7777, radix: 8)), and it cannot be narrowed to 0700"
            }
        }
        return nil
    }
}
