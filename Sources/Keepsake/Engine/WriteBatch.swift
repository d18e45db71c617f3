import Foundation

/// The writes of a ``Migrator`` run, held at a fixed size a write until they are committed:
/// the new bytes of each block of records in one buffer, and for each write where its bytes lie
/// in those buffers and its report's position — its key is the report's — in 24 bytes, and the
/// record's bytes as read (a slice of what the store handed over, not a copy) in 16 more.
///
/// On a store that takes a run's writes as they are made (``RunStreamingStore``), each block's
/// writes go to it as the block is handed on (``stream(into:keyedBy:)``), and the batch then
/// holds only where their bytes lie in the stream: neither the new bytes nor the bytes read
/// (the stream checked each write against them, and gives them back if the writes must be
/// committed as a batch after all, ``restoreStreamed(_:originals:keyedBy:)``).
///
/// An array of ``StoreWrite`` and each write's report position took 64 bytes a write: for a
/// million-record suite, 24 MB more at the commit, when the run holds the most.
package struct WriteBatch: Sendable {
    struct Entry: Sendable {
        /// Where the new bytes lie, counted over the blocks one after the other (for a write
        /// streamed into the store, where they lie in the stream).
        var start: Int
        var end: Int
        /// The position of the record's report (its key is the report's).
        let report: Int
    }

    private(set) var entries: [Entry] = []
    /// The record's bytes as read, of each write from the first not streamed: the write applies
    /// only if the key still holds them.
    private var originals: [Data] = []
    /// The same, of the streamed writes, once they are to be committed as a batch after all.
    private var streamedOriginals: [Data] = []
    /// The new bytes of each block of writes, and where each block starts (counted as `start`).
    private var blocks: [Data] = []
    private var blockStarts: [Int] = []
    /// Bytes held in `blocks`.
    private var length = 0
    /// The block being filled.
    private var arena: [UInt8] = []
    /// How many of the first entries were streamed into the store (``stream(into:keyedBy:)``):
    /// their new bytes lie in the stream, before any block's.
    private var streamed = 0

    var isEmpty: Bool { entries.isEmpty }

    mutating func reserveCapacity(_ count: Int) {
        entries.reserveCapacity(count)
        originals.reserveCapacity(count)
    }

    /// Adds the write of `encoded` over `original`, for the report at `report`.
    mutating func append(_ encoded: Data, over original: Data, report: Int) {
        let start = length + arena.count
        // Through its buffer: `Data` appended as a sequence went byte by byte (about 1k
        // instructions a record, on the thread that hands records on in order).
        encoded.withUnsafeBytes { arena.append(contentsOf: $0) }
        entries.append(Entry(start: start, end: length + arena.count, report: report))
        originals.append(original)
    }

    /// The record's bytes as read, of the write at `position`.
    func original(at position: Int) -> Data {
        position < streamed ? streamedOriginals[position] : originals[position - streamed]
    }

    /// Closes the block being filled: its bytes move into one buffer of their own size.
    mutating func endBlock() {
        guard !arena.isEmpty else { return }
        blocks.append(Data(arena))
        blockStarts.append(length)
        length += arena.count
        arena.removeAll(keepingCapacity: true)
    }

    /// Hands the writes not streamed yet to `stream`, in order, and drops their blocks: their
    /// bytes now lie in the stream, and the batch holds only where. Call after ``endBlock()``.
    ///
    /// - Returns: `false` when the stream stopped taking writes; the writes it did not take keep
    ///   their bytes here, and no more go to it.
    mutating func stream(into stream: any RunStream, keyedBy reports: RecordReports) -> Bool {
        guard streamed < entries.count else { return true }
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(entries.count - streamed)
        for position in streamed..<entries.count {
            let entry = entries[position]
            let range = value(of: entry).withUnsafeBytes { value in
                stream.append(key: reports.key(at: entry.report), value: value, over: originals[position - streamed])
            }
            guard let range else { return false }
            ranges.append(range)
        }
        for (position, range) in zip(streamed..., ranges) {
            entries[position].start = range.lowerBound
            entries[position].end = range.upperBound
        }
        streamed = entries.count
        originals.removeAll(keepingCapacity: true)
        // Every block held only writes streamed now. The next bytes are counted from past the
        // last streamed write's, so that no block's positions meet the stream's.
        blocks.removeAll()
        blockStarts.removeAll()
        length = ranges.last.map { max(length, $0.upperBound) } ?? length
        return true
    }

    /// Takes the streamed writes back from `stream`, to be committed as a batch: their new bytes
    /// are read back into one buffer of their own size (not the whole stream: only where each
    /// write's bytes lie), and the bytes each was migrated from are the stream's, by key
    /// (``RunStream/original(forKey:)``).
    ///
    /// - Throws: What reading the stream back throws; the batch is then as it was.
    mutating func restoreStreamed(
        from stream: any RunStream, keyedBy reports: RecordReports, store: String
    ) throws(KeepsakeError) {
        guard streamed > 0 else { return }
        let total = entries[..<streamed].reduce(0) { $0 + ($1.end - $1.start) }
        // Filled in place: built as an array and then made `Data`, the bytes were held twice.
        var values = Data(capacity: total)
        var starts: [Int] = []
        starts.reserveCapacity(streamed)
        // The streamed writes' ranges come in order and do not overlap: each chunk holds the
        // rest of one write's bytes, then whole ones, then the start of the next.
        var position = 0
        try stream.readBack { chunk, offset in
            let chunkEnd = offset + chunk.count
            while position < streamed {
                let entry = entries[position]
                if starts.count == position { starts.append(values.count) }
                let from = max(entry.start, offset)
                let to = min(entry.end, chunkEnd)
                if from < to {
                    values.append(
                        UnsafeRawBufferPointer(rebasing: chunk[(from - offset)..<(to - offset)])
                            .assumingMemoryBound(to: UInt8.self))
                }
                guard entry.end <= chunkEnd else { return }
                position += 1
            }
        }
        guard position == streamed, values.count == total else {
            throw KeepsakeError(
                .io, store: store,
                "the migrated records written so far read back short; the suite file was left as it was")
        }
        for index in 0..<streamed {
            let count = entries[index].end - entries[index].start
            entries[index].start = starts[index]
            entries[index].end = starts[index] + count
        }
        // Before every block kept here: their positions start past the stream's, and these
        // are fewer than the stream's bytes.
        blocks.insert(values, at: 0)
        blockStarts.insert(0, at: 0)
        // A key the stream cannot give back (it took no write it had not checked, so none) is
        // written only over nothing, which the store it was read from does not hold: a conflict,
        // never a write over what another writer stored.
        streamedOriginals = entries[..<streamed].map { stream.original(forKey: reports.key(at: $0.report)) ?? Data() }
    }

    /// Keeps only the writes for which `keep` is true (in order).
    /// Only before any write is streamed (a run that backs up does not stream).
    mutating func filter(_ keep: (Int) -> Bool) {
        let all = entries.indices.map(original(at:))
        var kept: [Data] = []
        kept.reserveCapacity(entries.count)
        var position = 0
        entries.removeAll { _ in
            defer { position += 1 }
            guard keep(position) else { return true }
            kept.append(all[position])
            return false
        }
        originals = kept
        streamedOriginals = []
        streamed = 0
    }

    /// Empties the batch, keeping the room its entries took for the next.
    mutating func removeAll() {
        arena.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        originals.removeAll(keepingCapacity: true)
        streamedOriginals = []
        blocks.removeAll()
        blockStarts.removeAll()
        length = 0
        streamed = 0
    }

    /// The new bytes of `entry`, sharing its block's buffer.
    func value(of entry: Entry) -> Data {
        guard entry.start < entry.end else { return Data() }  // no block need hold an empty value
        // The last block starting at or before `entry.start`: a binary search over a few
        // hundred blocks for a million records.
        var low = 0
        var high = blockStarts.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if blockStarts[middle] <= entry.start { low = middle } else { high = middle }
        }
        let block = blocks[low]
        let offset = block.startIndex - blockStarts[low]
        return block[(entry.start + offset)..<(entry.end + offset)]
    }

    /// The writes as ``StoreWrite``s, each built when it is read, keyed by `reports`. Call after
    /// ``endBlock()``.
    func writes(keyedBy reports: RecordReports) -> Writes {
        Writes(batch: self, reports: reports)
    }

    /// The batch's writes, each verified (``StoreWrite/valueIsVerified``), applied only over the
    /// bytes that were read.
    package struct Writes: RandomAccessCollection, Sendable {
        let batch: WriteBatch
        let reports: RecordReports

        package var startIndex: Int { 0 }
        package var endIndex: Int { batch.entries.count }

        package subscript(position: Int) -> StoreWrite { write(at: position) }

        /// The write at `position`, by a plain call: a store in another module reading the
        /// batch through the collection's subscript went through its witness, whose read
        /// allocated a frame for each write.
        package func write(at position: Int) -> StoreWrite {
            let entry = batch.entries[position]
            var write = StoreWrite(
                key: reports.key(at: entry.report), value: batch.value(of: entry),
                expectation: .unchanged(batch.original(at: position)))
            write.valueIsVerified = true
            return write
        }
    }
}
