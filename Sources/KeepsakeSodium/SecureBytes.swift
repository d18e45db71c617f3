import Foundation
internal import SodiumKit

/// Secret bytes — a key, a passphrase — kept where they cannot linger.
///
/// The bytes live in memory from `sodium_malloc` (between guard pages, locked in RAM where the
/// system allows), are zeroed over the whole allocation when the last copy is released, are
/// compared in constant time, and never print: `description`, `debugDescription` and `dump`
/// show only the length.
///
/// ```swift
/// let passphrase = SecureBytes(copying: Array(line.utf8))
/// let store = try SodiumFileStore(directory: path, key: .passphrase(passphrase, origin: "prompt"))
/// ```
///
/// Each value costs one guarded allocation (a dozen system calls), so KeepsakeSodium keeps
/// long-lived secrets in it — the master key, the data key and its subkeys, a passphrase —
/// once per store, not once per record: a record's plaintext is sealed and opened in ordinary
/// memory that is zeroed right after (see `PlaintextScratch` in
/// `Sources/KeepsakeSodium/Format/Format.swift`).
///
/// A value is immutable once made, so copies share one allocation and it is safe to pass
/// between threads. Read it only inside ``withUnsafeBytes(_:)``, and do not let the pointer
/// escape the closure.
public struct SecureBytes: Sendable {
    /// One `sodium_malloc` allocation, freed (and so zeroed) on deinit.
    private final class Storage: @unchecked Sendable {
        // Sendable: the bytes are written only while the value is being made, before the
        // storage is shared, and are read-only afterwards.
        let pointer: UnsafeMutableRawPointer
        let count: Int

        init(count: Int) {
            precondition(count >= 0, "SecureBytes: negative count")
            self.pointer = Sodium.allocate(count)
            self.count = count
        }

        var buffer: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: pointer, count: count) }

        deinit { Sodium.free(pointer) }
    }

    private let storage: Storage

    /// `count` bytes written by `initializer`, which receives a zeroed buffer.
    ///
    /// If `initializer` throws, the buffer is zeroed and freed and the error is rethrown.
    public init<E: Error>(
        count: Int, initializingWith initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        let storage = Storage(count: count)
        Sodium.zero(storage.buffer)
        try initializer(storage.buffer)
        self.storage = storage
    }

    /// A copy of `bytes`. The caller remains responsible for wiping its own copy.
    public init(copying bytes: some Collection<UInt8>) {
        let storage = Storage(count: bytes.count)
        storage.buffer.copyBytes(from: bytes)
        self.storage = storage
    }

    /// `count` bytes from the system's cryptographic random generator.
    public static func random(count: Int) -> SecureBytes {
        SecureBytes(count: count) { Sodium.randomBytes($0) }
    }

    /// The number of bytes.
    public var count: Int { storage.count }

    /// Calls `body` with the bytes. The pointer is valid only during the call.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(storage.buffer))
    }
}

extension SecureBytes: Equatable {
    /// Equal when both hold the same bytes; the comparison takes the same time wherever they
    /// differ (`sodium_memcmp`). Lengths are not secret and are compared first.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `SecureBytes(32 bytes, redacted)`: never the bytes.
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .struct) }
}

extension SecureBytes {
    /// A slice of these bytes as new secure bytes.
    func extracting(_ range: Range<Int>) -> SecureBytes {
        withUnsafeBytes { source in
            SecureBytes(count: range.count) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[range]))
            }
        }
    }

    /// The bytes as `Data`, for values the caller asked to read (a decrypted record).
    func copiedData() -> Data {
        withUnsafeBytes { Data($0) }
    }
}
