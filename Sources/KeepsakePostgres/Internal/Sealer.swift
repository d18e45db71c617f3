#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium
internal import SodiumKit

/// Seals and opens record values of a sealed ``PostgresStore`` (docs/FORMAT.md, "PostgreSQL
/// sealed values"): XChaCha20-Poly1305 with a fresh random nonce per write, under a key derived
/// from a master key, with the store's table, the record key and (format 2) the key's id as
/// associated data.
///
/// A sealer holds a key set: the primary key, which seals every write (none: the store writes
/// plain values), and previous keys, which only open. A format-2 value names the key that sealed
/// it; a format-1 value (written before key ids) is tried with each key.
///
/// Every libsodium function this module calls is called here, through SodiumKit's wrappers.
struct Sealer: Sendable {
    /// One master key of the set, as the sealer uses it.
    struct Key: Sendable {
        /// The sealing key, derived from the master key.
        let sealing: SecureBytes
        /// The key id written in format-2 values: the master key's 16-byte fingerprint.
        let id: [UInt8]
        /// The id as 32 lowercase hex digits, as a table's seal records it.
        let fingerprint: String
    }

    /// `KSPG`.
    static let magic: [UInt8] = [0x4B, 0x53, 0x50, 0x47]
    /// The format this release writes: 2, values that name their key.
    static let writtenFormat: UInt8 = 2
    /// `KSPG` and the format version this release writes.
    static let header: [UInt8] = magic + [writtenFormat]
    /// What a table's seal records for plain values (docs/FORMAT.md §11.2).
    static let plainID = "plain"

    /// The format version of a value that looks sealed — `KSPG`, a version byte, and at least
    /// a nonce and a tag after them — or `nil`. A record's JSON text never starts with `K`.
    static func sealedFormat(of stored: Data) -> UInt8? {
        guard stored.count >= 5 + nonceBytes + tagBytes, stored.starts(with: magic) else { return nil }
        return stored[stored.startIndex + 4]
    }
    static let nonceBytes = 24
    static let tagBytes = 16
    static let keyBytes = 32
    /// The `crypto_kdf` context (8 bytes) and subkey id of the record key.
    static let kdfContext: [UInt8] = Array("KSPGseal".utf8)
    static let kdfSubkeyID: UInt64 = 1
    /// The `crypto_kdf` subkey id and length of the master key's fingerprint, which is also its
    /// key id.
    static let fingerprintSubkeyID: UInt64 = 2
    static let fingerprintBytes = 16

    /// The key that seals every write; `nil` when the store writes plain values.
    let primary: Key?
    /// Keys that only open values.
    let previous: [Key]
    /// Whether plain values read as they are (a table being sealed); always so without a primary key.
    let readsPlain: Bool
    /// The table name the values are bound to.
    let table: String

    /// The primary key's fingerprint, or `nil` for a plain writer.
    var keyFingerprint: String? { primary?.fingerprint }
    /// What a table's seal records for this writer: its primary key's fingerprint, or `plain`.
    var writerID: String { primary?.fingerprint ?? Self.plainID }
    /// Every id this sealer reads: its keys' fingerprints, and `plain` when it reads plain values.
    var readableIDs: [String] {
        (primary.map { [$0] } ?? []).map(\.fingerprint) + previous.map(\.fingerprint)
            + (readsPlain ? [Self.plainID] : [])
    }

    /// The key of `masterKey` (32 bytes).
    static func key(_ masterKey: SecureBytes, store: String) throws(KeepsakeError) -> Key {
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
        return Key(sealing: derived, id: fingerprint, fingerprint: hex(fingerprint))
    }

    /// A sealer of the key set: `primary` writes (`nil`: plain writes), `previous` only open.
    /// A key given twice is kept once.
    init(
        primary: SecureBytes?, previous: [SecureBytes], readsPlain: Bool, table: String, store: String
    ) throws(KeepsakeError) {
        let primaryKey = try primary.map { master throws(KeepsakeError) in try Self.key(master, store: store) }
        var seen = Set(primaryKey.map { [$0.fingerprint] } ?? [])
        var others: [Key] = []
        for master in previous {
            let key = try Self.key(master, store: store)
            if seen.insert(key.fingerprint).inserted { others.append(key) }
        }
        self.primary = primaryKey
        self.previous = others
        self.readsPlain = readsPlain || primaryKey == nil
        self.table = table
    }

