import Foundation
import Keepsake
import Testing

@testable import KeepsakeSodium

/// The format-2 test vector of `docs/FORMAT.md` §6.1, committed in `Vectors/rotated-store.json`:
/// a key-file store made with fixed inputs, one record written in format 1, a data key rotation
/// begun (the header then holds generations 1 and 2), one record written under generation 2.
/// `Vectors/check_vectors.py` builds the same bytes from the document alone.
///
/// To regenerate after a deliberate format change:
/// `KEEPSAKE_WRITE_VECTORS=1 swift test --filter RotatedVectorTests`, then review the diff.
@Suite("Format 2 test vector")
struct RotatedVectorTests {
    struct Vector: Codable, Equatable {
        var description: String
        var formatVersion: Int
        var masterKey: String
        var storeId: String
        var keyGeneration: Int
        var createWrapNonce: String
        var rotationWrapNonce: String
        var dataKeys: [DataKey]
        var nameKey: String
        var headerFile: String
        var records: [Record]
    }

    struct DataKey: Codable, Equatable {
        var generation: Int
        var dataKey: String
        var recordKey: String
    }

    struct Record: Codable, Equatable {
        var recordKey: String
        var plaintext: String
        var formatVersion: Int
        var generation: Int
        var nonce: String
        var nameHash: String
        var fileName: String
        var associatedData: String
        var file: String
    }

    static let path = FormatVectorTests.vectorsDirectory.appendingPathComponent("rotated-store.json")

    static func seed() -> Vector {
        Vector(
            description: """
                A store protected by a key file holding masterKey: 'before' written in format 1, a data key \
                rotation begun (generations 1 and 2), 'after' written under generation 2.
                """,
            formatVersion: 2, masterKey: Hex.encode(counting(from: 0x00, count: 32)),
            storeId: Hex.encode(counting(from: 0x40, count: 16)), keyGeneration: 1,
            createWrapNonce: Hex.encode(counting(from: 0xc0, count: 24)),
            rotationWrapNonce: Hex.encode(counting(from: 0xd0, count: 24)),
            dataKeys: [
                DataKey(generation: 1, dataKey: Hex.encode(counting(from: 0x80, count: 32)), recordKey: ""),
                DataKey(generation: 2, dataKey: Hex.encode(counting(from: 0xa0, count: 32)), recordKey: "")
            ],
            nameKey: "", headerFile: "",
            records: [
                Record(
                    recordKey: "before", plaintext: #"{"version":0,"startDate":700000000}"#, formatVersion: 1,
                    generation: 1, nonce: Hex.encode(counting(from: 0x10, count: 24)), nameHash: "", fileName: "",
                    associatedData: "", file: ""),
                Record(
                    recordKey: "after", plaintext: #"{"version":2,"startDate":700000000}"#, formatVersion: 2,
                    generation: 2, nonce: Hex.encode(counting(from: 0x20, count: 24)), nameHash: "", fileName: "",
                    associatedData: "", file: "")
            ])
    }

