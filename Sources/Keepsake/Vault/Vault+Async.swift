import Dispatch

// `async` overloads of every Vault call. A store's calls block (a file lock another process
// holds, fsync, a D-Bus round trip, later the network); run on Swift's cooperative thread pool
// they would stall every task sharing it. These run the blocking call on a Dispatch queue of
// their own and suspend the calling task until it is done.

extension Vault {
    /// The synchronous `load(_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func load<Latest>(_ key: RecordKey<Latest>) async throws(KeepsakeError) -> LoadedRecord<Latest>? {
        try await Blocking.run { () throws(KeepsakeError) in try self.load(key) }
    }

    /// The synchronous `value(_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func value<Latest>(_ key: RecordKey<Latest>) async throws(KeepsakeError) -> Latest {
        try await Blocking.run { () throws(KeepsakeError) in try self.value(key) }
    }

    /// The synchronous `save(_:for:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func save<Latest>(_ value: Latest, for key: RecordKey<Latest>) async throws(KeepsakeError) {
        try await Blocking.run { () throws(KeepsakeError) in try self.save(value, for: key) }
    }

    /// The synchronous `update(_:attempts:_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, this update wrote nothing.
    @discardableResult
    public func update<Latest>(
        _ key: RecordKey<Latest>, attempts: Int = Vault.defaultUpdateAttempts,
        _ change: @escaping @Sendable (inout Latest) throws -> Void
    ) async throws(KeepsakeError) -> Latest {
        try await Blocking.run { () throws(KeepsakeError) in try self.update(key, attempts: attempts, change) }
    }

    /// The synchronous `update(_:forKey:attempts:_:)`, without blocking the cooperative thread
    /// pool.
    ///
    /// - Important: If this throws, this update wrote nothing.
    @discardableResult
    public func update<Latest>(
        _ chain: ModelChain<Latest>, forKey key: String? = nil, attempts: Int = Vault.defaultUpdateAttempts,
        _ change: @escaping @Sendable (Latest?) throws -> Latest
    ) async throws(KeepsakeError) -> Latest {
        try await Blocking.run { () throws(KeepsakeError) in
            try self.update(chain, forKey: key, attempts: attempts, change)
        }
    }

    /// The synchronous `remove(_:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the store is as it was.
    public func remove<Latest>(_ key: RecordKey<Latest>) async throws(KeepsakeError) {
        try await Blocking.run { () throws(KeepsakeError) in try self.remove(key) }
    }

    /// The synchronous `load(_:forKey:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func load<Latest>(
        _ chain: ModelChain<Latest>, forKey key: String? = nil
    ) async throws(KeepsakeError) -> LoadedRecord<Latest>? {
        try await Blocking.run { () throws(KeepsakeError) in try self.load(chain, forKey: key) }
    }

    /// The synchronous `save(_:in:forKey:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the stored bytes are exactly as they were.
    public func save<Latest>(
        _ value: Latest, in chain: ModelChain<Latest>, forKey key: String? = nil
    ) async throws(KeepsakeError) {
        try await Blocking.run { () throws(KeepsakeError) in try self.save(value, in: chain, forKey: key) }
    }

    /// The synchronous `remove(forKey:)`, without blocking the cooperative thread pool.
    ///
    /// - Important: If this throws, the store is as it was.
    public func remove(forKey key: String) async throws(KeepsakeError) {
        try await Blocking.run { () throws(KeepsakeError) in try self.remove(forKey: key) }
    }

    /// The synchronous `keys()`, without blocking the cooperative thread pool.
    public func keys() async throws(KeepsakeError) -> [String] {
        try await Blocking.run { () throws(KeepsakeError) in try self.keys() }
    }
}

/// Runs blocking store calls off Swift's cooperative thread pool.
enum Blocking {
    /// A concurrent queue whose threads may block; Dispatch adds threads as they do.
    static let queue = DispatchQueue(label: "org.keepsake.blocking", attributes: .concurrent)

    static func run<T: Sendable>(_ work: @escaping @Sendable () throws(KeepsakeError) -> T) async throws(KeepsakeError)
        -> T
    {
        let result: Result<T, KeepsakeError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(KeepsakeError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
