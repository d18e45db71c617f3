internal import SodiumKit

/// The store header file, `keepsake.header` (`docs/FORMAT.md` §3 and §6.1).
///
/// It holds the store id, how the master key is obtained (a raw key, or Argon2id parameters and
/// salt), the data keys wrapped by the master key, a key check that tells a wrong key apart from
/// a damaged header, and a checksum over everything. Format 1 (200 bytes) wraps one data key;
/// format 2, which a store takes at its first data key rotation, wraps the name key and the data
/// key of each generation (`208 + 36 × count` bytes).
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
    /// Format 2: the 64 bytes of format 1 then primary generation u32, key count u16, zero u16.
    static let rotatingFieldsSize = 72

    /// The size of a format-2 header holding `count` data keys.
    static func rotatingSize(count: Int) -> Int {
        rotatingFieldsSize + 24 + (Format.keyBytes + count * (4 + Format.keyBytes) + 16) + 32 + 32
    }

    var formatVersion: UInt16 = Format.version
    var keyKind: KeyKind
    var storeID: [UInt8]
    var salt: [UInt8]
    var opsLimit: UInt64
    var memLimit: UInt64
    var keyGeneration: UInt32
    /// Format 2: the generation that writes (1 for format 1).
    var primaryGeneration: UInt32 = 1
    /// Format 2: how many data keys the header wraps (1 for format 1).
    var keyCount: UInt16 = 1
    var wrapNonce: [UInt8]
    var wrappedDataKey: [UInt8]
    var keyCheck: [UInt8]

    /// Everything about the store and its keys, authenticated by the wrap: bytes 0..<64
    /// (format 1) or 0..<72 (format 2).
    var fields: [UInt8] {
        var writer = ByteWriter()
        writer.append(Format.headerMagic)
        writer.append(formatVersion)
        writer.append(keyKind.rawValue)
        writer.append(UInt8(0))
        writer.append(storeID)
        writer.append(salt)
        writer.append(opsLimit)
        writer.append(memLimit)
        writer.append(keyGeneration)
        if formatVersion == Format.rotatingVersion {
            writer.append(primaryGeneration)
            writer.append(keyCount)
            writer.append(UInt16(0))
        }
        precondition(
            writer.bytes.count == (formatVersion == Format.version ? Self.fieldsSize : Self.rotatingFieldsSize))
        return writer.bytes
    }

    /// The header's bytes, checksum included.
    var encoded: [UInt8] {
        var bytes = fields + wrapNonce + wrappedDataKey + keyCheck
        bytes += blake2b256(bytes)
        return bytes
    }

    /// A format-1 header wrapping `dataKey` under `masterKey`.
    static func seal(
        keyKind: KeyKind, storeID: [UInt8], salt: [UInt8], opsLimit: UInt64, memLimit: UInt64,
        keyGeneration: UInt32, wrapNonce: [UInt8], masterKey: SecureBytes, dataKey: SecureBytes
    ) -> StoreHeader {
        precondition(dataKey.count == Format.keyBytes)
        let header = StoreHeader(
            keyKind: keyKind, storeID: storeID, salt: salt, opsLimit: opsLimit, memLimit: memLimit,
            keyGeneration: keyGeneration, wrapNonce: wrapNonce, wrappedDataKey: [], keyCheck: [])
        return header.sealing(dataKey, masterKey: masterKey)
    }

    /// A header wrapping `keys` under `masterKey`: format 1 for a format-1 set, else format 2.
    static func seal(
        keyKind: KeyKind, storeID: [UInt8], salt: [UInt8], opsLimit: UInt64, memLimit: UInt64,
        keyGeneration: UInt32, wrapNonce: [UInt8], masterKey: SecureBytes, keys: KeySet
    ) -> StoreHeader {
        if keys.formatVersion == Format.version {
            return seal(
                keyKind: keyKind, storeID: storeID, salt: salt, opsLimit: opsLimit, memLimit: memLimit,
                keyGeneration: keyGeneration, wrapNonce: wrapNonce, masterKey: masterKey,
                dataKey: keys.generations[0].dataKey)
        }
        precondition(keys.generations.count <= Format.maxDataKeys)
        let header = StoreHeader(
            formatVersion: Format.rotatingVersion, keyKind: keyKind, storeID: storeID, salt: salt, opsLimit: opsLimit,
            memLimit: memLimit, keyGeneration: keyGeneration, primaryGeneration: keys.primary.number,
            keyCount: UInt16(keys.generations.count), wrapNonce: wrapNonce, wrappedDataKey: [], keyCheck: [])
        return header.sealing(keys.plaintext(), masterKey: masterKey)
    }

    /// This header's master key settings (kind, salt, Argon2id limits, key generation) over
    /// `keys`, wrapped under the same master key, whose subkeys are `master`: a data key
    /// rotation's new header.
    func rewrapping(_ keys: KeySet, master: MasterSubkeys, wrapNonce: [UInt8]) -> StoreHeader {
        precondition(keys.formatVersion == Format.rotatingVersion && keys.generations.count <= Format.maxDataKeys)
        let header = StoreHeader(
            formatVersion: Format.rotatingVersion, keyKind: keyKind, storeID: storeID, salt: salt, opsLimit: opsLimit,
            memLimit: memLimit, keyGeneration: keyGeneration, primaryGeneration: keys.primary.number,
            keyCount: UInt16(keys.generations.count), wrapNonce: wrapNonce, wrappedDataKey: [], keyCheck: [])
        return header.sealing(keys.plaintext(), subkeys: master)
    }

    /// This header with `plaintext` wrapped under `masterKey` and its key check computed.
    private func sealing(_ plaintext: SecureBytes, masterKey: SecureBytes) -> StoreHeader {
        sealing(plaintext, subkeys: MasterSubkeys(masterKey: masterKey))
    }

    private func sealing(_ plaintext: SecureBytes, subkeys: MasterSubkeys) -> StoreHeader {
        precondition(
            storeID.count == Format.storeIDBytes && salt.count == Sodium.pwhashSaltBytes
                && wrapNonce.count == Sodium.aeadNonceBytes)
        var header = self
        let associated = header.fields
        header.wrappedDataKey = AEAD.seal(plaintext, associatedData: associated, nonce: wrapNonce, key: subkeys.wrapKey)
        header.keyCheck = blake2b256(associated + wrapNonce + header.wrappedDataKey, key: subkeys.checkKey)
        return header
    }

    /// Parses and checks the structure and checksum of header bytes; no key is needed.
    static func parse(_ bytes: [UInt8]) throws(FormatFailure) -> StoreHeader {
        guard bytes.count >= Format.headerMagic.count, Array(bytes[0..<8]) == Format.headerMagic else {
            throw .corrupt("the header file does not start with the Keepsake store magic bytes")
        }
        guard bytes.count >= size else {
            throw .corrupt("the header file is \(bytes.count) bytes long, shorter than any header (\(size))")
        }
        var reader = ByteReader(bytes)
        _ = reader.take(8)
        let version = reader.integer(UInt16.self)!
        guard version == Format.version || version == Format.rotatingVersion else {
            throw .corrupt(
                "the header is format version \(version); this release reads versions 1 and \(Format.rotatingVersion)")
        }
        if version == Format.version, bytes.count != size {
            throw .corrupt("the header file is \(bytes.count) bytes long, not \(size)")
        }
        guard blake2b256(Array(bytes[0..<(bytes.count - 32)])) == Array(bytes[(bytes.count - 32)...]) else {
            throw .corrupt("the header's checksum does not match its contents (the header was altered or damaged)")
        }
        let kindByte = reader.take(1)![0]
        let reserved = reader.take(1)![0]
        guard let kind = KeyKind(rawValue: kindByte), reserved == 0 else {
            throw .corrupt("the header names an unknown key kind \(kindByte)")
        }
        var header = StoreHeader(
            formatVersion: version,
            keyKind: kind,
            storeID: reader.take(Format.storeIDBytes)!,
            salt: reader.take(Sodium.pwhashSaltBytes)!,
            opsLimit: reader.integer(UInt64.self)!,
            memLimit: reader.integer(UInt64.self)!,
            keyGeneration: reader.integer(UInt32.self)!,
            wrapNonce: [], wrappedDataKey: [], keyCheck: [])
        var wrappedSize = wrappedKeySize
        if version == Format.rotatingVersion {
            header.primaryGeneration = reader.integer(UInt32.self)!
            header.keyCount = reader.integer(UInt16.self)!
            let zero = reader.integer(UInt16.self)!
            guard zero == 0, (1...Format.maxDataKeys).contains(Int(header.keyCount)) else {
                throw .corrupt(
                    "the header names \(header.keyCount) data keys; a header holds 1 to \(Format.maxDataKeys)")
            }
            guard bytes.count == rotatingSize(count: Int(header.keyCount)) else {
                throw .corrupt(
                    """
                    the header file is \(bytes.count) bytes long, not the \(rotatingSize(count: Int(header.keyCount))) \
                    that \(header.keyCount) data keys take
                    """)
            }
            wrappedSize = Format.keyBytes + Int(header.keyCount) * (4 + Format.keyBytes) + 16
        }
        header.wrapNonce = reader.take(Sodium.aeadNonceBytes)!
        header.wrappedDataKey = reader.take(wrappedSize)!
        header.keyCheck = reader.take(32)!
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

    /// The data key of a format-1 header, if `masterKey` is this store's (see ``unwrapKeys(masterKey:)``).
    func unwrapDataKey(masterKey: SecureBytes) throws(FormatFailure) -> SecureBytes {
        try unwrapKeys(masterKey: masterKey).generations[0].dataKey
    }

    /// The data keys, if `masterKey` is this store's: the key check first (a mismatch is a
    /// wrong key), then the authenticated unwrap (a failure is a damaged header).
    func unwrapKeys(masterKey: SecureBytes) throws(FormatFailure) -> KeySet {
        try unwrapKeys(with: MasterSubkeys(masterKey: masterKey))
    }

    /// As ``unwrapKeys(masterKey:)``, with the master key's subkeys.
    func unwrapKeys(with subkeys: MasterSubkeys) throws(FormatFailure) -> KeySet {
        let expected = blake2b256(fields + wrapNonce + wrappedDataKey, key: subkeys.checkKey)
        let matches = expected.withUnsafeBytes { a in keyCheck.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
        guard matches else {
            throw FormatFailure(
                kind: .wrongKey, reason: "the key check in the header does not match this key", sodium: nil)
        }
        let associated = fields
        let plain = try SecureBytes(count: wrappedDataKey.count - 16) { (plain) throws(FormatFailure) in
            let result = AEAD.open(
                wrappedDataKey, into: plain, associatedData: associated, nonce: wrapNonce,
                key: subkeys.wrapKey)
            if case let .failure(failure) = result {
                throw .corrupt("the wrapped data key failed authentication although the key check matched", failure)
            }
        }
        if formatVersion == Format.version { return KeySet(formatOneDataKey: plain) }
        return try KeySet.parse(plain, count: Int(keyCount), primary: primaryGeneration)
    }
}