    /// Runs the store on the vector's inputs and fills in every output.
    static func compute(_ input: Vector) throws -> Vector {
        try withTemporaryDirectory { directory in
            var output = input
            let random = ScriptedRandom([
                try hex(input.storeId), try hex(input.dataKeys[0].dataKey), try hex(input.createWrapNonce),
                try hex(input.records[0].nonce),
                try hex(input.dataKeys[1].dataKey), try hex(input.rotationWrapNonce),
                try hex(input.records[1].nonce)
            ])
            try writeKeyFile(try hex(input.masterKey), to: directory + "/master.key")
            let store = try SodiumFileStore.create(
                directory: directory + "/store", key: .keyFile(path: directory + "/master.key"),
                passphraseLimits: fastLimits, lockTimeout: .seconds(5), fileSystem: .live, random: random.source)
            try store.setData(Data(input.records[0].plaintext.utf8), forKey: input.records[0].recordKey)
            #expect(try store.beginDataKeyRotation() == 2)
            try store.setData(Data(input.records[1].plaintext.utf8), forKey: input.records[1].recordKey)
            #expect(random.isEmpty)

            output.headerFile = Hex.encode(try readBytes(directory + "/store/keepsake.header"))
            let keys = store.keySet
            output.nameKey = keys.nameKey.withUnsafeBytes { Hex.encode($0) }
            output.dataKeys = keys.generations.map { generation in
                DataKey(
                    generation: Int(generation.number), dataKey: generation.dataKey.withUnsafeBytes { Hex.encode($0) },
                    recordKey: generation.recordKey.withUnsafeBytes { Hex.encode($0) })
            }
            output.records = try input.records.map { record in
                var record = record
                let nameHash = keys.writing.nameHash(of: record.recordKey)
                record.nameHash = Hex.encode(nameHash)
                record.fileName = keys.writing.fileName(of: record.recordKey)
                record.associatedData = Hex.encode(
                    RecordFile.associatedData(
                        storeID: store.storeID, nameHash: nameHash,
                        generation: record.formatVersion == 1 ? nil : UInt32(record.generation)))
                record.file = Hex.encode(try readBytes(directory + "/store/" + record.fileName))
                return record
            }
            return output
        }
    }

    @Test("The store writes exactly the committed format-2 vector bytes")
    func storeWritesVectorBytes() throws {
        if ProcessInfo.processInfo.environment["KEEPSAKE_WRITE_VECTORS"] == "1" {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try (try encoder.encode(try Self.compute(Self.seed())) + Data("\n".utf8)).write(to: Self.path)
        }
        let vector = try JSONDecoder().decode(Vector.self, from: try Data(contentsOf: Self.path))
        let computed = try Self.compute(vector)
        #expect(computed.headerFile == vector.headerFile)
        #expect(computed.records == vector.records)
        #expect(computed == vector)
        #expect(vector.headerFile.count == 2 * (208 + 2 * 36))
        // The layout §6.1 gives.
        let header = try hex(vector.headerFile)
        #expect(Array(header[8..<10]) == [2, 0])
        #expect(Array(header[64..<72]) == [2, 0, 0, 0, 2, 0, 0, 0])
        #expect(Hex.encode(header[72..<96]) == vector.rotationWrapNonce)
        let after = try hex(vector.records[1].file)
        #expect(Array(after[8..<14]) == [2, 0, 2, 0, 0, 0])
        #expect(Hex.encode(after[14..<38]) == vector.records[1].nonce)
        #expect(Array(try hex(vector.records[0].file)[8..<10]) == [1, 0])
    }

    @Test("The committed format-2 files open: both records read, and the rotation completes")
    func vectorFilesOpen() throws {
        let vector = try JSONDecoder().decode(Vector.self, from: try Data(contentsOf: Self.path))
        try withTemporaryDirectory { directory in
            let storePath = directory + "/store"
            try FileManager.default.createDirectory(atPath: storePath, withIntermediateDirectories: false)
            try writeBytes(try hex(vector.headerFile), to: storePath + "/keepsake.header")
            for record in vector.records {
                try writeBytes(try hex(record.file), to: storePath + "/" + record.fileName)
            }
            try writeKeyFile(try hex(vector.masterKey), to: directory + "/master.key")
            let store = try SodiumFileStore(directory: storePath, key: .keyFile(path: directory + "/master.key"))
            for record in vector.records {
                #expect(try store.data(forKey: record.recordKey) == Data(record.plaintext.utf8))
            }
            let report = try store.reseal(batchSize: 10, progress: nil)
            #expect(report.resealed == 1 && report.retired == ["generation 1"])
            for record in vector.records {
                #expect(try store.data(forKey: record.recordKey) == Data(record.plaintext.utf8))
            }
        }
    }
}
