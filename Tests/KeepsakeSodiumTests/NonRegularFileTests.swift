import Foundation
import Keepsake
import Migrations
import Testing

@testable import KeepsakeSodium

/// A FIFO, socket or device where the store expects a file is refused at once, never waited on.
@Suite("Non-regular files in an encrypted store")
struct NonRegularFileTests {
    let fifoCause = KeepsakeError.Cause.other("it is a FIFO, not a regular file")

    @Test("a FIFO as the key file is refused at once with invalidArgument naming the key file")
    func keyFile() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            try FileManager.default.removeItem(atPath: directory + "/store.key")
            try makeFIFO(directory + "/store.key")
            let error = try #require(throws: KeepsakeError.self) { _ = try reopen(directory) }
            #expect(error.code == .invalidArgument)
            #expect(error.cause == fifoCause)
            #expect(error.message.contains("key file \(directory)/store.key"))
            #expect(throws: KeepsakeError.self) {
                _ = try SodiumFileStore.create(
                    directory: directory + "/other", key: .keyFile(path: directory + "/store.key"))
            }
        }
    }

    @Test("a FIFO as the store header is refused at once")
    func header() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            try FileManager.default.removeItem(atPath: directory + "/store/keepsake.header")
            try makeFIFO(directory + "/store/keepsake.header")
            let error = try #require(throws: KeepsakeError.self) { _ = try reopen(directory) }
            #expect(error.code == .invalidArgument)
            #expect(error.cause == fifoCause)
            #expect(error.message.contains("store header"))
        }
    }

    @Test("a FIFO as a record file is that record's error (a damaged store); the other records are read and migrated")
    func recordFile() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data(#"{"name":"Ada","age":"36"}"#.utf8), forKey: "person")
            let name = store.subkeys.fileName(of: "trialInfo")
            try makeFIFO(directory + "/store/" + name)
            let error = try #require(throws: KeepsakeError.self) { _ = try store.data(forKey: "trialInfo") }
            #expect(error.code == .corruptStore)
            #expect(error.message.contains("the store holds a FIFO where the record file \(name) belongs"))
            #expect(error.key == "trialInfo")
            #expect(error.cause == fifoCause)
            #expect(try store.keys() == ["person"])
            let records = try store.allRecords()
            #expect(records.map(\.key) == [name, "person"])
            guard case let .failure(listed) = records[0].result else {
                Issue.record("the FIFO read as a record")
                return
            }
            #expect(listed.cause == fifoCause)
            let reports = try Migrator(store: store, chains: SampleModels.all, context: .fixed(now: Date())).run()
            #expect(reports.map(\.state) == [.unreadable, .migrated])
        }
    }
}
