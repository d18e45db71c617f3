internal import FileKit
import Foundation
import Keepsake
internal import SodiumKit
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The record files a store's unlocked reads saw, by file name: each version's identity, when it
/// was read, and a keyed hash of the value it held — never the value.
///
/// A batch's `.unchanged` expectations are checked under the lock. Reading and decrypting every
/// record again there doubled the work of `migrate run`; instead, a file whose identity is the
/// one seen is known to hold the value seen, provided that version was *settled* when read:
///
/// - its status-change time (whole seconds) was more than `FileIdentity.settledSeconds` before the second
///   it was read in (`changed.tv_sec + 2 < readAt.tv_sec`): so the version was at least 2 s
///   old, and any version at least 3 s old qualifies;
/// - any later change to the file — a write in place, or another file renamed over the name,
///   even one reusing the freed inode with the same size and a restored mtime — gets a
///   status-change time at or after that read, so its identity differs. The margin covers file
///   systems whose clocks are coarse (ticks of milliseconds, or 1–2 s on some).
///
/// Any other case — not seen, changed, not yet settled, or the `lstat` failing — reads the file
/// again. The hash is BLAKE2b keyed with a random key of this store object, held in
/// ``SecureBytes``; a hash match of different values would need a BLAKE2b-256 collision under a
/// key the attacker does not know.
final class SeenRecords: Sendable {

    struct Entry: Sendable {
        var identity: FileIdentity
        var readAt: timespec
        var digest: [UInt8]
    }

    enum Check {
        case holds, differs, unknown
    }

    private let key = SecureBytes.random(count: 32)
    private let entries = Mutex<[String: Entry]>([:])

    /// `CLOCK_REALTIME` now: the clock file systems stamp times with. Take it before the read.
    static func now() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }

    private func digest(_ value: Data) -> [UInt8] {
        var hash = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBytes { key in
            value.withUnsafeBytes { message in
                hash.withUnsafeMutableBytes { Sodium.genericHash($0, message: message, key: key) }
            }
        }
        return hash
    }

    /// An entry for a version read at `readAt` holding `value`; `nil` (nothing worth keeping)
    /// when it was not settled then.
    func entry(identity: FileIdentity, readAt: timespec, value: Data) -> Entry? {
        guard FileIdentity.isSettled(changed: identity.changed, readAt: readAt) else { return nil }
        return Entry(identity: identity, readAt: readAt, digest: digest(value))
    }

    /// Keeps what one read saw of `name`.
    func record(_ name: String, identity: FileIdentity, readAt: timespec, value: Data) {
        let entry = entry(identity: identity, readAt: readAt, value: value)
        entries.withLock { $0[name] = entry }
    }

    /// Replaces everything with what a listing of the whole store saw.
    func replaceAll(with observed: [String: Entry]) {
        entries.withLock { $0 = observed }
    }

    /// Forgets `name` (this store object is replacing or removing it).
    func forget(_ name: String) {
        _ = entries.withLock { $0.removeValue(forKey: name) }
    }

    /// Whether the file at `path` (named `name`) holds `expected`, if that is known from its
    /// identity alone; `.unknown` otherwise.
    func check(_ path: String, name: String, against expected: Data?) -> Check {
        guard let entry = entries.withLock({ $0[name] }) else { return .unknown }
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, FileIdentity(info) == entry.identity else {
            return .unknown
        }
        guard let expected else { return .differs }
        let matches = digest(expected).withUnsafeBytes { a in
            entry.digest.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) }
        }
        return matches ? .holds : .differs
    }
}

/// The nonces of one batch's records, drawn from the random source in one call where it is the
/// system's (one `getrandom` for the batch instead of one per record), else one by one.
struct NonceBatch {
    private let random: RandomSource
    private var pool: [UInt8]
    private var used = 0

    init(random: RandomSource, count: Int) {
        self.random = random
        self.pool = random.drawsInOneCall && count > 0 ? random.bytes(count * Sodium.aeadNonceBytes) : []
    }

    /// A fresh random nonce.
    mutating func next() -> ArraySlice<UInt8> {
        guard used + Sodium.aeadNonceBytes <= pool.count else { return random.bytes(Sodium.aeadNonceBytes)[...] }
        defer { used += Sodium.aeadNonceBytes }
        return pool[used..<(used + Sodium.aeadNonceBytes)]
    }
}
