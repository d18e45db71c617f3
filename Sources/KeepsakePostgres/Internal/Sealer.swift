#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium
internal import SodiumKit

/// Seals and opens record values of a sealed ``PostgresStore`` (docs/FORMAT.md, "PostgreSQL
/// sealed values"): XChaCha20-Poly1305 with a fresh random nonce per write, under a key derived
/// from the master key, with the store's table and the record key as associated data.
///
/// Every libsodium function this module calls is called here, through SodiumKit's wrappers.
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
    /// The `crypto_kdf` context (8 bytes) and subkey id of the record key.
    static let kdfContext: [UInt8] = Array("KSPGseal".utf8)
    static let kdfSubkeyID: UInt64 = 1
    /// The `crypto_kdf` subkey id and length of the master key's fingerprint (``TableSeal``).
    static let fingerprintSubkeyID: UInt64 = 2
    static let fingerprintBytes = 16

    /// The record key, derived from the master key.
    private let key: SecureBytes
    /// The table name the values are bound to.
    let table: String
    /// The master key's fingerprint: 32 lowercase hex digits of a 16-byte `crypto_kdf` subkey of
    /// it (docs/FORMAT.md §11.2), which a table's seal records and reveals nothing of the key.
    let keyFingerprint: String

    /// A sealer with the record key derived from `masterKey` (32 bytes).
    init(masterKey: SecureBytes, table: String, store: String) throws(KeepsakeError) {
        guard masterKey.count == Self.keyBytes else {
            throw KeepsakeError(
                .invalidArgument, store: store, "a master key must be 32 bytes; the one given has \(masterKey.count)")
        }
        let derived = SecureBytes(count: Self.keyBytes) { output in
            masterKey.withUnsafeBytes { master in
                Sodium.deriveSubkey(output, id: Self.kdfSubkeyID, context: Self.kdfContext, key: master)
            }
        }
        var fingerprint = [UInt8](repeating: 0, count: Self.fingerprintBytes)
        masterKey.withUnsafeBytes { master in
            fingerprint.withUnsafeMutableBytes { output in
                Sodium.deriveSubkey(output, id: Self.fingerprintSubkeyID, context: Self.kdfContext, key: master)
            }
        }
        self.key = derived
        self.table = table
        self.keyFingerprint = fingerprint.map { String(format: "%02x", $0) }.joined()
    }

    /// The store id a `MasterKeyProvider` is asked for: 32 lowercase hex
    /// digits, a BLAKE2b hash of the store's identity (server, database, table).
    static func storeID(forIdentity identity: String) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        let input = Array(("keepsake-postgres:" + identity).utf8)
        digest.withUnsafeMutableBytes { output in
            input.withUnsafeBytes { message in Sodium.genericHash(output, message: message, key: nil) }
        }
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
        nonce.withUnsafeMutableBytes { Sodium.randomBytes($0) }
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
        output.withUnsafeMutableBytes { out in
            plaintext.withUnsafeBytes { message in
                key.withUnsafeBytes { keyBytes in
                    ad.withUnsafeBytes { associated in
                        nonce.withUnsafeBytes { nonceBytes in
                            Sodium.seal(
                                UnsafeMutableRawBufferPointer(rebasing: out[offset...]), plaintext: message,
                                associatedData: associated, nonce: nonceBytes, key: keyBytes)
                        }
                    }
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
        let opened = plain.withUnsafeMutableBytes { out in
            key.withUnsafeBytes { keyBytes in
                cipher.withUnsafeBytes { ciphertext in
                    ad.withUnsafeBytes { associated in
                        nonce.withUnsafeBytes { nonceBytes in
                            Sodium.open(
                                out, ciphertext: ciphertext, associatedData: associated, nonce: nonceBytes,
                                key: keyBytes)
                        }
                    }
                }
            }
        }
        if case let .failure(failure) = opened {
            throw KeepsakeError(
                .wrongKey, store: store, key: recordKey,
                """
                the sealed value does not open: another master key sealed it, it was moved from another key or \
                table, or its bytes were altered
                """,
                cause: .library(domain: "libsodium", code: Int(failure.status), message: failure.function))
        }
        defer { plain.withUnsafeMutableBytes { Sodium.zero($0) } }
        return Data(plain)
    }
}
#endif
