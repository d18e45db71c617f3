internal import FileKit
import Keepsake
internal import SodiumKit

/// The constants of the on-disk format, version 1. `docs/FORMAT.md` is their specification;
/// change one only together with it and a new format version.
enum Format {
    /// The format version written in the header and in every record file.
    static let version: UInt16 = 1
    /// The format version of a store whose data key rotates (`docs/FORMAT.md` §6.1): its
    /// header holds several data key generations and its record files name theirs. A store is
    /// written in format 1 until its first data key rotation.
    static let rotatingVersion: UInt16 = 2
    /// The most data keys a format-2 header may hold.
    static let maxDataKeys = 16

    static let headerMagic = Array("KSSTORE\u{1}".utf8)  // 8 bytes
    static let recordMagic = Array("KSRECRD\u{1}".utf8)  // 8 bytes

    static let headerFileName = "keepsake.header"
    static let lockFileName = "keepsake.lock"
    static let recordSuffix = ".ksr"
    /// Temporary and rollback files start with this; they are removed when found at open.
    static let temporaryPrefix = FileSystem.live.temporaryPrefix

    /// The most Argon2id work a header may ask for: twice libsodium's SENSITIVE limits (8 passes
    /// over 2 GiB), headroom above anything `migrate init` or ``PassphraseLimits`` produce. An
    /// untrusted header asking for more is refused at once instead of keeping an open busy.
    static let passphraseOpsLimitMax = 2 * Sodium.pwhashOpsLimitSensitive
    static let passphraseMemLimitMax = 2 * Sodium.pwhashMemLimitSensitive

    static let keyBytes = 32
    static let storeIDBytes = 16
    static let nameHashBytes = 32

    /// `crypto_kdf` contexts and subkey ids.
    static let masterContext = Array("KSmaster".utf8)
    static let wrapSubkeyID: UInt64 = 1
    static let checkSubkeyID: UInt64 = 2
    static let dataContext = Array("KSrecord".utf8)
    static let recordSubkeyID: UInt64 = 1
    static let nameSubkeyID: UInt64 = 2
}

/// Why stored bytes were refused. Never holds a secret or a record key.
struct FormatFailure: Error {
    enum Kind {
        case corrupt, wrongKey
        /// A record sealed under a data key generation older than any the key set holds: a
        /// retired key.
        case unknownGeneration
        /// A record naming a generation newer than the key set's primary: another process
        /// rotated the data key, or the file is damaged.
        case newerGeneration
    }

    let kind: Kind
    let reason: String
    let sodium: Sodium.Failure?

    static func corrupt(_ reason: String, _ sodium: Sodium.Failure? = nil) -> FormatFailure {
        FormatFailure(kind: .corrupt, reason: reason, sodium: sodium)
    }

    /// For a record under a data key generation the store does not hold, ` (` the reason `)`
    /// for an error message; else nothing (the cause holds the reason).
    var generationNote: String { kind == .unknownGeneration || kind == .newerGeneration ? " (\(reason))" : "" }

    /// Always a `Cause.library`: libsodium's status when a libsodium check failed, the format's
    /// own domain for a structural check.
    var cause: KeepsakeError.Cause {
        if let sodium {
            return .library(domain: "libsodium", code: Int(sodium.status), message: "\(sodium.function): \(reason)")
        }
        return .library(domain: "KeepsakeSodium.format", code: kind == .corrupt ? 1 : 2, message: reason)
    }
}

/// Subkeys of a master key (key file, keyring or Argon2id output): one wraps the data key,
/// one computes the header's key check.
struct MasterSubkeys: Sendable {
    let wrapKey: SecureBytes
    let checkKey: SecureBytes

    init(masterKey: SecureBytes) {
        precondition(masterKey.count == Format.keyBytes, "a master key is 32 bytes")
        wrapKey = masterKey.subkey(id: Format.wrapSubkeyID, context: Format.masterContext)
        checkKey = masterKey.subkey(id: Format.checkSubkeyID, context: Format.masterContext)
    }
}

/// Subkeys of a store's data key: one encrypts records, one names their files.
struct DataSubkeys: Sendable {
    let recordKey: SecureBytes
    let nameKey: SecureBytes

    init(dataKey: SecureBytes) {
        precondition(dataKey.count == Format.keyBytes, "a data key is 32 bytes")
        recordKey = dataKey.subkey(id: Format.recordSubkeyID, context: Format.dataContext)
        nameKey = dataKey.subkey(id: Format.nameSubkeyID, context: Format.dataContext)
    }

    init(recordKey: SecureBytes, nameKey: SecureBytes) {
        self.recordKey = recordKey
        self.nameKey = nameKey
    }

