import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeSodium
import KeepsakeTesting
import Testing

/// A master key source or none, for ``TestServer/store(prefix:masterKey:)``.
enum MasterKeySourceOrNone {
    case none
    case some(MasterKeySource)
    var source: MasterKeySource? {
        if case let .some(source) = self { return source }
        return nil
    }
}

extension PostgresServerTests {
    @Suite("PostgresStore keeps the store contract")
    struct PostgresStoreContractTests {
        @Test("A plain table passes every contract check", arguments: StoreContract.checks)
        func contract(_ check: StoreContract.Check) throws {
            try check.run(on: TestServer.store())
        }

        @Test("A sealed table passes every contract check", arguments: StoreContract.checks)
        func sealedContract(_ check: StoreContract.Check) throws {
            let key = EnvironmentMasterKey(variable: "K", environment: ["K": String(repeating: "ab", count: 32)])
            try check.run(on: TestServer.store(masterKey: .some(.provider(key))))
        }

        @Test(
            "A plain table keeps the observable store contract, written by another instance",
            arguments: ObservableStoreContract.checks)
        func observableContract(_ check: ObservableStoreContract.Check) async throws {
            let configuration = try PostgresConfiguration(parsing: TestServer.uniqueURI())
            try await check.run(
                on: try PostgresStore(configuration: configuration),
                writer: try PostgresStore(configuration: configuration))
        }

        @Test("A key longer than the store takes is refused before anything is sent, naming the limit")
        func longKey() throws {
            let store = try TestServer.store()
            let longest = String(repeating: "é", count: PostgresStore.maximumKeyLength / 2)  // 2 bytes each
            try store.setData(Data("1".utf8), forKey: longest)
            #expect(try store.data(forKey: longest) == Data("1".utf8))
            let tooLong = longest + "x"
            for attempt in 0..<3 {
                let error = try #require(
                    throws: KeepsakeError.self,
                    "attempt \(attempt)",
                    performing: {
                        switch attempt {
                        case 0: try store.setData(Data("2".utf8), forKey: tooLong)
                        case 1: _ = try store.data(forKey: tooLong)
                        default: _ = try store.commit([StoreWrite(key: tooLong, value: Data("2".utf8))])
                        }
                    })
                #expect(error.code == .invalidArgument)
                #expect(error.store == store.uri)
                #expect(error.message.contains("a key of 2049 bytes"), "\(error.message)")
                #expect(error.message.contains("at most 2048 bytes"))
            }
            #expect(try store.keys() == [longest], "nothing under the long key was written")
        }

        @Test("The async calls refuse a key longer than the store takes too")
        func longKeyAsync() async throws {
            let store = try TestServer.store()
            let tooLong = String(repeating: "k", count: PostgresStore.maximumKeyLength + 1)
            let read = await #expect(throws: KeepsakeError.self) { try await store.data(forKey: tooLong) }
            #expect(read?.code == .invalidArgument)
            let write = await #expect(throws: KeepsakeError.self) {
                try await store.commit([StoreWrite(key: tooLong, value: Data("2".utf8))])
            }
            #expect(write?.message.contains("at most 2048 bytes") == true)
        }
    }
}
