internal import FileKit
import Foundation
import Keepsake

/// The lock every Keepsake writer of one keyring service holds from its search for the key's
/// items through its write and the write's read-back: the Secret Service has no transactions,
/// so Keepsake serialises its own writers (docs/RELIABILITY.md).
///
/// Two levels, taken in this order and released in reverse:
/// - in this process, a gate per lock name (threads of one process wait here, so that the
///   process holds at most one `flock` per name: `flock` on two open file descriptions of one
///   file conflicts even within one process);
/// - across processes, an exclusive `flock` on a lock file in ``directory(environment:store:key:)`` named after a hash
///   of the session bus address and the service. The kernel releases a `flock` when its holder
///   exits or dies, so a crashed holder never blocks anyone; the lock files are empty and never
///   removed (removing a lock file that another process is about to lock would split the lock).
///
/// Waiting respects the caller's deadline: a writer that cannot get the lock in time gets
/// `.lockTimeout`, before anything is contacted or written.
enum KeyringWriteLock {
    /// Runs `body` holding the lock for `service` on the current session bus, after waiting for
    /// it until `deadline`.
    ///
    /// - Throws: `KeepsakeError` naming `store` and `key`, before `body` runs: `.lockTimeout`
    ///   when another writer held the lock until the deadline; `.permissionDenied` or `.io` when
    ///   the lock directory or file cannot be used (another user's directory, a symbolic link).
    ///   Then whatever `body` throws.
    static func holding<T>(
        service: String, until deadline: ContinuousClock.Instant, store: String, key: String?,
        _ body: () throws(KeepsakeError) -> T
    ) throws(KeepsakeError) -> T {
        let name = lockName(service: service)
        guard KeyringWriteGates.shared.enter(name, until: deadline) else {
            throw timedOut(store: store, key: key, inProcess: true)
        }
        defer { KeyringWriteGates.shared.leave(name) }
        let path = try directory(store: store, key: key) + "/" + name
        let acquired: StoreLock?
        do throws(SystemFailure) {
            acquired = try StoreLock.acquire(path, timeout: max(ContinuousClock.now.duration(to: deadline), .zero))
        } catch {
            throw error.error(store: store, key: key, "cannot open the keyring write lock \(path)")
        }
        guard let lock = acquired else { throw timedOut(store: store, key: key, inProcess: false) }
        defer { lock.unlock() }
        return try body()
    }

    private static func timedOut(store: String, key: String?, inProcess: Bool) -> KeepsakeError {
        KeepsakeError(
            .lockTimeout, store: store, key: key,
            """
            another Keepsake writer \(inProcess ? "in this process" : "(another process)") held this keyring service's \
            write lock until the call's deadline; nothing was written
            """)
    }

    /// `keyring-<16 hex digits>.lock`: a 64-bit FNV-1a hash of the session bus address and the
    /// service, so that services, and private test keyrings on buses of their own, do not
    /// contend. Two names that happen to collide only share a lock.
    static func lockName(service: String) -> String {
        let bus = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(bus.utf8) + [0] + Array(service.utf8) {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "keyring-" + String(repeating: "0", count: 16 - hex.count) + hex + ".lock"
    }

    /// The directory of this user's lock files, as the move lock's (see
    /// `Syscall.userLockDirectory(environment:)`): `$XDG_RUNTIME_DIR/keepsake`, else
    /// `~/.cache/keepsake/locks`, else `/tmp/keepsake-<uid>` — the first that is a directory
    /// private to this user.
    static func directory(
        environment: [String: String] = ProcessInfo.processInfo.environment, store: String, key: String?
    ) throws(KeepsakeError) -> String {
        do throws(KeepsakeError) {
            return try Syscall.userLockDirectory(environment: environment)
        } catch {
            var located = error.located(store: store, key: key)
            located.message = "cannot place the keyring write lock, so nothing was written: " + located.message
            throw located
        }
    }
}

/// This process's writers per lock name: at most one thread holds a name at a time.
final class KeyringWriteGates: @unchecked Sendable {
    // @unchecked: `held` is only touched with `condition` locked.
    static let shared = KeyringWriteGates()

    private let condition = NSCondition()
    private var held: Set<String> = []

    /// Waits until no other thread holds `name`, then holds it; `false` when `deadline` came first.
    func enter(_ name: String, until deadline: ContinuousClock.Instant) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while held.contains(name) {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return false }
            let (seconds, attoseconds) = remaining.components
            _ = condition.wait(until: Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18))
        }
        held.insert(name)
        return true
    }

    /// Lets the next thread waiting for `name` in.
    func leave(_ name: String) {
        condition.lock()
        held.remove(name)
        condition.broadcast()
        condition.unlock()
    }
}
