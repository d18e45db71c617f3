import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One file of a ``FileSystem/commitGroup(_:in:)``: its name in the directory and its new bytes,
/// or `nil` to remove it.
package struct GroupedFile: Sendable {
    package var name: String
    package var data: Data?

    package init(name: String, data: Data?) {
        self.name = name
        self.data = data
    }
}

extension FileSystem {
    /// Replaces or removes every file of `files` (distinct names) in `directory` durably, with
    /// one flush for the whole group instead of two per file:
    ///
    /// 1. every new file is written to a 0600 temporary file;
    /// 2. the file system is flushed once (`syncfs`; where it is missing, each temporary is
    ///    fsync'd), so every temporary is durable before any is renamed;
    /// 3. each temporary is put in its file's place while the previous file is kept under a
    ///    rollback name: one `renameat2(RENAME_EXCHANGE)` swaps the two names atomically (the
    ///    temporary's name then holds the previous file), and a file that did not exist is moved
    ///    in with `RENAME_NOREPLACE`; where the file system has no `renameat2`, the previous
    ///    file is hard-linked to a rollback name and the temporary renamed over it. A removal
    ///    renames the file to its rollback name;
    /// 4. the directory is fsync'd once, which makes every rename durable; then the rollback
    ///    names (the previous files) are unlinked, several at a time (freeing the previous files' blocks can wait
    ///    on the device for each one).
    ///
    /// Each file is always whole — its old bytes or its new ones — whatever happens and whenever
    /// the process is killed: a rename replaces a complete, already durable file. A crash leaves
    /// at most temporary and rollback files (``temporaryPrefix``), which the owner removes.
    ///
    /// - Parameter existing: The names in `directory` as listed under the caller's lock, when it
    ///   has them: it picks the rename that is most likely to succeed first (a wrong guess costs
    ///   one more call, never correctness). `nil`: every file is assumed to exist.
    /// - Returns: For each file, `nil` when it was replaced (removed), or why it was not; a file
    ///   that failed keeps its previous bytes. A failed flush or directory sync fails every file
    ///   it covers, and puts back the previous files of those already renamed.
    package func commitGroup(
        _ files: [GroupedFile], in directory: String, existing: Set<String>? = nil, written: ((Int) -> Void)? = nil
    ) -> [SystemFailure?] {
        var failures = [SystemFailure?](repeating: nil, count: files.count)
        var temporaries = [String?](repeating: nil, count: files.count)
        func fail(_ index: Int, _ failure: SystemFailure) {
            failures[index] = failure
            if let temporary = temporaries[index] { Syscall.unlink(temporary) }
            temporaries[index] = nil
        }

        // 1. Temporaries, not yet synced.
        for (index, file) in files.enumerated() {
            guard let data = file.data else { continue }
            let temporary = directory + "/" + temporaryName()
            do throws(SystemFailure) {
                try inject(.create, "open")
                let fd = try Syscall.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                temporaries[index] = temporary
                defer { Syscall.close(fd) }
                try inject(.write, "write")
                try Syscall.writeAll(fd, data)
            } catch {
                fail(index, error)
            }
            written?(index)
        }

        // 2. One flush for all of them.
        if temporaries.contains(where: { $0 != nil }) {
            do throws(SystemFailure) {
                try inject(.fsync, "syncfs")
                try Self.flush(directory: directory, temporaries: temporaries.compactMap { $0 })
            } catch {
                for index in files.indices where temporaries[index] != nil { fail(index, error) }
            }
        }

        // 3. Previous files kept under rollback names; new files renamed into place.
        var rollbacks = [String?](repeating: nil, count: files.count)
        var moved = [Bool](repeating: false, count: files.count)
        for (index, file) in files.enumerated() where failures[index] == nil {
            let target = directory + "/" + file.name
            do throws(SystemFailure) {
                if let temporary = temporaries[index] {
                    rollbacks[index] = try place(
                        temporary, over: target, likelyExists: existing.map { $0.contains(file.name) } ?? true,
                        in: directory)
                    temporaries[index] = nil
                } else {
                    do throws(SystemFailure) {
                        let rollback = directory + "/" + temporaryName()
                        try inject(.rename, "rename")
                        try Syscall.rename(target, rollback)
                        rollbacks[index] = rollback
                    } catch  where error.errno == ENOENT {
                        continue  // already absent
                    }
                }
                moved[index] = true
            } catch {
                fail(index, error)
            }
        }

        // 4. One directory sync makes every rename durable.
        guard moved.contains(true) else { return failures }
        do throws(SystemFailure) {
            try inject(.syncDirectory, "fsync")
            try Syscall.syncDirectory(directory)
        } catch {
            for (index, file) in files.enumerated() where moved[index] {
                let target = directory + "/" + file.name
                if let rollback = rollbacks[index] {
                    Syscall.renameQuietly(rollback, target)
                } else {
                    Syscall.unlink(target)
                }
                rollbacks[index] = nil
                failures[index] = error
            }
            Syscall.syncDirectoryQuietly(directory)
        }
        // The previous files go last: removing them frees their blocks, which can wait on the
        // device for each file (see `Syscall.unlinkAll`); every record is already new.
        Syscall.unlinkAll(rollbacks.compactMap { $0 })
        return failures
    }

    /// Puts the durable `temporary` in place of `target` and returns the rollback name that now
    /// holds the previous file, or `nil` when there was none. If this throws, `target` is as it
    /// was and `temporary` still holds the new bytes.
    private func place(
        _ temporary: String, over target: String, likelyExists: Bool, in directory: String
    ) throws(SystemFailure) -> String? {
        // The fault seam keeps its two steps: keeping the previous file, and the rename.
        try inject(.link, "link")
        try inject(.rename, "rename")
        var mode: Syscall.RenameMode = likelyExists ? .exchange : .noReplace
        for _ in 0..<2 {
            do throws(SystemFailure) {
                try Syscall.renameAtomically(temporary, target, mode)
                return mode == .exchange ? temporary : nil
            } catch  where mode == .exchange && error.errno == ENOENT {
                mode = .noReplace  // nothing at the target: nothing to keep
            } catch  where mode == .noReplace && error.errno == EEXIST {
                mode = .exchange  // something there after all: keep it
            } catch  where Syscall.isUnsupportedRename(error) {
                break
            }
        }
        // No renameat2 here: a hard link keeps the previous file, then a plain rename.
        var rollback: String? = directory + "/" + temporaryName()
        do throws(SystemFailure) {
            try Syscall.link(target, rollback!)
        } catch  where error.errno == ENOENT {
            rollback = nil  // a new file: nothing to keep
        }
        do throws(SystemFailure) {
            try Syscall.rename(temporary, target)
        } catch {
            if let rollback { Syscall.unlink(rollback) }
            throw error
        }
        return rollback
    }

    /// `syncfs(2)` (not in Swift's Glibc module: found at run time), else an fsync per file.
    private static let syncfs: (@convention(c) (Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }()

    private static func flush(directory: String, temporaries: [String]) throws(SystemFailure) {
        if let syncfs {
            let fd = try Syscall.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { Syscall.close(fd) }
            while syncfs(fd) != 0 {
                if errno == EINTR { continue }
                throw SystemFailure(call: "syncfs", errno: errno)
            }
            return
        }
        for temporary in temporaries {
            let fd = try Syscall.open(temporary, O_RDONLY | O_CLOEXEC)
            defer { Syscall.close(fd) }
            try Syscall.fsync(fd)
        }
    }
}
