internal import SodiumKit

/// The store header file, `keepsake.header` (200 bytes; `docs/FORMAT.md` §3).
///
/// It holds the store id, how the master key is obtained (a raw key, or Argon2id parameters and
/// salt), the random data key wrapped by the master key, a key check that tells a wrong key
/// apart from a damaged header, and a checksum over everything.
struct StoreHeader: Equatable {
    enum KeyKind: UInt8 {
        /// A 32-byte master key from a key file, the keyring or another provider.
        case raw = 1
        /// A master key derived from a passphrase with Argon2id 1.3.
        case passphrase = 2
    }

    static let fieldsSize = 64
    static let wrappedKeySize = 32 + 16
    static let size = fieldsSize + 24 + wrappedKeySize + 32 + 32  // 200

    var keyKind: KeyKind
    var storeID: [UInt8]
    var salt: [UInt8]
    var opsLimit: UInt64
    var memLimit: UInt64
    var keyGeneration: UInt32
    var wrapNonce: [UInt8]
    var wrappedDataKey: [UInt8]
    var keyCheck: [UInt8]

    /// Bytes 0..<64: everything about the store and its key, authenticated by the wrap.
    var fields: [UInt8] {
        var writer = ByteWriter()
        writer.append(Format.headerMagic)
        writer.append(Format.version)
        writer.append(keyKind.rawValue)
        writer.append(UInt8(0))
        writer.append(storeID)
        writer.append(salt)
        writer.append(opsLimit)
        writer.append(memLimit)
        writer.append(keyGeneration)
        precondition(writer.bytes.count == Self.fieldsSize)
        return writer.bytes
    }

    /// The 200 header bytes, checksum included.
    var encoded: [UInt8] {
        var bytes = fields + wrapNonce + wrappedDataKey + keyCheck
        bytes += blake2b256(bytes)
        precondition(bytes.count == Self.size)
        return bytes
    }

    /// A header wrapping `dataKey` under `masterKey`.
    static func seal(
        keyKind: KeyKind, storeID: [UInt8], salt: [UInt8], opsLimit: UInt64, memLimit: UInt64,
        keyGeneration: UInt32, wrapNonce: [UInt8], masterKey: SecureBytes, dataKey: SecureBytes
    ) -> StoreHeader {
        precondition(
            storeID.count == Format.storeIDBytes && salt.count == Sodium.pwhashSaltBytes
                && wrapNonce.count == Sodium.aeadNonceBytes && dataKey.count == Format.keyBytes)
        var header = StoreHeader(
            keyKind: keyKind, storeID: storeID, salt: salt, opsLimit: opsLimit, memLimit: memLimit,
            keyGeneration: keyGeneration, wrapNonce: wrapNonce, wrappedDataKey: [], keyCheck: [])
        let subkeys = MasterSubkeys(masterKey: masterKey)
        let associated = header.fields
        let wrapped = AEAD.seal(dataKey, associatedData: associated, nonce: wrapNonce, key: subkeys.wrapKey)
        precondition(wrapped.count == wrappedKeySize)
        header.wrappedDataKey = wrapped
        header.keyCheck = blake2b256(associated + wrapNonce + wrapped, key: subkeys.checkKey)
        return header
    }

    /// Parses and checks the structure and checksum of header bytes; no key is needed.
    static func parse(_ bytes: [UInt8]) throws(FormatFailure) -> StoreHeader {
        guard bytes.count >= Format.headerMagic.count, Array(bytes[0..<8]) == Format.headerMagic else {
            throw .corrupt("the header file does not start with the Keepsake store magic bytes")
        }
        guard bytes.count == size else {
            throw .corrupt("the header file is \(bytes.count) bytes long, not \(size)")
        }
        guard blake2b256(Array(bytes[0..<(size - 32)])) == Array(bytes[(size - 32)...]) else {
            throw .corrupt("the header's checksum does not match its contents (the header was altered or damaged)")
        }
        var reader = ByteReader(bytes)
        _ = reader.take(8)
        let version = reader.integer(UInt16.self)!
        guard version == Format.version else {
            throw .corrupt("the header is format version \(version); this release reads version \(Format.version) only")
        }
        let kindByte = reader.take(1)![0]
        let reserved = reader.take(1)![0]
        guard let kind = KeyKind(rawValue: kindByte), reserved == 0 else {
            throw .corrupt("the header names an unknown key kind \(kindByte)")
        }
        let header = StoreHeader(
            keyKind: kind,
            storeID: reader.take(Format.storeIDBytes)!,
            salt: reader.take(Sodium.pwhashSaltBytes)!,
            opsLimit: reader.integer(UInt64.self)!,
            memLimit: reader.integer(UInt64.self)!,
            keyGeneration: reader.integer(UInt32.self)!,
            wrapNonce: reader.take(Sodium.aeadNonceBytes)!,
            wrappedDataKey: reader.take(wrappedKeySize)!,
            keyCheck: reader.take(32)!)
        switch kind {
        case .raw:
            guard header.salt.allSatisfy({ $0 == 0 }), header.opsLimit == 0, header.memLimit == 0 else {
                throw .corrupt("a raw-key header must have a zero salt and zero Argon2id limits")
            }
        case .passphrase:
            guard (Sodium.pwhashOpsLimitMin...Format.passphraseOpsLimitMax).contains(header.opsLimit),
                (Sodium.pwhashMemLimitMin...Format.passphraseMemLimitMax).contains(header.memLimit)
            else {
                throw .corrupt(
                    """
                    the header's Argon2id limits (\(header.opsLimit) passes, \(header.memLimit) bytes) are outside \
                    \(Sodium.pwhashOpsLimitMin)…\(Format.passphraseOpsLimitMax) passes and \
                    \(Sodium.pwhashMemLimitMin)…\(Format.passphraseMemLimitMax) bytes
                    """)
            }
        }
        return header
    }

    /// The data key, if `masterKey` is this store's: the key check first (a mismatch is a
    /// wrong key), then the authenticated unwrap (a failure is a damaged header).
    func unwrapDataKey(masterKey: SecureBytes) throws(FormatFailure) -> SecureBytes {
        let subkeys = MasterSubkeys(masterKey: masterKey)
        let expected = blake2b256(fields + wrapNonce + wrappedDataKey, key: subkeys.checkKey)
        let matches = expected.withUnsafeBytes { a in keyCheck.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
        guard matches else {
            throw FormatFailure(
                kind: .wrongKey, reason: "the key check in the header does not match this key", sodium: nil)
        }
        let associated = fields
        return try SecureBytes(count: Format.keyBytes) { (plain) throws(FormatFailure) in
            let result = AEAD.open(
                wrappedDataKey, into: plain, associatedData: associated, nonce: wrapNonce,
                key: subkeys.wrapKey)
            if case let .failure(failure) = result {
                throw .corrupt("the wrapped data key failed authentication although the key check matched", failure)
            }
        }
    }
}
