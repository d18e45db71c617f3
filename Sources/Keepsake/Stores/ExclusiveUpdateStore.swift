import Foundation

/// A store that can hold one record against every other writer while a change to it is worked
/// out: a row lock (PostgreSQL's `SELECT … FOR UPDATE`), or the store's writer lock (the
/// defaults suite, the encrypted file store, the keyring).
///
/// `Vault.update` uses it when the store offers it: writers of one record then take turns,
/// and none of them ever sees ``KeepsakeError/Code/conflict`` because another got there first.
/// On a store without it, `update` reads, changes and writes under compare-and-swap, up to
/// its `attempts`.
///
/// While `change` runs, the record is held: other writers of it wait (up to their own
/// deadlines). So `change` must be short, and must not call the store again for the same key
/// (it would wait for itself until the deadline) — nor, on a store whose writer lock covers
/// every key, for any other key.
public protocol ExclusiveUpdateStore: RecordStore {
    /// Reads the bytes under `key` while holding the key against every other writer, passes
    /// them to `change` (`nil`: nothing is stored), and stores what `change` returns — before any
    /// other writer can write the key.
    ///
    /// - Parameters:
    ///   - key: The record key.
    ///   - change: Given what is stored, returns the bytes to store. Throwing ends the update
    ///     with that error, and nothing is written.
    /// - Throws: What `change` throws, and the store's own errors (``KeepsakeError/Code/timeout``
    ///   when the key could not be held within the store's deadline).
    /// - Important: If this throws, nothing was written — except when the store lost its
    ///   connection after asking to commit: then the error is ``KeepsakeError/Code/unavailable``
    ///   and says the write may have been applied.
    func exclusiveUpdate(forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data) throws(KeepsakeError)
}

/// A store whose calls are asynchronous at heart (a network client): ``Vault``'s `async` calls
/// reach it directly, with no thread of their own and no waiting thread.
///
/// Each requirement does what the synchronous ``RecordStore`` call of the same name does.
public protocol AsyncRecordStore: RecordStore {
    /// ``RecordStore/data(forKey:)``, without blocking a thread.
    func data(forKey key: String) async throws(KeepsakeError) -> Data?

    /// ``RecordStore/commit(_:)``, without blocking a thread.
    ///
    /// - Important: As ``RecordStore/commit(_:)``.
    func commit(_ writes: [StoreWrite]) async throws(KeepsakeError) -> [StoreWriteResult]
}

/// An ``AsyncRecordStore`` that can hold a record while a change to it is worked out, without
/// blocking a thread.
public protocol AsyncExclusiveUpdateStore: AsyncRecordStore, ExclusiveUpdateStore {
    /// ``ExclusiveUpdateStore/exclusiveUpdate(forKey:_:)``, without blocking a thread.
    ///
    /// - Important: As ``ExclusiveUpdateStore/exclusiveUpdate(forKey:_:)``.
    func exclusiveUpdate(
        forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data
    ) async throws(KeepsakeError)
}
