import Foundation
internal import SodiumKit

/// One record file, `<name hash hex>.ksr` (`docs/FORMAT.md` §4 and §6.1):
///
///     format 1: magic (8) | version u16 LE = 1 | nonce (24) | ciphertext + tag
///     format 2: magic (8) | version u16 LE = 2 | data key generation u32 LE | nonce (24) | ciphertext + tag
///
/// The plaintext is `record key length u32 LE | record key UTF-8 | value`, so that listing a
/// store recovers record keys without putting them in file names. The associated data is
/// `magic | version | [generation |] store id | name hash`: a file renamed to another record, copied from
/// another store or relabelled with another version fails authentication.
enum RecordFile {
    static let prefixSize = 8 + 2 + 24
    /// The smallest valid file: prefix, a 4-byte length, a 1-byte key, the tag.
    static let minimumSize = prefixSize + 4 + 1 + 16

    /// The bytes before the ciphertext: `prefixSize`, plus 4 for a format-2 file's generation.
    static func prefixSize(generation: UInt32?) -> Int { prefixSize + (generation == nil ? 0 : 4) }

    static func associatedData(storeID: [UInt8], nameHash: [UInt8], generation: UInt32? = nil) -> [UInt8] {
        var writer = ByteWriter()
        writer.append(Format.recordMagic)
        if let generation {
            writer.append(Format.rotatingVersion)
            writer.append(generation)
        } else {
            writer.append(Format.version)
        }
        writer.append(storeID)
        writer.append(nameHash)
        return writer.bytes
    }

    /// The data key generation that sealed a record file, read from its prefix alone (format 1:
    /// generation 1); `nil` when the bytes are no record file of a known format.
    static func generation(of bytes: some Collection<UInt8>) -> UInt32? {
        var reader = ByteReader(Array(bytes.prefix(14)))
        guard reader.take(8) == Format.recordMagic, let version = reader.integer(UInt16.self) else { return nil }
        switch version {
        case Format.version: return 1
        case Format.rotatingVersion: return reader.integer(UInt32.self)
        default: return nil
        }
    }

    /// The file's bytes for `value` under `recordKey`, encrypted with `nonce`.
    ///
    /// The plaintext (`key length | key | value`) is assembled in a ``PlaintextScratch`` buffer,
    /// zeroed before this returns; no guarded allocation is made per record.
    ///
    /// `generation` is `nil` for a format-1 file, else the data key generation of `keys`.
    static func seal(
        value: Data, recordKey: String, storeID: [UInt8], keys: DataSubkeys, generation: UInt32? = nil,
        nonce: some Collection<UInt8>
    ) -> Data {
        precondition(nonce.count == Sodium.aeadNonceBytes)
        let keyBytes = Array(recordKey.utf8)
        let plainCount = 4 + keyBytes.count + value.count
        let associated = associatedData(
            storeID: storeID, nameHash: keys.nameHash(of: recordKey), generation: generation)
        let prefixSize = prefixSize(generation: generation)
        let nonceStart = prefixSize - Sodium.aeadNonceBytes
        var file = Data(count: prefixSize + plainCount + Sodium.aeadTagBytes)
        file.withUnsafeMutableBytes { output in
            output.copyBytes(from: Format.recordMagic)
            var version = (generation == nil ? Format.version : Format.rotatingVersion).littleEndian
            withUnsafeBytes(of: &version) {
                UnsafeMutableRawBufferPointer(rebasing: output[8..<10]).copyMemory(from: $0)
            }
            if var number = generation?.littleEndian {
                withUnsafeBytes(of: &number) {
                    UnsafeMutableRawBufferPointer(rebasing: output[10..<14]).copyMemory(from: $0)
                }
            }
            UnsafeMutableRawBufferPointer(rebasing: output[nonceStart..<prefixSize]).copyBytes(from: nonce)
            PlaintextScratch.with(count: plainCount) { plain in
                var length = UInt32(keyBytes.count).littleEndian
                withUnsafeBytes(of: &length) {
                    UnsafeMutableRawBufferPointer(rebasing: plain[0..<4]).copyMemory(from: $0)
                }
                UnsafeMutableRawBufferPointer(rebasing: plain[4..<(4 + keyBytes.count)]).copyBytes(from: keyBytes)
                UnsafeMutableRawBufferPointer(rebasing: plain[(4 + keyBytes.count)...]).copyBytes(from: value)
                AEAD.seal(
                    UnsafeRawBufferPointer(plain), into: UnsafeMutableRawBufferPointer(rebasing: output[prefixSize...]),
                    associatedData: associated,
                    nonce: UnsafeRawBufferPointer(rebasing: output[nonceStart..<prefixSize]),
                    key: keys.recordKey)
            }
        }
        return file
    }

