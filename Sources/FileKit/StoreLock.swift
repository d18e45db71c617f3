import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
