import Foundation

/// A store that takes a ``Migrator`` run's batch as the run holds it (``WriteBatch``: 40 bytes
/// a write), each ``StoreWrite`` built as the store reads it, instead of as an array of them
/// made first (56 bytes a write more, a million times, at the moment the run holds the most).
package protocol BatchCommittingStore: RecordStore {
    /// ``RecordStore/commit(_:)`` of the batch's writes, read in order (more than once if need be).
    func commit(batch writes: WriteBatch.Writes) throws(KeepsakeError) -> [StoreWriteResult]
}
