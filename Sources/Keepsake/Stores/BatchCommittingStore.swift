import Foundation

/// A store that takes a ``Migrator`` run's batch as the run holds it (``WriteBatch``: 40 bytes
/// a write, the new bytes and the bytes read included), each ``StoreWrite`` built as the store reads it, instead of as an array of them
/// made first (56 bytes a write more, a million times, at the moment the run holds the most).
package protocol BatchCommittingStore: RecordStore {
    /// ``RecordStore/commit(_:)`` of the batch's writes, read in order (more than once if need be).
    func commit(batch writes: WriteBatch.Writes) throws(KeepsakeError) -> [StoreWriteResult]
}

/// A store that can write a ``Migrator`` run's writes into its new storage while the run is
/// still evaluating records (the defaults store: the new suite file, written as each block of
/// records is handed on), so that the run does not hold every new record's bytes until its
/// commit, and the commit does not write them all at the end.
package protocol RunStreamingStore: BatchCommittingStore {
    /// A stream for the writes of the run reading this store's records now, or `nil` when the
    /// store cannot take one (the run then holds its writes and commits them as a batch).
    func beginRunStream() -> (any RunStream)?
}

/// A run's writes, streamed into a store's new storage as they are made, committed at the end
/// as one write — or, when the store no longer holds what the run read, not at all: then the run
/// commits them as a batch, their bytes read back (``readBack(_:)``).
package protocol RunStream: AnyObject {
    /// Writes the next write: its key, its new bytes and the bytes it was migrated from, in the
    /// order the store handed the records over. Returns where the new bytes lie in what the
    /// stream holds, or `nil` once the stream takes no more writes (a write out of the store's
    /// order or over bytes it does not hold, or a failure to write): the caller keeps them.
    func append(key: String, value: UnsafeRawBufferPointer, over original: Data) -> Range<Int>?

    /// Commits every write appended, as one write of the store, when the store holds what the
    /// run read and every write was taken: `true`, each applied. `false` when not: nothing was
    /// written, and the writes are to be committed as a batch.
    ///
    /// - Throws: The failure that stopped the stream, or the store's own failure to write;
    ///   nothing was written.
    func commit() throws(KeepsakeError) -> Bool

    /// Reads back what the stream holds, from its start, handing `body` each chunk in turn and
    /// the offset it starts at: the ranges ``append(key:value:over:)`` returned lie there.
    ///
    /// - Throws: When the stream's bytes cannot be read back; nothing was written.
    func readBack(_ body: (_ chunk: UnsafeRawBufferPointer, _ offset: Int) -> Void) throws(KeepsakeError)

    /// The bytes the store held under `key` when the run read it: what the write streamed for
    /// `key` was checked to have been migrated from; `nil` for a key with no such write.
    func original(forKey key: String) -> Data?

    /// Drops the stream and what it holds; nothing is written.
    func discard()
}