    /// `BLAKE2b-256(key: nameKey, message: UTF-8 of the record key)`.
    func nameHash(of recordKey: String) -> [UInt8] {
        let message = Array(recordKey.utf8)
        var hash = [UInt8](repeating: 0, count: Format.nameHashBytes)
        nameKey.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                hash.withUnsafeMutableBytes { Sodium.genericHash($0, message: message, key: key) }
            }
        }
        return hash
    }

    /// The record's file name: the name hash in lowercase hex, then `.ksr`.
    func fileName(of recordKey: String) -> String {
        Hex.encode(nameHash(of: recordKey)) + Format.recordSuffix
    }
}

/// BLAKE2b-256 of `message`, keyed when `key` is given.
func blake2b256(_ message: [UInt8], key: SecureBytes? = nil) -> [UInt8] {
    var hash = [UInt8](repeating: 0, count: 32)
    message.withUnsafeBytes { message in
        hash.withUnsafeMutableBytes { output in
            if let key {
                key.withUnsafeBytes { Sodium.genericHash(output, message: message, key: $0) }
            } else {
                Sodium.genericHash(output, message: message, key: nil)
            }
        }
    }
    return hash
}

extension SecureBytes {
    /// The 32-byte subkey `id` of this key in `context` (`crypto_kdf_derive_from_key`).
    func subkey(id: UInt64, context: [UInt8]) -> SecureBytes {
        withUnsafeBytes { key in
            SecureBytes(count: Format.keyBytes) {
                Sodium.deriveSubkey($0, id: id, context: context, key: key)
            }
        }
    }
}

/// XChaCha20-Poly1305 on the format's buffers: the pointer scopes written once.
enum AEAD {
    /// The length of a nonce, in bytes (24).
    static var nonceBytes: Int { Sodium.aeadNonceBytes }

    /// `plaintext` sealed under `key`: ciphertext ‖ 16-byte tag.
    static func seal(_ plaintext: SecureBytes, associatedData: [UInt8], nonce: [UInt8], key: SecureBytes) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: plaintext.count + Sodium.aeadTagBytes)
        plaintext.withUnsafeBytes { plain in
            key.withUnsafeBytes { key in
                associatedData.withUnsafeBytes { ad in
                    nonce.withUnsafeBytes { nonce in
                        sealed.withUnsafeMutableBytes {
                            Sodium.seal($0, plaintext: plain, associatedData: ad, nonce: nonce, key: key)
                        }
                    }
                }
            }
        }
        return sealed
    }

    /// Opens `sealed` into `plaintext` (`sealed.count` − 16 bytes); a failure when it does not
    /// authenticate under `key`, `associatedData` and `nonce`.
    static func open(
        _ sealed: [UInt8], into plaintext: UnsafeMutableRawBufferPointer, associatedData: [UInt8], nonce: [UInt8],
        key: SecureBytes
    ) -> Result<Void, Sodium.Failure> {
        key.withUnsafeBytes { key in
            associatedData.withUnsafeBytes { ad in
                nonce.withUnsafeBytes { nonce in
                    sealed.withUnsafeBytes { sealed in
                        Sodium.open(plaintext, ciphertext: sealed, associatedData: ad, nonce: nonce, key: key)
                    }
                }
            }
        }
    }
}

extension AEAD {
    /// `plaintext` sealed under `key` into `sealed` (`plaintext.count` + 16 bytes): the form a
    /// record file uses, with every buffer the caller's.
    static func seal(
        _ plaintext: UnsafeRawBufferPointer, into sealed: UnsafeMutableRawBufferPointer, associatedData: [UInt8],
        nonce: UnsafeRawBufferPointer, key: SecureBytes
    ) {
        key.withUnsafeBytes { key in
            associatedData.withUnsafeBytes { ad in
                Sodium.seal(sealed, plaintext: plaintext, associatedData: ad, nonce: nonce, key: key)
            }
        }
    }
}

/// Memory for one record's plaintext while it is sealed or opened.
///
/// What is guaranteed: the buffer is ordinary heap memory (`malloc`), private to the call, and
/// is zeroed with `sodium_memzero` — which the compiler cannot drop — before it is freed,
/// whether the body returns or throws. What is not: unlike ``SecureBytes`` (kept for the keys,
/// one allocation per store), it has no guard pages and is not locked in RAM, so while the call
/// runs (microseconds) the page may be swapped out. A guarded allocation per record cost about
/// fifteen system calls (`mmap`, `mprotect`, `mlock`, `madvise`, `munmap`) for a plaintext that
/// the caller hands in, or gets back, as an ordinary `Data` anyway.
enum PlaintextScratch {
    /// Calls `body` with `count` bytes of scratch memory (contents unspecified), zeroed and
    /// freed when it returns or throws.
    static func with<R, E: Error>(
        count: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        precondition(count >= 0, "PlaintextScratch: negative count")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        defer {
            Sodium.zero(buffer)
            buffer.deallocate()
        }
        return try body(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
    }
}
