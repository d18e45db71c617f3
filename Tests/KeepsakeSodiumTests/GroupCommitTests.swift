import FileKit
import Foundation
import Keepsake
import Synchronization
import Testing

@testable import KeepsakeSodium

@Suite("Group commit of a batch")
struct GroupCommitTests {
    @Test("a batch gives the results of its writes made in order: a key written twice, a removal, expectations")
    func sequentialResults() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("old-a".utf8), forKey: "a")
            try store.setData(Data("old-b".utf8), forKey: "b")
            let results = try store.commit([
                StoreWrite(key: "a", value: Data("1".utf8), expectation: .unchanged(Data("old-a".utf8))),
                StoreWrite(key: "a", value: Data("2".utf8), expectation: .unchanged(Data("1".utf8))),
                StoreWrite(key: "b", value: nil),
                StoreWrite(key: "c", value: Data("3".utf8), expectation: .unchanged(nil)),
                StoreWrite(key: "d", value: Data("4".utf8), expectation: .unchanged(Data("not there".utf8)))
            ])
            #expect(results == [.applied, .applied, .applied, .applied, .conflict])
            #expect(try store.keys() == ["a", "c"])
            #expect(try store.data(forKey: "a") == Data("2".utf8))
            #expect(try store.data(forKey: "c") == Data("3".utf8))
            #expect(try listing(directory + "/store").allSatisfy { !$0.hasPrefix(".tmp-") })
        }
    }

    @Test("a batch of 200 records is made durable with one flush and one directory sync")
    func oneFlush() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            let steps = Mutex<[FileStep: Int]>([:])
            let counting = FileSystem { step in
                steps.withLock { $0[step, default: 0] += 1 }
                return nil
            }
            let store = try reopen(directory, fileSystem: counting)
            let results = try store.commit((0..<200).map { StoreWrite(key: "k\($0)", value: Data("\($0)".utf8)) })
            #expect(results.allSatisfy { $0 == .applied })
            let counted = steps.withLock { $0 }
            #expect(counted[.create] == 200)
            #expect(counted[.write] == 200)
            #expect(counted[.fsync] == 1)
            #expect(counted[.rename] == 200)
            #expect(counted[.syncDirectory] == 1)
            #expect(try store.keys().count == 200)
            #expect(try store.data(forKey: "k137") == Data("137".utf8))
        }
    }

    @Test(
        """
        expectations on settled records are checked by the file's identity, and another writer's \
        change in between is still a conflict
        """)
    func settledExpectations() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            let other = try reopen(directory)
            let seeded = try store.commit((0..<4).map { StoreWrite(key: "k\($0)", value: Data("old-\($0)".utf8)) })
            #expect(seeded.allSatisfy { $0 == .applied })
            Thread.sleep(forTimeInterval: 3.2)  // settled: ctime more than 2 whole seconds before the read
            let read = try store.allRecords()
            #expect(read.count == 4)
            // Another store object (as another process would) replaces k1 with bytes of the same
            // length, and removes k2, after the read and before the batch.
            try other.setData(Data("new-1".utf8), forKey: "k1")
            try other.removeData(forKey: "k2")
            let results = try store.commit([
                StoreWrite(key: "k0", value: Data("v0".utf8), expectation: .unchanged(Data("old-0".utf8))),
                StoreWrite(key: "k1", value: Data("v1".utf8), expectation: .unchanged(Data("old-1".utf8))),
                StoreWrite(key: "k2", value: Data("v2".utf8), expectation: .unchanged(Data("old-2".utf8))),
                StoreWrite(key: "k3", value: Data("v3".utf8), expectation: .unchanged(Data("not-3".utf8))),
                StoreWrite(key: "k3", value: Data("v3".utf8), expectation: .unchanged(nil))
            ])
            #expect(results == [.applied, .conflict, .conflict, .conflict, .conflict])
            #expect(try other.data(forKey: "k0") == Data("v0".utf8))
            #expect(try other.data(forKey: "k1") == Data("new-1".utf8))
            #expect(try other.data(forKey: "k2") == nil)
            #expect(try other.data(forKey: "k3") == Data("old-3".utf8))
            // A record this store object just wrote is not settled: checked by reading it.
            #expect(
                try store.commit([
                    StoreWrite(key: "k0", value: Data("w0".utf8), expectation: .unchanged(Data("v0".utf8)))
                ])
                    == [.applied])
            #expect(try listing(directory + "/store").allSatisfy { !$0.hasPrefix(".tmp-") })
        }
    }
}
