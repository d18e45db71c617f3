internal import CSodium
import Foundation
import Keepsake
import KeepsakeSodium

/// Seals and opens record values of a sealed ``PostgresStore`` (docs/FORMAT.md, "PostgreSQL
/// sealed values"): XChaCha20-Poly1305 with a fresh random nonce per write, under a key derived
/// from the master key, with the store's table and the record key as associated data.
///
/// Every libsodium function this module calls is called here, once.
struct Sealer: Sendable {
    /// `KSPG`, then the format version 1.
    static let header: [UInt8] = [0x4B, 0x53, 0x50, 0x47, 0x01]

    /// The format version of a value that looks sealed — `KSPG`, a version byte, and at least
    /// a nonce and a tag after them — or `nil`. A record's JSON text never starts with `K`.
    static func sealedFormat(of stored: Data) -> UInt8? {
        guard stored.count >= header.count + nonceBytes + tagBytes, stored.starts(with: header[0..<4]) else {
            return nil
        }
        return stored[stored.startIndex + 4]
    }
    static let nonceBytes = 24
    static let tagBytes = 16
    static let keyBytes = 32
    /// The `crypto_kdf` context and subkey id of the record key.
    static let kdfContext: [CChar] = Array("KSPGseal".utf8CString)
    static let kdfSubkeyID: UInt64 = 1
    /// The `crypto_kdf` subkey id and length of the master key's fingerprint (``TableSeal``).
    static let fingerprintSubkeyID: UInt64 = 2
    static let fingerprintBytes = 16

    private static let initialised: Bool = sodium_init() >= 0

    /// The record key, derived from the master key.
    private let key: SecureBytes
    /// The table name the values are bound to.
    let table: String
    /// The master key's fingerprint: 32 lowercase hex digits of a 16-byte `crypto_kdf` subkey of
    /// it (docs/FORMAT.md §11.2), which a table's seal records and reveals nothing of the key.
    let keyFingerprint: String

