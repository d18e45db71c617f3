import Foundation

#if canImport(Glibc)
import Glibc
#endif

// The watchdog: cleanup that runs however the process that started the keyring ends.

extension TestKeyring {
    /// The watchdog: a shell that waits for end-of-file on a socket only this process holds
    /// (close-on-exec, so no child inherits it), then kills every registered process that
    /// still belongs to this keyring (its command line or environment names ``root``) and
    /// removes ``root``. It ignores the signals a terminal sends the whole process group.
    static func startWatchdog(root: URL) throws(TestKeyringError) -> Int32 {
        var fds: [Int32] = [-1, -1]
        // A socket pair rather than pipe2 (not exported by Glibc's module): created
        // close-on-exec atomically, so no process spawned meanwhile by another thread inherits it.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw TestKeyringError(
                .startFailed, "could not create the watchdog's pipe: \(String(cString: strerror(errno)))")
        }
        let script = #"""
            trap '' INT TERM HUP QUIT
            root=$1
            cat >/dev/null
            for file in "$root"/scratch/pids/*; do
                [ -e "$file" ] || continue
                pid=${file##*/}
                case $pid in ''|*[!0-9]*) continue ;; esac
                if grep -qsF -- "$root" "/proc/$pid/cmdline" "/proc/$pid/environ"; then
                    kill -KILL "$pid" 2>/dev/null
                fi
            done
            rm -rf -- "$root"
            """#
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script, "keepsake-test-keyring-watchdog", root.path]
        process.standardInput = FileHandle(fileDescriptor: fds[0], closeOnDealloc: false)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            close(fds[0])
            close(fds[1])
            throw TestKeyringError(.startFailed, "could not start the watchdog (/bin/sh): \(error)")
        }
        close(fds[0])
        return fds[1]
    }

    func closeWatchdog() {
        watchdog.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }
}
