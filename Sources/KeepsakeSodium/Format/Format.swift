import Keepsake

/// The constants of the on-disk format, version 1. `docs/FORMAT.md` is their specification;
/// change one only together with it and a new format version.
enum Format {
    /// The format version written in the header and in every record file.
    static let version: UInt16 = 1

    static let headerMagic = Array("KSSTORE\u{1}".utf8)   // 8 bytes
    static let recordMagic = Array("KSRECRD\u{1}".utf8)   // 8 bytes

    static let headerFileName = "keepsake.header"
    static let lockFileName = "keepsake.lock"
    static let recordSuffix = ".ksr"
    /// Temporary and rollback files start with this; they are removed when found at open.
    static let temporaryPrefix = FileSystem.live.temporaryPrefix

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
    enum Kind { case corrupt, wrongKey }

    let kind: Kind
    let reason: String
    let sodium: Sodium.Failure?

    static func corrupt(_ reason: String, _ sodium: Sodium.Failure? = nil) -> FormatFailure {
        FormatFailure(kind: .corrupt, reason: reason, sodium: sodium)
    }

    /// Always a `Cause.library`: libsodium's status when a libsodium check failed, the format's
    /// own domain for a structural check.
    var cause: KeepsakeError.Cause {
        if let sodium {
            return .library(domain: "libsodium", code: Int(sodium.status), message: "\(sodium.function): \(reason)")
        }
        return .library(domain: "KeepsakeSodium.format", code: kind == .wrongKey ? 2 : 1, message: reason)
    }
}

/// Subkeys of a master key (key file, keyring or Argon2id output): one wraps the data key,
/// one computes the header's key check.
struct MasterSubkeys {
    let wrapKey: SecureBytes
    let checkKey: SecureBytes

    init(masterKey: SecureBytes) {
        precondition(masterKey.count == Format.keyBytes, "a master key is 32 bytes")
        wrapKey = masterKey.withUnsafeBytes { key in
            SecureBytes(count: Format.keyBytes) {
                Sodium.deriveSubkey($0, id: Format.wrapSubkeyID, context: Format.masterContext, key: key)
            }
        }
        checkKey = masterKey.withUnsafeBytes { key in
            SecureBytes(count: Format.keyBytes) {
                Sodium.deriveSubkey($0, id: Format.checkSubkeyID, context: Format.masterContext, key: key)
            }
        }
    }
}

/// Subkeys of a store's data key: one encrypts records, one names their files.
struct DataSubkeys: Sendable {
    let recordKey: SecureBytes
    let nameKey: SecureBytes

    init(dataKey: SecureBytes) {
        precondition(dataKey.count == Format.keyBytes, "a data key is 32 bytes")
        recordKey = dataKey.withUnsafeBytes { key in
            SecureBytes(count: Format.keyBytes) {
                Sodium.deriveSubkey($0, id: Format.recordSubkeyID, context: Format.dataContext, key: key)
            }
        }
        nameKey = dataKey.withUnsafeBytes { key in
            SecureBytes(count: Format.keyBytes) {
                Sodium.deriveSubkey($0, id: Format.nameSubkeyID, context: Format.dataContext, key: key)
            }
        }
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
