import Foundation
import Keepsake
import KeepsakeSodium
import Testing

@testable import KeepsakePostgres

/// The test vectors of docs/FORMAT.md, "Sealed PostgreSQL values", in
/// `Vectors/sealed-values.json` (made by `Vectors/check_sealed.py`, an implementation written
/// from that section alone, without libsodium). No server is needed.
@Suite("Sealed PostgreSQL values match the format's test vectors")
struct SealedValueVectorTests {
    struct Vector: Decodable {
        struct Record: Decodable {
            let table: String
            let recordKey: String
            let plaintext: String
            let nonce: String
            let associatedData: String
            let sealed: String
            let associatedDataV2: String
            let sealedV2: String
        }
        let formatVersion: Int
        let masterKey: String
        let identity: String
        let storeId: String
        let keyFingerprint: String
        let records: [Record]
    }

    static func load() throws -> Vector {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Vectors/sealed-values.json")
        return try JSONDecoder().decode(Vector.self, from: Data(contentsOf: url))
    }

    static func bytes(_ hex: String) throws -> [UInt8] {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { throw TestFailure("odd hex length") }
        return try stride(from: 0, to: digits.count, by: 2).map { index in
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw TestFailure("not hex: \(hex)")
            }
            return byte
        }
    }

    static func sealer(_ vector: Vector, table: String) throws -> Sealer {
        try Sealer(masterKey: SecureBytes(copying: Data(bytes(vector.masterKey))), table: table, store: "vector")
    }

    @Test("every record seals to the vector's bytes with its nonce, in format 1 and 2, and opens back")
    func sealsAndOpens() throws {
        let vector = try Self.load()
        #expect(vector.formatVersion == 1)
        #expect(Sealer.writtenFormat == 2)
        #expect(vector.records.count == 3)
        for record in vector.records {
            let sealer = try Self.sealer(vector, table: record.table)
            let keyID = try Self.bytes(vector.keyFingerprint)
            #expect(
                sealer.associatedData(forKey: record.recordKey, prefix: Sealer.prefix(format: 1, keyID: keyID))
                    == (try Self.bytes(record.associatedData)))
            #expect(
                sealer.associatedData(forKey: record.recordKey, prefix: Sealer.prefix(format: 2, keyID: keyID))
                    == (try Self.bytes(record.associatedDataV2)))
            let nonce = try Self.bytes(record.nonce)
            for (format, expected) in [(UInt8(1), record.sealed), (2, record.sealedV2)] {
                let sealed = try #require(
                    sealer.seal(Data(record.plaintext.utf8), forKey: record.recordKey, nonce: nonce, format: format))
                #expect([UInt8](sealed) == (try Self.bytes(expected)), "\(record.table) \(record.recordKey) \(format)")
                let opened = try sealer.open(Data(try Self.bytes(expected)), forKey: record.recordKey, store: "vector")
                #expect(opened == Data(record.plaintext.utf8))
            }
            // What a write stores: format 2 under this key, with a fresh nonce.
            let written = sealer.stored(Data(record.plaintext.utf8), forKey: record.recordKey)
            #expect(Sealer.keyID(of: written) == vector.keyFingerprint)
            #expect(try sealer.open(written, forKey: record.recordKey, store: "vector") == Data(record.plaintext.utf8))
        }
    }

    @Test("a key set opens each value with the key it names; a value of a key not in the set names that key")
    func keySets() throws {
        let vector = try Self.load()
        let record = vector.records[0]
        let master = SecureBytes(copying: Data(try Self.bytes(vector.masterKey)))
        let other = SecureBytes(copying: Data(repeating: 7, count: 32))
        let old = try Sealer(primary: master, previous: [], readsPlain: false, table: record.table, store: "v")
        let rotated = try Sealer(primary: other, previous: [master], readsPlain: false, table: record.table, store: "v")
        let plaintext = Data(record.plaintext.utf8)
        for value in [Data(try Self.bytes(record.sealed)), Data(try Self.bytes(record.sealedV2))] {
            #expect(try rotated.open(value, forKey: record.recordKey, store: "v") == plaintext)
        }
        let underNew = rotated.stored(plaintext, forKey: record.recordKey)
        #expect(Sealer.keyID(of: underNew) == rotated.keyFingerprint)
        #expect(rotated.keyFingerprint != vector.keyFingerprint)
        do {
            _ = try old.open(underNew, forKey: record.recordKey, store: "v")
            Issue.record("a value of a key not in the set opened")
        } catch {
            #expect(error.code == .wrongKey)
            #expect(error.message.contains(rotated.keyFingerprint ?? "?"), "\(error.message)")
        }
        // Plain values: corrupt for a sealed store, read as they are while a table is sealed.
        let plain = Data(#"{"a":1}"#.utf8)
        #expect(throws: KeepsakeError.self) { try old.open(plain, forKey: "k", store: "v") }
        let sealing = try Sealer(primary: master, previous: [], readsPlain: true, table: record.table, store: "v")
        #expect(try sealing.open(plain, forKey: "k", store: "v") == plain)
        // A plain writer with previous keys (a table being unsealed) opens sealed values, writes plain.
        let unsealing = try Sealer(primary: nil, previous: [master], readsPlain: false, table: record.table, store: "v")
        #expect(
            try unsealing.open(Data(try Self.bytes(record.sealedV2)), forKey: record.recordKey, store: "v") == plaintext
        )
        #expect(unsealing.stored(plaintext, forKey: record.recordKey) == plaintext)
        #expect(unsealing.writerID == "plain")
    }

    @Test("the store id a key provider is asked for matches the vector")
    func storeID() throws {
        let vector = try Self.load()
        #expect(Sealer.storeID(forIdentity: vector.identity) == vector.storeId)
    }

    @Test("the master key's fingerprint a table's seal records matches the vector, whatever the table")
    func keyFingerprint() throws {
        let vector = try Self.load()
        for record in vector.records {
            #expect(try Self.sealer(vector, table: record.table).keyFingerprint == vector.keyFingerprint)
        }
        var other = try Self.bytes(vector.masterKey)
        other[0] ^= 1
        let otherSealer = try Sealer(masterKey: SecureBytes(copying: Data(other)), table: "t", store: "vector")
        #expect(otherSealer.keyFingerprint != vector.keyFingerprint)
        #expect(otherSealer.keyFingerprint?.count == 32)
    }

    @Test("a value moved to another key or table, altered, or of another version does not open")
    func refusals() throws {
        let vector = try Self.load()
        let record = vector.records[0]
        let sealed = try Self.bytes(record.sealed)
        let sealer = try Self.sealer(vector, table: record.table)
        let elsewhere = try Self.sealer(vector, table: "other_table")
        #expect(throws: KeepsakeError.self) { try sealer.open(Data(sealed), forKey: "tenant-43", store: "vector") }
        do {
            _ = try elsewhere.open(Data(sealed), forKey: record.recordKey, store: "vector")
            Issue.record("a value moved to another table opened")
        } catch {
            #expect(error.code == .wrongKey)
        }
        var altered = sealed
        altered[altered.count - 1] ^= 1
        do {
            _ = try sealer.open(Data(altered), forKey: record.recordKey, store: "vector")
            Issue.record("an altered value opened")
        } catch {
            #expect(error.code == .wrongKey)
        }
        var newer = sealed
        newer[4] = 3
        do {
            _ = try sealer.open(Data(newer), forKey: record.recordKey, store: "vector")
            Issue.record("a value of version 3 opened")
        } catch {
            #expect(error.code == .corruptRecord)
        }
        var relabelled = try Self.bytes(record.sealedV2)
        relabelled[4] = 1  // a format-2 value read as format 1: its associated data differs
        do {
            _ = try sealer.open(Data(relabelled), forKey: record.recordKey, store: "vector")
            Issue.record("a format-2 value relabelled format 1 opened")
        } catch {
            #expect(error.code == .wrongKey)
        }
        do {
            _ = try sealer.open(Data(sealed.prefix(44)), forKey: record.recordKey, store: "vector")
            Issue.record("a value shorter than an empty sealed value opened")
        } catch {
            #expect(error.code == .corruptRecord)
        }
    }
}
