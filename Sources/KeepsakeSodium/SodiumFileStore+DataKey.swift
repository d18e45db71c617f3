internal import FileKit
import Foundation
import Keepsake
internal import SodiumKit

#if canImport(Glibc)
import Glibc
#endif

extension SodiumFileStore: ResealableStore {
    /// The data key generation this store writes, as `generation N` (1 until the first
    /// rotation).
    public var writtenKeyID: String { Self.keyID(keySet.primary.number) }

    static func keyID(_ generation: UInt32) -> String { "generation \(generation)" }

    /// How many record files each data key generation sealed, read from each file's first 14
    /// bytes (nothing is decrypted). A file that is no record of a known format is counted
    /// under `damaged`.
    ///
    /// - Throws: `KeepsakeError` when the directory or the header cannot be read.
    public func keyCensus() throws(KeepsakeError) -> KeyCensus {
        try census(keys: currentKeys())
    }

    /// Starts a rotation of the store's data key: a new random data key becomes the primary
    /// generation, which every write seals under from then on (in this process and, at their
    /// next write, in every other that has the store open), while the old generations still
    /// open the records they sealed. ``reseal(batchSize:progress:)`` then seals every record
    /// again under the new key and retires the old ones.
    ///
    /// The first rotation turns a format-1 store into format 2 (`docs/FORMAT.md` §6.1): its
    /// header holds several data keys and its new record files name theirs. A release that reads
    /// only format 1 refuses such a store as corrupt, so upgrade every app first.
    ///
    /// ```swift
    /// let store = try SodiumFileStore(directory: dir, key: .keyFile(path: keyPath))
    /// try store.beginDataKeyRotation()
    /// let report = try store.reseal(batchSize: 512, progress: nil)
    /// assert(report.isComplete)  // every record is under the new data key; the old one is gone
    /// ```
    ///
    /// - Returns: The new primary generation; when a rotation is already under way (the header
    ///   holds more than one data key), nothing is written and the current primary is returned,
    ///   so that running again resumes it.
    /// - Throws: `wrongKey` when the store's master key was changed since it was opened;
    ///   `lockTimeout`; `corruptStore`; `.io` with the `errno`.
    /// - Important: If this throws, the header is as it was. Killed at any moment, the store
    ///   opens with the old header or the new one, and every record opens under both.
    @discardableResult
    public func beginDataKeyRotation() throws(KeepsakeError) -> Int {
        let lock = try Self.acquireLock(lockPath, timeout: lockTimeout, uri: uri)
        defer { lock.unlock() }
        cleanLeftovers()
        let (header, master, keys) = try verifiedHeader()
        guard keys.generations.count == 1 else { return Int(keys.primary.number) }
        guard keys.primary.number < UInt32.max else {
            throw KeepsakeError(.invalidArgument, store: uri, "the store's data key generations are used up")
        }
        let rotated = keys.adding(random.secret(Format.keyBytes))
        try writeHeader(
            header.rewrapping(rotated, master: master, wrapNonce: random.bytes(Sodium.aeadNonceBytes)),
            keys: rotated, failure: "cannot write the header with the new data key; nothing changed")
        Log.sodium.info(
            "data key rotation begun", metadata: ["store": "\(uri)", "generation": "\(rotated.primary.number)"])
        return Int(rotated.primary.number)
    }

    /// Seals every record file that an older data key generation sealed again under the
    /// primary generation, `batchSize` files per turn of the store's writer lock (readers take
    /// no lock; writers wait at most one batch), each batch one durable group as ``commit(_:)``
    /// writes. When no record is left under an older generation, the header is rewritten with
    /// the primary data key only: the old keys are gone, and a copy of an old header no longer
    /// opens what was written since.
    ///
    /// Files are listed once when the pass begins: a file written after that is sealed under
    /// the primary already, since every writer reads the header under the lock.
    ///
    /// - Parameters:
    ///   - batchSize: Record files per batch (at least 1).
    ///   - progress: Called after each batch.
    /// - Throws: `KeepsakeError` when a file cannot be read or written (what earlier batches did
    ///   stays done; running again resumes), `lockTimeout`.
    /// - Important: A record file that no key of the store opens is not touched: it is counted
    ///   in `ResealReport.unreadable` under its file name, and the old keys are not retired.
    public func reseal(
        batchSize: Int, progress: (@Sendable (ResealProgress) -> Void)?
    ) throws(KeepsakeError) -> ResealReport {
        let names = try recordFileNames()
        let batchSize = max(batchSize, 1)
        var (resealed, unreadable, unreadableNames) = (0, 0, [String]())
        var start = 0
        while start < names.count {
            let batch = names[start..<min(start + batchSize, names.count)]
            let (count, failed) = try resealBatch(batch)
            resealed += count
            unreadable += failed.count
            unreadableNames += failed.prefix(20 - unreadableNames.count)
            start += batch.count
            progress?(ResealProgress(done: start, total: names.count))
        }
        let (retired, census) = try retireOldGenerations()
        return ResealReport(
            resealed: resealed, changedMeanwhile: 0, unreadable: unreadable, unreadableKeys: unreadableNames,
            retired: retired, census: census)
    }