    /// The record key and value in the file `bytes` named by `nameHash`, or a failure when the
    /// file is not an authentic record of this store under that name (`unknownGeneration` when
    /// it names a data key generation `keys` does not hold).
    static func open(
        _ bytes: [UInt8], nameHash: [UInt8], storeID: [UInt8], keys: KeySet
    ) throws(FormatFailure) -> (recordKey: String, value: Data) {
        guard bytes.count >= 8, Array(bytes[0..<8]) == Format.recordMagic else {
            throw .corrupt("the record file does not start with the Keepsake record magic bytes")
        }
        guard bytes.count >= minimumSize else {
            throw .corrupt("the record file is \(bytes.count) bytes long, shorter than any record (\(minimumSize))")
        }
        var reader = ByteReader(bytes)
        _ = reader.take(8)
        let version = reader.integer(UInt16.self)!
        let generation: UInt32?
        switch version {
        case Format.version:
            generation = nil
        case Format.rotatingVersion:
            guard bytes.count >= minimumSize + 4 else {
                throw .corrupt(
                    "the record file is \(bytes.count) bytes long, shorter than any record (\(minimumSize + 4))")
            }
            generation = reader.integer(UInt32.self)!
        default:
            throw .corrupt(
                """
                the record file is format version \(version); this release reads versions 1 and \
                \(Format.rotatingVersion)
                """)
        }
        guard let sealingKey = keys.recordKey(generation ?? 1) else {
            if let generation, generation > keys.primary.number {
                throw FormatFailure(
                    kind: .newerGeneration,
                    reason: """
                        the record file names data key generation \(generation), newer than any the store's header \
                        holds (the header is an older copy, or the file is damaged or was relabelled)
                        """, sodium: nil)
            }
            throw FormatFailure(
                kind: .unknownGeneration,
                reason: """
                    the record is sealed under data key generation \(generation ?? 1), which the store's header no \
                    longer holds (it was retired by a data key rotation)
                    """, sodium: nil)
        }
        let nonce = reader.take(Sodium.aeadNonceBytes)!
        let sealed = reader.take(reader.remaining)!
        let associated = associatedData(storeID: storeID, nameHash: nameHash, generation: generation)
        return try PlaintextScratch.with(count: sealed.count - Sodium.aeadTagBytes) {
            (plain) throws(FormatFailure) -> (String, Data) in
            let result = AEAD.open(sealed, into: plain, associatedData: associated, nonce: nonce, key: sealingKey)
            if case let .failure(failure) = result {
                throw .corrupt(
                    """
                    the record file failed authentication: it was altered, truncated, renamed from \
                    another record or copied from another store
                    """, failure)
            }
            var length: UInt32 = 0
            withUnsafeMutableBytes(of: &length) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: plain[0..<4])) }
            let keyLength = Int(UInt32(littleEndian: length))
            guard keyLength >= 1, keyLength <= plain.count - 4 else {
                throw .corrupt("the record's key length is out of range")
            }
            let keyBytes = UnsafeRawBufferPointer(rebasing: plain[4..<(4 + keyLength)])
            guard let recordKey = String(validating: keyBytes, as: UTF8.self) else {
                throw .corrupt("the record's key is not valid UTF-8")
            }
            guard keys.writing.nameHash(of: recordKey) == nameHash else {
                throw .corrupt("the record's key does not hash to its file name")
            }
            return (recordKey, Data(UnsafeRawBufferPointer(rebasing: plain[(4 + keyLength)...])))
        }
    }
}
