import Foundation
import Keepsake
import Synchronization
import Testing

@testable import KeepsakeKeyring

extension KeyringTests {
    /// A replace sends its read-back (`Item.GetSecret`) right behind its `Item.SetSecret`. The bus
    /// delivers them in order; whether the provider answers them in order is checked here against
    /// each provider, and a read-back answered out of order must never undo a good write.
    @Suite("Read-back sent with the write")
    struct PipelinedReadBack {
        @Test("the provider answers a read-back sent with the write after applying the write, every time")
        func providerAnswersInOrder() throws {
            let store = try PrivateKeyring.freshStore("pipeline-order")
            try store.setData(Data("seed".utf8), forKey: "k")
            let channel = LibsecretChannel()
            // Short and long secrets in turn (a long one takes the provider longer to store),
            // and each differs from the one before.
            let values = (0..<200).map { index in
                Data("\(index):".utf8)
                    + Data(repeating: UInt8(ascii: "a") + UInt8(index % 26), count: index % 2 == 0 ? 16 : 8192)
            }
            let outOfOrder = try channel.call(timeout: .seconds(60)) { call throws(LibsecretFailure) -> [Int] in
                let found = try call.search(["service": store.service, "username": "k"])
                guard found.unlocked.count == 1, let path = found.unlocked.first else {
                    throw LibsecretFailure(
                        stage: .search, kind: .other, message: "the item is not found once: \(found)")
                }
                var outOfOrder: [Int] = []
                for (index, value) in values.enumerated() {
                    switch try call.setSecretReadingBack(value, at: path) {
                    case let .success(back): if back != value { outOfOrder.append(index) }
                    case let .failure(error): throw error
                    }
                }
                return outOfOrder
            }
            #expect(outOfOrder.isEmpty, "read-backs that did not see the write sent before them: \(outOfOrder)")
            #expect(try store.data(forKey: "k") == values.last)
        }

        @Test("a read-back sent with the write that missed it is read again, and the write stands")
        func readBackAnsweredBeforeTheWrite() throws {
            var store = try PrivateKeyring.freshStore("pipeline-early")
            let previous = Data(#"{"v":"previous"}"#.utf8)
            try store.setData(previous, forKey: "k")
            let reads = Mutex(0)
            // The first read-back answers with the record before the write, as a provider that
            // answered the GetSecret before the SetSecret would.
            store.readBackTransform = { data in
                reads.withLock {
                    $0 += 1
                    return $0 == 1 ? previous : data
                }
            }
            let mine = Data(#"{"v":"mine"}"#.utf8)
            try store.setData(mine, forKey: "k")
            store.readBackTransform = nil
            #expect(reads.withLock { $0 } == 2, "read back with the write, then once on its own")
            #expect(try store.data(forKey: "k") == mine, "not undone")
            #expect(try PrivateKeyring.secretToolSearch(service: store.service).count == 1)
        }
    }
}
