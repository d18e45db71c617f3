import Foundation
import Keepsake
import Testing

@testable import KeepsakeSodium

/// The test vectors of `docs/FORMAT.md` §8, committed in `Vectors/*.json`.
///
/// Each vector fixes every random input (master key or passphrase and salt, store id, data key,
/// wrap nonce, record nonces) and records every derived value and the exact bytes of every
/// file. The store is driven through its public operations with those inputs supplied by the
/// deterministic random hook, and must produce the files byte for byte; the files must open.
///
/// To regenerate after a deliberate format change (with a new format version):
/// `KEEPSAKE_WRITE_VECTORS=1 swift test --filter FormatVectorTests`, then review the diff.
@Suite("Format test vectors")
struct FormatVectorTests {
    struct Vector: Codable, Equatable {
        var description: String
        var formatVersion: Int
        var keyKind: String
        var masterKey: String
        var passphrase: String?
        var salt: String?
        var opsLimit: UInt64?
        var memLimit: UInt64?
        var storeId: String
        var dataKey: String
        var wrapNonce: String
        var keyGeneration: Int
        var derived: Derived
        var headerFile: String
        var records: [Record]
    }

    struct Derived: Codable, Equatable {
        var wrapKey: String
        var checkKey: String
        var recordKey: String
        var nameKey: String
    }

    struct Record: Codable, Equatable {
        var recordKey: String
        var plaintext: String
        var nonce: String
        var nameHash: String
        var fileName: String
        var associatedData: String
        var file: String
    }

    static let vectorsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Vectors")

    static let names = ["key-file-store", "passphrase-store"]

