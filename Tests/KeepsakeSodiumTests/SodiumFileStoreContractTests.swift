import Foundation
import Keepsake
import KeepsakeTesting
import Testing

@testable import KeepsakeSodium

@Suite("SodiumFileStore keeps the store contract")
struct SodiumFileStoreContractTests {
    @Test("A key-file store passes every contract check", arguments: StoreContract.checks)
    func contract(_ check: StoreContract.Check) throws {
        try withTemporaryDirectory { directory in
            try check.run(on: makeKeyFileStore(in: directory))
        }
    }

    @Test("A passphrase store passes every contract check", arguments: StoreContract.checks)
    func passphraseContract(_ check: StoreContract.Check) throws {
        try withTemporaryDirectory { directory in
            let store = try SodiumFileStore.create(
                directory: directory + "/store", key: passphrase("correct horse"),
                passphraseLimits: fastLimits)
            try check.run(on: store)
        }
    }

    @Test("The store reports its URI and that it encrypts at rest")
    func identity() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            #expect(store.uri == "file:" + directory + "/store")
            #expect(store.capabilities == [.encryptedAtRest])
            #expect(store.identifier.count == 32)
        }
    }

    @Test("Records written by one instance are read by another opened later")
    func persistence() throws {
        try withTemporaryDirectory { directory in
            let first = try makeKeyFileStore(in: directory)
            try first.setData(Data(#"{"v":1}"#.utf8), forKey: "a")
            try first.setData(Data("b".utf8), forKey: "b")
            let second = try reopen(directory)
            #expect(second.identifier == first.identifier)
            #expect(try second.keys() == ["a", "b"])
            #expect(try second.data(forKey: "a") == Data(#"{"v":1}"#.utf8))
        }
    }

    @Test("File names are keyed hashes: no record key, value or temporary file is visible")
    func fileNamesDoNotLeak() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("secret-value".utf8), forKey: "person")
            let names = try listing(directory + "/store")
            #expect(names.count == 3)
            #expect(names.contains("keepsake.header") && names.contains("keepsake.lock"))
            let record = try #require(names.first { $0.hasSuffix(".ksr") })
            #expect(record.count == 64 + 4)
            #expect(!record.contains("person"))
            let bytes = try readBytes(directory + "/store/" + record)
            #expect(!Data(bytes).contains(Data("person".utf8)))
            #expect(!Data(bytes).contains(Data("secret-value".utf8)))
        }
    }

    @Test("Each write uses a fresh nonce: the same value twice gives different files")
    func freshNonces() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("same".utf8), forKey: "k")
            let name = try #require(try recordFiles(directory + "/store").first)
            let first = try readBytes(directory + "/store/" + name)
            try store.setData(Data("same".utf8), forKey: "k")
            let second = try readBytes(directory + "/store/" + name)
            #expect(first.count == second.count)
            #expect(first[10..<34] != second[10..<34])
            #expect(first != second)
        }
    }

    @Test("Concurrent writers from two instances each keep every record, and readers see whole values")
    func concurrentWriters() async throws {
        try await withTemporaryDirectoryAsync { directory in
            _ = try makeKeyFileStore(in: directory)
            let a = try reopen(directory)
            let b = try reopen(directory)
            let values = (0..<2).map { Data(String(repeating: "v\($0)", count: 3000).utf8) }
            try a.setData(values[0], forKey: "shared")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, store) in [a, b].enumerated() {
                    group.addTask {
                        for n in 0..<25 {
                            try store.setData(Data("\(index)-\(n)".utf8), forKey: "key-\(index)-\(n)")
                            try store.setData(values[n % 2], forKey: "shared")
                        }
                    }
                }
                group.addTask {
                    for _ in 0..<200 {
                        let seen = try a.data(forKey: "shared")
                        #expect(seen == values[0] || seen == values[1])
                    }
                }
                try await group.waitForAll()
            }
            let keys = try reopen(directory).keys()
            #expect(keys.count == 51)
            #expect(try b.data(forKey: "key-0-24") == Data("0-24".utf8))
            #expect(try listing(directory + "/store").allSatisfy { !$0.hasPrefix(".tmp-") })
        }
    }
}

func withTemporaryDirectoryAsync(_ body: (String) async throws -> Void) async throws {
    var template = Array(
        ((NSTemporaryDirectory() as NSString).appendingPathComponent("keepsake-sodium-XXXXXX")).utf8CString)
    guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
    let path = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: path) }  // cleanup only
    try await body(path)
}
