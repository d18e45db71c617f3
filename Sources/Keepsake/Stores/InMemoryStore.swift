import Foundation
import Synchronization

/// A store that keeps records in memory, for tests and previews.
///
/// Batches apply as one unit under a lock, so it honours the whole ``RecordStore`` contract.
public final class InMemoryStore: RecordStore {
    public let uri: String
    public var capabilities: StoreCapabilities { [] }
    private let storage: Mutex<[String: Data]>

    /// - Parameters:
    ///   - name: Shown in errors as `memory:<name>`.
    ///   - contents: Initial key → bytes.
    public init(name: String = "default", contents: [String: Data] = [:]) {
        uri = "memory:\(name)"
        storage = Mutex(contents)
    }

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        return storage.withLock { $0[key] }
    }

    public func keys() throws(KeepsakeError) -> [String] {
        storage.withLock { $0.keys.sorted() }
    }

    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        storage.withLock { $0.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }

    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try validateKey(write.key) }
        return storage.withLock { contents in
            writes.map { write in
                guard write.expects(contents[write.key]) else { return .conflict }
                contents[write.key] = write.value
                return .applied
            }
        }
    }
}
