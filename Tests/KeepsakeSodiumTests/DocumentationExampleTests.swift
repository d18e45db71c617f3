// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeSodium
import Migrations
import Testing

/// The KeepsakeSodium catalog's example, verbatim (the Keepsake tests check that it still is), run.
@Suite("KeepsakeSodium documentation example")
struct SodiumDocumentationExampleTests {
    func example(directory: String, keyPath: String) throws {
        let store = try SodiumFileStore.create(directory: directory, key: .keyFile(path: keyPath))
        let vault = Vault(store: store)
        try vault.save(PersonV3(alias: "Ada", email: "ada@example.com"), in: Person.chain)
    }

    func rotation(directory: String, keyPath: String) throws -> ResealReport {
        let store = try SodiumFileStore(directory: directory, key: .keyFile(path: keyPath))
        try store.beginDataKeyRotation()
        let report = try store.reseal(batchSize: 512, progress: nil)
        // report.retired == ["generation 1"]: the header holds the new data key only
        return report
    }

    @Test("the rotation example re-seals the record under a new data key and retires the old one")
    func rotationRuns() throws {
        try withTemporaryDirectory { directory in
            try example(directory: directory + "/records", keyPath: directory + "/records.key")
            let report = try rotation(directory: directory + "/records", keyPath: directory + "/records.key")
            #expect(report.resealed == 1)
            #expect(report.retired == ["generation 1"])
            #expect(report.census.entries.map(\.keyID) == ["generation 2"])
            let reopened = try SodiumFileStore(directory: directory + "/records", key: .keyFile(path: directory + "/records.key"))
            #expect(try Vault(store: reopened).load(Person.chain)?.value == PersonV3(alias: "Ada", email: "ada@example.com"))
        }
    }

    @Test("the example creates a store and a key file, and the record reads back only with that key")
    func runs() throws {
        try withTemporaryDirectory { directory in
            try example(directory: directory + "/records", keyPath: directory + "/records.key")
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/records.key")).count == 32)
            let reopened = try SodiumFileStore(directory: directory + "/records", key: .keyFile(path: directory + "/records.key"))
            #expect(try Vault(store: reopened).load(Person.chain)?.value == PersonV3(alias: "Ada", email: "ada@example.com"))
            for file in try FileManager.default.contentsOfDirectory(atPath: directory + "/records") {
                let contents = try Data(contentsOf: URL(fileURLWithPath: directory + "/records/" + file))
                #expect(contents.range(of: Data("ada@example.com".utf8)) == nil, "\(file) holds the plaintext")
            }
        }
    }
}