    /// A sealer with one key, `masterKey` (32 bytes), that reads no plain value.
    init(masterKey: SecureBytes, table: String, store: String) throws(KeepsakeError) {
        try self.init(primary: masterKey, previous: [], readsPlain: false, table: table, store: store)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The store id a `MasterKeyProvider` is asked for: 32 lowercase hex
    /// digits, a BLAKE2b hash of the store's identity (server, database, table).
    static func storeID(forIdentity identity: String) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        let input = Array(("keepsake-postgres:" + identity).utf8)
        digest.withUnsafeMutableBytes { output in
            input.withUnsafeBytes { message in Sodium.genericHash(output, message: message, key: nil) }
        }
        return hex(digest)
    }

    /// The bytes before the nonce: `KSPG`, the format, and (format 2) the key id.
    static func prefix(format: UInt8, keyID: [UInt8]) -> [UInt8] {
        magic + [format] + (format >= 2 ? keyID : [])
    }

    /// What a value written by this sealer starts with: `KSPG 02` and the primary key's id, or
    /// `nil` for a plain writer.
    var writtenPrefix: [UInt8]? { primary.map { Self.prefix(format: Self.writtenFormat, keyID: $0.id) } }

    /// The associated data of `recordKey`'s value: the value's prefix (header and, in format 2,
    /// key id), table length (4 bytes, big-endian), table, record key.
    func associatedData(forKey recordKey: String, prefix: [UInt8]) -> [UInt8] {
        let tableBytes = Array(table.utf8)
        let length = UInt32(tableBytes.count)
        return prefix + [
            UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)
        ]
            + tableBytes + Array(recordKey.utf8)
    }

    /// `plaintext` as this sealer stores it for `recordKey`: sealed with the primary key, or
    /// as given by a plain writer.
    func stored(_ plaintext: Data, forKey recordKey: String) -> Data {
        guard let primary else { return plaintext }
        var nonce = [UInt8](repeating: 0, count: Self.nonceBytes)
        nonce.withUnsafeMutableBytes { Sodium.randomBytes($0) }
        return Self.seal(
            plaintext, forKey: recordKey, with: primary, format: Self.writtenFormat, nonce: nonce, sealer: self)
    }

    /// `plaintext` sealed for `recordKey` with the primary key and `nonce`, in `format` (1 or 2):
    /// what the test vectors check.
    func seal(_ plaintext: Data, forKey recordKey: String, nonce: [UInt8], format: UInt8 = writtenFormat) -> Data? {
        guard let primary, nonce.count == Self.nonceBytes, format == 1 || format == 2 else { return nil }
        return Self.seal(plaintext, forKey: recordKey, with: primary, format: format, nonce: nonce, sealer: self)
    }

    private static func seal(
        _ plaintext: Data, forKey recordKey: String, with key: Key, format: UInt8, nonce: [UInt8], sealer: Sealer
    ) -> Data {
        let prefix = Self.prefix(format: format, keyID: key.id)
        let ad = sealer.associatedData(forKey: recordKey, prefix: prefix)
        var output = [UInt8](repeating: 0, count: prefix.count + Self.nonceBytes + plaintext.count + Self.tagBytes)
        output.replaceSubrange(0..<prefix.count, with: prefix)
        output.replaceSubrange(prefix.count..<(prefix.count + Self.nonceBytes), with: nonce)
        let offset = prefix.count + Self.nonceBytes
        output.withUnsafeMutableBytes { out in
            plaintext.withUnsafeBytes { message in
                key.sealing.withUnsafeBytes { keyBytes in
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

    /// The key id a stored value names: its key's fingerprint (format 2), `format1` for a format-1
    /// value, `plain` for a value that is not sealed; `nil` for one that starts `KSPG` but is of
    /// another format or too short.
    static func keyID(of stored: Data) -> String? {
        guard stored.starts(with: magic) else { return plainID }
        guard let format = sealedFormat(of: stored) else { return nil }
        switch format {
        case 1: return "format1"
        case 2 where stored.count >= 5 + fingerprintBytes + nonceBytes + tagBytes:
            let start = stored.startIndex + 5
            return hex([UInt8](stored[start..<(start + fingerprintBytes)]))
        default: return nil
        }
    }

    /// The plaintext of `stored`, stored under `recordKey`: opened with the key it names (format
    /// 2) or with each key of the set (format 1); a plain value as it is when this sealer reads
    /// plain values.
    ///
    /// - Throws: `KeepsakeError.Code.corruptRecord` when the value is not a sealed value of a
    ///   format this release reads (too short, another header or version) and this sealer does
    ///   not read plain values; `KeepsakeError.Code.wrongKey` naming the key id when the key
    ///   that sealed it is not in the set, and when it does not open: a value moved to another
    ///   key or table, or altered bytes.
    func open(_ stored: Data, forKey recordKey: String, store: String) throws(KeepsakeError) -> Data {
        guard stored.starts(with: Self.magic) else {
            if readsPlain { return stored }
            throw KeepsakeError(
                .corruptRecord, store: store, key: recordKey,
                "the stored value is not sealed (no KSPG header); was it written to a store without a master key?")
        }
        let bytes = [UInt8](stored)
        let format: UInt8 = bytes.count > 4 ? bytes[4] : 0
        guard format == 1 || format == 2 else {
            throw KeepsakeError(
                .corruptRecord, store: store, key: recordKey,
                "the sealed value has format version \(format); this release reads versions 1 and 2")
        }
        let prefixCount = format == 2 ? 5 + Self.fingerprintBytes : 5
        let minimum = prefixCount + Self.nonceBytes + Self.tagBytes
        guard bytes.count >= minimum else {
            throw KeepsakeError(
                .corruptRecord, store: store, key: recordKey,
                """
                the stored value is not a sealed value: \(bytes.count) bytes, fewer than the \(minimum) of an empty \
                one of format \(format)
                """)
        }
        let candidates: [Key]
        let all = (primary.map { [$0] } ?? []) + previous
        if format == 2 {
            let id = Array(bytes[5..<prefixCount])
            guard let key = all.first(where: { $0.id == id }) else {
                throw KeepsakeError(
                    .wrongKey, store: store, key: recordKey,
                    """
                    the value is sealed by the master key with fingerprint \(Self.hex(id)), which this store does not \
                    hold (\(describeKeys())); add that key to the store's previous keys (sealkey_previous_file=, \
                    sealkey_env's _PREVIOUS variable) to read it
                    """)
            }
            candidates = [key]
        } else {
            candidates = all
        }
        let prefix = Array(bytes[0..<prefixCount])
        let ad = associatedData(forKey: recordKey, prefix: prefix)
        let nonce = Array(bytes[prefixCount..<(prefixCount + Self.nonceBytes)])
        let cipher = Array(bytes[(prefixCount + Self.nonceBytes)...])
        var lastFailure: Sodium.Failure?
        for key in candidates {
            var plain = [UInt8](repeating: 0, count: cipher.count - Self.tagBytes)
            let opened = plain.withUnsafeMutableBytes { out in
                key.sealing.withUnsafeBytes { keyBytes in
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
            switch opened {
            case .success:
                defer { plain.withUnsafeMutableBytes { Sodium.zero($0) } }
                return Data(plain)
            case let .failure(failure):
                lastFailure = failure
            }
        }
        let what =
            format == 2
            ? "the value does not open with the key it names: it was moved from another key or table, or its bytes were altered"
            : """
            the sealed value (format 1, which names no key) does not open with any key of this store \
            (\(describeKeys())): another master key sealed it, it was moved from another key or table, or its \
            bytes were altered
            """
        throw KeepsakeError(
            .wrongKey, store: store, key: recordKey, what,
            cause: lastFailure.map { .library(domain: "libsodium", code: Int($0.status), message: $0.function) })
    }

    /// The key set in words: `primary 6d12…, previous 1a2b…`.
    func describeKeys() -> String {
        var parts: [String] = []
        if let primary { parts.append("primary key \(primary.fingerprint)") } else { parts.append("no primary key") }
        if !previous.isEmpty { parts.append("previous " + previous.map(\.fingerprint).joined(separator: ", ")) }
        return parts.joined(separator: "; ")
    }
}
#endif
