import Foundation
import Keepsake
import Testing

@testable import KeepsakeSodium

@Suite("A key file naming several keys (a key set) while the master key is replaced")
struct KeySetFileTests {
    private let old = counting(from: 1, count: 32)
    private let new = counting(from: 101, count: 32)
    private let stranger = counting(from: 201, count: 32)

    /// A store in `directory/store` under the key file `old.key`, holding record `a`.
    private func oldStore(in directory: String) throws -> SodiumFileStore {
        try writeKeyFile(old, to: directory + "/old.key")
        try writeKeyFile(new, to: directory + "/new.key")
        try writeKeyFile(new + old, to: directory + "/set.keys")
        let store = try SodiumFileStore.create(
            directory: directory + "/store", key: .keyFile(path: directory + "/old.key"), passphraseLimits: fastLimits)
        try store.setData(Data("a".utf8), forKey: "a")
        return store
    }

    private func open(_ directory: String, _ keyFile: String) throws -> SodiumFileStore {
        try SodiumFileStore(directory: directory + "/store", key: .keyFile(path: directory + "/" + keyFile))
    }

    @Test("KeyFile reads every key of the set in order; masterKey(createIfAbsent:) is the first")
    func readsTheSet() throws {
        try withTemporaryDirectory { directory in
            try writeKeyFile(new + old + stranger, to: directory + "/three.keys")
            let file = KeyFile(path: directory + "/three.keys")
            #expect(try file.masterKeys().map { $0.withUnsafeBytes { Array($0) } } == [new, old, stranger])
            #expect(try file.masterKey(createIfAbsent: false).withUnsafeBytes { Array($0) } == new)
            try writeKeyFile(counting(from: 0, count: 32 * KeyFile.maximumKeys), to: directory + "/full.keys")
            #expect(try KeyFile(path: directory + "/full.keys").masterKeys().count == 16)
        }
    }

    @Test("A store opens with the key set whose second key wraps its header; a set with neither key is wrongKey")
    func opensWithAnyKey() throws {
        try withTemporaryDirectory { directory in
            let store = try oldStore(in: directory)
            #expect(try open(directory, "set.keys").data(forKey: "a") == Data("a".utf8))
            try writeKeyFile(stranger + new, to: directory + "/strangers.keys")
            let error = try #require(throws: KeepsakeError.self) { _ = try open(directory, "strangers.keys") }
            #expect(error.code == .wrongKey)
            #expect(error.store == store.uri)
            #expect(
                error.message.contains("none of the 2 keys of the key file \(directory)/strangers.keys"), "\(error)")
        }
    }

    @Test(
        "An app holding the key set goes on when another process changes the master key to the new key and rotates the data key; one holding only the old key cannot"
    )
    func survivesAMasterKeyChange() throws {
        try withTemporaryDirectory { directory in
            _ = try oldStore(in: directory)
            let app = try open(directory, "set.keys")
            let oldOnly = try open(directory, "old.key")
            // The operator: the master key becomes the new key, then the data key rotates (a new
            // primary generation the app must unwrap with the new master key).
            let operatorStore = try open(directory, "old.key")
            try operatorStore.changeMasterKey(to: .keyFile(path: directory + "/new.key"))
            #expect(try operatorStore.beginDataKeyRotation() == 2)

            try app.setData(Data("b".utf8), forKey: "b")
            #expect(try app.data(forKey: "a") == Data("a".utf8))
            #expect(app.writtenKeyID == "generation 2")
            let refused = try #require(throws: KeepsakeError.self) {
                try oldOnly.setData(Data("c".utf8), forKey: "c")
            }
            #expect(refused.code == .wrongKey)
            #expect(try oldOnly.data(forKey: "c") == nil)

            // The app rotates next (its writes use the new master key it found), and a store opened
            // with the new key alone reads everything.
            #expect(try app.beginDataKeyRotation() == 2)  // resumed, not begun again
            let fresh = try open(directory, "new.key")
            #expect(try fresh.data(forKey: "b") == Data("b".utf8))
            #expect(try fresh.data(forKey: "a") == Data("a".utf8))
            #expect(throws: KeepsakeError.self) { _ = try open(directory, "old.key") }
        }
    }
}
