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

    @Test("every record seals to the vector's bytes with its nonce, and opens back")
    func sealsAndOpens() throws {
        let vector = try Self.load()
        #expect(vector.formatVersion == Int(Sealer.header[4]))
        #expect(vector.records.count == 3)
        for record in vector.records {
            let sealer = try Self.sealer(vector, table: record.table)
            #expect(sealer.associatedData(forKey: record.recordKey) == (try Self.bytes(record.associatedData)))
            let sealed = sealer.seal(
                Data(record.plaintext.utf8), forKey: record.recordKey, nonce: try Self.bytes(record.nonce))
            #expect([UInt8](sealed) == (try Self.bytes(record.sealed)), "\(record.table) \(record.recordKey)")
            let opened = try sealer.open(Data(try Self.bytes(record.sealed)), forKey: record.recordKey, store: "vector")
            #expect(opened == Data(record.plaintext.utf8))
        }
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
        #expect(otherSealer.keyFingerprint.count == 32)
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
        newer[4] = 2
        do {
            _ = try sealer.open(Data(newer), forKey: record.recordKey, store: "vector")
            Issue.record("a value of version 2 opened")
        } catch {
            #expect(error.code == .corruptRecord)
        }
        do {
            _ = try sealer.open(Data(sealed.prefix(44)), forKey: record.recordKey, store: "vector")
            Issue.record("a value shorter than an empty sealed value opened")
        } catch {
            #expect(error.code == .corruptRecord)
        }
    }
}
