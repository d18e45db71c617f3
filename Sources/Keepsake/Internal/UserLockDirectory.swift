package import FileKit
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