    /// One batch of ``reseal(batchSize:progress:)`` under the writer lock: how many files were
    /// sealed again, and the names of those no key opens.
    private func resealBatch(_ batch: ArraySlice<String>) throws(KeepsakeError) -> (Int, [String]) {
        let lock = try Self.acquireLock(lockPath, timeout: lockTimeout, uri: uri)
        defer { lock.unlock() }
        let existing = cleanLeftovers()
        let keys = try currentKeys()
        var group: [GroupedFile] = []
        var unreadable: [String] = []
        var nonces = NonceBatch(random: random, count: batch.count)
        for name in batch {
            guard let bytes = try readRecordBytes(name) else { continue }  // removed meanwhile
            guard RecordFile.generation(of: bytes) != keys.primary.number else { continue }
            let nameHash = Hex.decode(String(name.dropLast(Format.recordSuffix.count)))!
            do throws(FormatFailure) {
                let opened = try RecordFile.open(bytes, nameHash: nameHash, storeID: storeID, keys: keys)
                let file = RecordFile.seal(
                    value: opened.value, recordKey: opened.recordKey, storeID: storeID, keys: keys.writing,
                    generation: keys.primary.number, nonce: nonces.next())
                group.append(GroupedFile(name: name, data: file))
            } catch {
                unreadable.append(name)
            }
        }
        let failures = fileSystem.commitGroup(group, in: directory, existing: existing)
        for file in group { seen.forget(file.name) }
        if let failure = failures.lazy.compactMap({ $0 }).first {
            throw KeepsakeError(
                failure.code, store: uri,
                "cannot write a record file sealed under the new data key; the previous file was left in place",
                cause: failure.cause)
        }
        return (group.count, unreadable)
    }

    /// Under the lock: when every record file is under the primary generation, the header
    /// rewritten with the primary data key only. Returns the retired generations' ids, and the
    /// census taken under the lock (the same after a retirement: every record is under the
    /// primary, which stays).
    private func retireOldGenerations() throws(KeepsakeError) -> (retired: [String], census: KeyCensus) {
        let lock = try Self.acquireLock(lockPath, timeout: lockTimeout, uri: uri)
        defer { lock.unlock() }
        let (header, master, keys) = try verifiedHeader()
        let counted = try census(keys: keys)
        guard keys.generations.count > 1, counted.outstanding == 0 else { return ([], counted) }
        let kept = keys.primaryOnly()
        try writeHeader(
            header.rewrapping(kept, master: master, wrapNonce: random.bytes(Sodium.aeadNonceBytes)),
            keys: kept, failure: "cannot write the header without the old data keys; they are kept for now")
        let retired = keys.generations.dropLast().map { Self.keyID($0.number) }
        Log.sodium.info("old data keys retired", metadata: ["store": "\(uri)", "retired": "\(retired)"])
        return (retired, counted)
    }

    /// The header on disk, unwrapped with this store's master key (not only checked by
    /// identity): a header is rewritten only by a store that opens it. Call with the lock held.
    private func verifiedHeader() throws(KeepsakeError) -> (StoreHeader, MasterSubkeys, KeySet) {
        let (header, identity) = try Self.readHeaderWithIdentity(directory: directory, uri: uri)
        guard header.storeID == storeID else {
            throw KeepsakeError(
                .corruptStore, store: uri, "the header on disk is not the one this store was opened from")
        }
        let (keys, master) = try unwrapWithHeldKeys(header, identity: identity)
        return (header, master, keys)
    }

    private func writeHeader(_ header: StoreHeader, keys: KeySet, failure: String) throws(KeepsakeError) {
        do throws(SystemFailure) {
            try fileSystem.replace(Format.headerFileName, in: directory, with: Data(header.encoded))
        } catch {
            throw KeepsakeError(error.code, store: uri, failure, cause: error.cause)
        }
        keyState.withLock {
            $0.keys = keys
            $0.header = nil
        }
    }

    private func census(keys: KeySet) throws(KeepsakeError) -> KeyCensus {
        var counts: [UInt32?: Int] = [:]
        for name in try recordFileNames() {
            guard let bytes = try readRecordBytes(name) else { continue }
            counts[RecordFile.generation(of: bytes), default: 0] += 1
        }
        return KeyCensus(
            entries: counts.map { generation, count in
                guard let generation else { return KeyCensus.Entry(keyID: "damaged", count: count, role: .unknown) }
                let role: KeyCensus.Role =
                    generation == keys.primary.number
                    ? .primary : keys.recordKey(generation) == nil ? .unknown : .previous
                return KeyCensus.Entry(keyID: Self.keyID(generation), count: count, role: role)
            })
    }

    private func recordFileNames() throws(KeepsakeError) -> [String] {
        do throws(SystemFailure) {
            return try Syscall.listDirectory(directory).filter(Self.isRecordFileName).sorted()
        } catch {
            throw KeepsakeError(error.code, store: uri, "cannot list the store directory", cause: error.cause)
        }
    }

    private func readRecordBytes(_ name: String) throws(KeepsakeError) -> [UInt8]? {
        do throws(SystemFailure) {
            return try Syscall.readFile(directory + "/" + name)
        } catch {
            throw KeepsakeError(
                error.code, store: uri, "cannot read the record file \(name); it was left as it is", cause: error.cause)
        }
    }
}