    /// The fixed inputs the committed vectors were made from.
    static func seed(_ name: String) -> Vector {
        let records = [
            ("person", #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#),
            ("trialInfo", #"{"version":0,"startDate":700000000}"#),
            ("ünïcode ✓", #""x""#)
        ]
        let passphrase = name == "passphrase-store"
        return Vector(
            description: passphrase
                ? "A store protected by the passphrase below (Argon2id, 1 pass, 64 KiB — test limits only), one record."
                : "A store protected by a key file holding masterKey, three records.",
            formatVersion: 1, keyKind: passphrase ? "passphrase" : "raw",
            masterKey: passphrase ? "" : Hex.encode(counting(from: 0x00, count: 32)),
            passphrase: passphrase ? "correct horse battery staple" : nil,
            salt: passphrase ? Hex.encode(counting(from: 0xa0, count: 16)) : nil,
            opsLimit: passphrase ? 1 : nil, memLimit: passphrase ? 65536 : nil,
            storeId: Hex.encode(counting(from: 0x40, count: 16)),
            dataKey: Hex.encode(counting(from: 0x80, count: 32)),
            wrapNonce: Hex.encode(counting(from: 0xc0, count: 24)),
            keyGeneration: 1,
            derived: Derived(wrapKey: "", checkKey: "", recordKey: "", nameKey: ""),
            headerFile: "",
            records: records.prefix(passphrase ? 1 : 3).enumerated().map { index, record in
                Record(
                    recordKey: record.0, plaintext: record.1,
                    nonce: Hex.encode(counting(from: UInt8(0x10 * (index + 1)), count: 24)),
                    nameHash: "", fileName: "", associatedData: "", file: "")
            })
    }

    /// Runs the store on the vector's inputs and fills in every output.
    static func compute(_ input: Vector) throws -> Vector {
        try withTemporaryDirectory { directory in
            var output = input
            let passphrase = input.keyKind == "passphrase"
            var scripted: [[UInt8]] = []
            if passphrase { scripted.append(try hex(input.salt)) }
            scripted += [
                try hex(input.storeId), try hex(input.dataKey),
                try hex(input.wrapNonce)
            ]
            scripted += try input.records.map { try hex($0.nonce) }
            let random = ScriptedRandom(scripted)
            let key: MasterKeySource
            let limits: PassphraseLimits
            if passphrase {
                key = .passphrase(SecureBytes(copying: Array(try #require(input.passphrase).utf8)), origin: "vector")
                limits = try PassphraseLimits(
                    opsLimit: try #require(input.opsLimit), memLimit: try #require(input.memLimit))
            } else {
                try writeKeyFile(try hex(input.masterKey), to: directory + "/master.key")
                key = .keyFile(path: directory + "/master.key")
                limits = fastLimits
            }
            let store = try SodiumFileStore.create(
                directory: directory + "/store", key: key, passphraseLimits: limits,
                lockTimeout: .seconds(5), fileSystem: .live, random: random.source)
            for record in input.records {
                try store.setData(Data(record.plaintext.utf8), forKey: record.recordKey)
            }
            #expect(random.isEmpty)

            let headerBytes = try readBytes(directory + "/store/keepsake.header")
            output.headerFile = Hex.encode(headerBytes)
            let header = try StoreHeader.parse(headerBytes)
            let masterKey: SecureBytes
            switch key {
            case .keyFile: masterKey = SecureBytes(copying: try hex(input.masterKey))
            default: masterKey = try key.existingKey(for: header)
            }
            output.masterKey = masterKey.withUnsafeBytes { Hex.encode($0) }
            let master = MasterSubkeys(masterKey: masterKey)
            output.derived = Derived(
                wrapKey: master.wrapKey.withUnsafeBytes { Hex.encode($0) },
                checkKey: master.checkKey.withUnsafeBytes { Hex.encode($0) },
                recordKey: store.subkeys.recordKey.withUnsafeBytes { Hex.encode($0) },
                nameKey: store.subkeys.nameKey.withUnsafeBytes { Hex.encode($0) })
            output.records = try input.records.map { record in
                var record = record
                let nameHash = store.subkeys.nameHash(of: record.recordKey)
                record.nameHash = Hex.encode(nameHash)
                record.fileName = store.subkeys.fileName(of: record.recordKey)
                record.associatedData = Hex.encode(
                    RecordFile.associatedData(storeID: store.storeID, nameHash: nameHash))
                record.file = Hex.encode(try readBytes(directory + "/store/" + record.fileName))
                return record
            }
            return output
        }
    }

    static func load(_ name: String) throws -> Vector {
        let data = try Data(contentsOf: vectorsDirectory.appendingPathComponent(name + ".json"))
        return try JSONDecoder().decode(Vector.self, from: data)
    }

    @Test("The store writes exactly the committed vector bytes", arguments: names)
    func storeWritesVectorBytes(_ name: String) throws {
        if ProcessInfo.processInfo.environment["KEEPSAKE_WRITE_VECTORS"] == "1" {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(try Self.compute(Self.seed(name)))
            try (data + Data("\n".utf8)).write(to: Self.vectorsDirectory.appendingPathComponent(name + ".json"))
        }
        let vector = try Self.load(name)
        let computed = try Self.compute(vector)
        #expect(computed.headerFile == vector.headerFile)
        #expect(computed.derived == vector.derived)
        #expect(computed.masterKey == vector.masterKey)
        #expect(computed.records == vector.records)
        #expect(computed == vector)
        #expect(vector.headerFile.count == 2 * 200)
    }

    @Test("The committed vector files open and decrypt to their plaintexts", arguments: names)
    func vectorFilesDecrypt(_ name: String) throws {
        let vector = try Self.load(name)
        try withTemporaryDirectory { directory in
            let storePath = directory + "/store"
            try FileManager.default.createDirectory(atPath: storePath, withIntermediateDirectories: false)
            try writeBytes(try hex(vector.headerFile), to: storePath + "/keepsake.header")
            for record in vector.records {
                try writeBytes(try hex(record.file), to: storePath + "/" + record.fileName)
            }
            let key: MasterKeySource
            if let passphrase = vector.passphrase {
                key = .passphrase(SecureBytes(copying: Array(passphrase.utf8)), origin: "vector")
            } else {
                try writeKeyFile(try hex(vector.masterKey), to: directory + "/master.key")
                key = .keyFile(path: directory + "/master.key")
            }
            let store = try SodiumFileStore(directory: storePath, key: key)
            #expect(store.identifier == vector.storeId)
            #expect(try store.keys() == vector.records.map(\.recordKey).sorted())
            for record in vector.records {
                #expect(try store.data(forKey: record.recordKey) == Data(record.plaintext.utf8))
            }
        }
    }

    @Test("The record layout in the vectors is as FORMAT.md describes it")
    func recordLayout() throws {
        let vector = try Self.load("key-file-store")
        let record = try #require(vector.records.first)
        let file = try hex(record.file)
        #expect(Array(file[0..<8]) == Array("KSRECRD".utf8) + [1])
        #expect(Array(file[8..<10]) == [1, 0])
        #expect(Hex.encode(file[10..<34]) == record.nonce)
        #expect(file.count == 34 + 4 + record.recordKey.utf8.count + record.plaintext.utf8.count + 16)
        #expect(record.fileName == record.nameHash + ".ksr")
        #expect(
            record.associatedData == Hex.encode(Array("KSRECRD".utf8) + [1, 1, 0]) + vector.storeId + record.nameHash)
        let header = try hex(vector.headerFile)
        #expect(Array(header[0..<8]) == Array("KSSTORE".utf8) + [1])
        #expect(Hex.encode(header[12..<28]) == vector.storeId)
        #expect(Hex.encode(header[64..<88]) == vector.wrapNonce)
    }
}

/// The bytes of a hex string from a vector; a missing or malformed one fails the test.
func hex(_ text: String?) throws -> [UInt8] {
    guard let text, let bytes = Hex.decode(text) else { throw TestFailure("not hex: \(String(describing: text))") }
    return bytes
}