    /// A sealer with the record key derived from `masterKey` (32 bytes).
    init(masterKey: SecureBytes, table: String, store: String) throws(KeepsakeError) {
        precondition(Self.initialised, "libsodium failed to initialise")
        guard masterKey.count == Self.keyBytes else {
            throw KeepsakeError(
                .invalidArgument, store: store, "a master key must be 32 bytes; the one given has \(masterKey.count)")
        }
        let derived = SecureBytes(count: Self.keyBytes) { output in
            masterKey.withUnsafeBytes { master in
                let status = Self.kdfContext.withUnsafeBufferPointer { context in
                    crypto_kdf_derive_from_key(
                        output.baseAddress!.assumingMemoryBound(to: UInt8.self), Self.keyBytes, Self.kdfSubkeyID,
                        context.baseAddress!, master.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
                precondition(status == 0, "crypto_kdf_derive_from_key failed for valid lengths")
            }
        }
        var fingerprint = [UInt8](repeating: 0, count: Self.fingerprintBytes)
        masterKey.withUnsafeBytes { master in
            let status = Self.kdfContext.withUnsafeBufferPointer { context in
                crypto_kdf_derive_from_key(
                    &fingerprint, Self.fingerprintBytes, Self.fingerprintSubkeyID, context.baseAddress!,
                    master.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            precondition(status == 0, "crypto_kdf_derive_from_key failed for valid lengths")
        }
        self.key = derived
        self.table = table
        self.keyFingerprint = fingerprint.map { String(format: "%02x", $0) }.joined()
    }

    /// The store id a `MasterKeyProvider` is asked for: 32 lowercase hex
    /// digits, a BLAKE2b hash of the store's identity (server, database, table).
    static func storeID(forIdentity identity: String) -> String {
        precondition(initialised, "libsodium failed to initialise")
        var digest = [UInt8](repeating: 0, count: 16)
        let input = Array(("keepsake-postgres:" + identity).utf8)
        let status = crypto_generichash(&digest, digest.count, input, UInt64(input.count), nil, 0)
        precondition(status == 0, "crypto_generichash failed for valid lengths")
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The associated data of `key`'s value: header, table length (4 bytes, big-endian), table,
    /// record key.
    func associatedData(forKey recordKey: String) -> [UInt8] {
        let tableBytes = Array(table.utf8)
        let length = UInt32(tableBytes.count)
        return Self.header + [
            UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)
        ]
            + tableBytes + Array(recordKey.utf8)
    }

    /// `plaintext` sealed for `recordKey`: header, nonce, ciphertext and tag.
    func seal(_ plaintext: Data, forKey recordKey: String) -> Data {
        var nonce = [UInt8](repeating: 0, count: Self.nonceBytes)
        nonce.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return seal(plaintext, forKey: recordKey, nonce: nonce)
    }

    /// `plaintext` sealed for `recordKey` with `nonce` (tests give a fixed one for vectors).
    func seal(_ plaintext: Data, forKey recordKey: String, nonce: [UInt8]) -> Data {
        precondition(nonce.count == Self.nonceBytes, "a nonce is 24 bytes")
        let ad = associatedData(forKey: recordKey)
        var output = [UInt8](repeating: 0, count: Self.header.count + Self.nonceBytes + plaintext.count + Self.tagBytes)
        output.replaceSubrange(0..<Self.header.count, with: Self.header)
        output.replaceSubrange(Self.header.count..<(Self.header.count + Self.nonceBytes), with: nonce)
        let offset = Self.header.count + Self.nonceBytes
        output.withUnsafeMutableBufferPointer { out in
            plaintext.withUnsafeBytes { message in
                key.withUnsafeBytes { keyBytes in
                    var length: UInt64 = 0
                    let status = crypto_aead_xchacha20poly1305_ietf_encrypt(
                        out.baseAddress! + offset, &length,
                        message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
                        ad, UInt64(ad.count), nil, nonce,
                        keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    precondition(status == 0, "crypto_aead_xchacha20poly1305_ietf_encrypt failed")
                }
            }
        }
        return Data(output)
    }

    /// The plaintext of `sealed`, stored under `recordKey`.
    ///
    /// - Throws: `KeepsakeError.Code.corruptRecord` when the value is not a sealed
    ///   value of this format (too short, another header), and
    ///   `KeepsakeError.Code.wrongKey` when it does not open: another master key, a
    ///   value moved to another key or table, or altered bytes.
    func open(_ sealed: Data, forKey recordKey: String, store: String) throws(KeepsakeError) -> Data {
        let minimum = Self.header.count + Self.nonceBytes + Self.tagBytes
        guard sealed.count >= minimum else {
            throw KeepsakeError(
                .corruptRecord, store: store, key: recordKey,
                "the stored value is not a sealed value: \(sealed.count) bytes, fewer than the \(minimum) of an empty one"
            )
        }
        let bytes = [UInt8](sealed)
        guard Array(bytes[0..<4]) == Array(Self.header[0..<4]) else {
            throw KeepsakeError(
                .corruptRecord, store: store, key: recordKey,
                "the stored value is not sealed (no KSPG header); was it written to a store without a master key?")
        }
        guard bytes[4] == Self.header[4] else {
            throw KeepsakeError(
                .corruptRecord, store: store, key: recordKey,
                "the sealed value has format version \(bytes[4]); this release reads version \(Self.header[4])")
        }
        let ad = associatedData(forKey: recordKey)
        let nonce = Array(bytes[Self.header.count..<(Self.header.count + Self.nonceBytes)])
        let cipher = Array(bytes[(Self.header.count + Self.nonceBytes)...])
        var plain = [UInt8](repeating: 0, count: cipher.count - Self.tagBytes)
        let status = plain.withUnsafeMutableBufferPointer { out in
            key.withUnsafeBytes { keyBytes in
                var length: UInt64 = 0
                return crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out.baseAddress, &length, nil, cipher, UInt64(cipher.count), ad, UInt64(ad.count), nonce,
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard status == 0 else {
            throw KeepsakeError(
                .wrongKey, store: store, key: recordKey,
                """
                the sealed value does not open: another master key sealed it, it was moved from another key or \
                table, or its bytes were altered
                """,
                cause: .library(
                    domain: "libsodium", code: Int(status), message: "crypto_aead_xchacha20poly1305_ietf_decrypt"))
        }
        defer { sodium_memzero(&plain, plain.count) }
        return Data(plain)
    }
}
