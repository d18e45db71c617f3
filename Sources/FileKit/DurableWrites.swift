import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
        try publish(try writeTemporary(in: directory, write), as: name, in: directory)
    }

    /// ``replace(_:in:writing:)`` with the new contents already written into `fd`, an unnamed
    /// file from ``openUnnamedFile(in:)`` in `directory`: fsync'd, given a temporary name, then
    /// renamed into place as `replace` does. The descriptor stays the caller's to close. A kill
    /// before the name is given leaves nothing; after it, a temporary file the owner removes.
    package func replace(_ name: String, in directory: String, withUnnamed fd: Int32) throws(SystemFailure) {
        try inject(.fsync, "fsync")
        try Syscall.fsync(fd)
        let temporary = directory + "/" + temporaryName()
        try inject(.link, "linkat")
        try Syscall.linkUnnamed(fd, to: temporary)
        try publish(temporary, as: name, in: directory)
    }

    /// Renames the durable file `temporary` over `name` in `directory`, then fsyncs the
    /// directory; the previous file is kept under a rollback name until that sync succeeds, and
    /// put back if it fails. On a failure `temporary` is removed.
    private func publish(_ temporary: String, as name: String, in directory: String) throws(SystemFailure) {
        let target = directory + "/" + name
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
        if let fd = try openUnnamedFile(in: parent) {
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

    /// A new unnamed 0600 file in `directory` (`O_TMPFILE`), open for reading and writing, or
    /// `nil` when this system cannot make one that ``Syscall/linkUnnamed(_:to:)`` can name
    /// (then a named temporary is used). Until it is named, a kill leaves nothing behind.
    package func openUnnamedFile(in directory: String) throws(SystemFailure) -> Int32? {
        #if DEBUG
        guard unnamedFiles else { return nil }
        #endif
        guard Syscall.canLinkUnnamedFiles else { return nil }
        let fd: Int32
        do throws(SystemFailure) {
            fd = try Syscall.open(directory, O_RDWR | Syscall.temporaryFileFlag, 0o600)
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
