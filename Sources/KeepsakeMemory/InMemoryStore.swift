import Foundation
import Keepsake
import Synchronization

/// A store that keeps records in memory, for tests and previews.
///
/// Batches apply as one unit under a lock, so it honours the whole `RecordStore` contract.
public final class InMemoryStore: RecordStore {
    public let uri: String
    public var capabilities: StoreCapabilities { [] }
    /// Keys are exact strings: compared by their UTF-8 bytes.
    private let storage: Mutex<[ExactString: Data]>
    /// The streams of ``changes()`` being consumed, told of every applied write.
    private let watchers = Mutex<[UUID: StoreChanges.Continuation]>([:])

    /// - Parameters:
    ///   - name: Shown in errors as `memory:<name>`.
    ///   - contents: Initial key → bytes.
    public init(name: String = "default", contents: [String: Data] = [:]) {
        uri = "memory:\(name)"
        storage = Mutex(Dictionary(uniqueKeysWithValues: contents.map { (ExactString($0.key), $0.value) }))
    }

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        return storage.withLock { $0[ExactString(key)] }
    }

    public func keys() throws(KeepsakeError) -> [String] {
        storage.withLock { $0.keys.sorted().map(\.value) }
    }

    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        storage.withLock { $0.sorted { $0.key < $1.key }.map { ($0.key.value, $0.value) } }
    }

    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try validateKey(write.key) }
        let results = storage.withLock { contents in
            writes.map { write in
                let key = ExactString(write.key)
                guard write.expects(contents[key]) else { return StoreWriteResult.conflict }
                contents[key] = write.value
                return .applied
            }
        }
        let changed = zip(writes, results).filter { $0.1 == .applied }.map(\.0.key)
        if !changed.isEmpty {
            for watcher in watchers.withLock({ Array($0.values) }) {
                for key in changed { watcher.yield(.key(key)) }
            }
        }
        return results
    }
}

extension InMemoryStore: ObservableStore {
    /// A hint for every key a ``commit(_:)`` of this store (or of any code holding it) changes.
    public func changes() throws(KeepsakeError) -> StoreChanges {
        let (stream, continuation) = StoreChanges.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        watchers.withLock { $0[id] = continuation }
        WatchCount.opened()
        continuation.onTermination = { [weak self] _ in
            self?.watchers.withLock { $0[id] = nil }
            WatchCount.closed()
        }
        return stream
    }
}
