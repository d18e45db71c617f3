internal import FileKit
import Foundation
import Keepsake
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A defaults-style store: one JSON document per suite, `{ key: record-or-value }`, like
/// UserDefaults. Plain values (strings, numbers, booleans, arrays, objects) live beside records.
///
/// ```swift
/// let defaults = try DefaultsStore(suite: "settings", app: "com.example.notes")
/// try defaults.set("dark", forKey: "theme")
/// let theme = try defaults.value(String.self, forKey: "theme")      // "dark"
/// let person = try Vault(store: defaults).load(Person.chain)          // migrated, written back
/// ```
///
/// On disk the document is `0600` in a directory created `0700`. Every change is a
/// read-modify-write under an exclusive `flock` on `<file>.lock`, and the document is replaced
/// durably (temporary file, fsync, rename, directory fsync), so a reader sees the old document or
/// the new one and a crash leaves one of them. `Vault.update` reads, changes and writes its record
/// under that lock too (``exclusiveUpdate(forKey:_:)``): writers of the suite take turns. Values a
/// change does not touch keep their exact bytes. A document that is not a JSON object is an
/// error — it is never treated as empty and never overwritten.
///
/// A migration run (`Migrator.run`, `migrate run`) does not hold the lock while it migrates:
/// it writes the new document into an unnamed file beside the suite as it goes, and under the
/// lock only checks that the suite still holds what it read before renaming that file into
/// place; when another writer changed the suite meanwhile, each migrated record is written only
/// over the bytes it was migrated from (see `DefaultsStore+RunStream.swift`).
public final class DefaultsStore: RecordStore, BatchCommittingStore {
    /// The suite file.
    public let path: String
    public let uri: String
    /// Defaults-style data is app data: a reinstall wipes it.
    public var capabilities: StoreCapabilities { [] }
    /// How long a change waits for another process holding the lock.
    public let lockTimeout: Duration
    /// Whether a migration run writes the new suite as it goes (``beginRunStream()``).
    let streamsRuns: Bool
    /// The last parsed version of the suite, reused while the file is provably unchanged.
    let cache = SuiteCache()
    /// Whether this instance has looked for a crashed writer's leftovers on a read (once).
    private let leftoversChecked = Mutex(false)

    /// A store on the suite file at `path` (created on the first write).
    public convenience init(path: String, lockTimeout: Duration = .seconds(10)) {
        self.init(path: path, lockTimeout: lockTimeout, streamsRuns: true)
    }

    /// A store on the suite file at `path`; `streamsRuns` off makes a migration run hold its
    /// writes and commit them at the end, as other stores take them (for tests comparing both).
    init(path: String, lockTimeout: Duration, streamsRuns: Bool) {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        self.path = (absolute as NSString).standardizingPath
        self.uri = "defaults:" + self.path
        self.lockTimeout = lockTimeout
        self.streamsRuns = streamsRuns
    }

    /// The suite `suite` of app `app` at its default place, `$XDG_CONFIG_HOME/<app>/<suite>.json`
    /// (`~/.config` when `XDG_CONFIG_HOME` is unset).
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` for names that are not plain file names,
    ///   `KeepsakeError.Code.unavailable` when neither `XDG_CONFIG_HOME` nor `HOME` is set.
    public convenience init(
        suite: String, app: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        for name in [suite, app] where name.isEmpty || name.contains("/") || name.hasPrefix(".") {
            throw KeepsakeError(.invalidArgument, "'\(name)' is not a valid suite or app name (no '/', no leading '.')")
        }
        let base: String
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            base = config
        } else if let home = environment["HOME"], !home.isEmpty {
            base = home + "/.config"
        } else {
            throw KeepsakeError(.unavailable, "neither XDG_CONFIG_HOME nor HOME is set; pass a path instead")
        }
        self.init(path: "\(base)/\(app)/\(suite).json")
    }

    private var lockPath: String { path + ".lock" }
    var directory: String { (path as NSString).deletingLastPathComponent }
    var fileName: String { (path as NSString).lastPathComponent }
    /// Temporary files carry the suite's name, so a write cleans up only this suite's leftovers.
    var fileSystem: FileSystem { FileSystem(temporaryPrefix: "." + fileName + ".tmp-") }

    // MARK: RecordStore

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        return try readDocument().value(forKey: key)
    }

    public func keys() throws(KeepsakeError) -> [String] {
        try readDocument().entries.map(\.key)
    }

    /// The suite as it is now, parsed (for the `Migrator`, which reads its records as slices).
    func currentDocument() throws(KeepsakeError) -> DefaultsDocument {
        try readDocument()
    }

    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        let document = try readDocument()
        return document.entries.map { ($0.key, Data(document.bytes[$0.range])) }
    }

    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        try commit(WriteList(count: writes.count) { writes[$0] })
    }

    /// ``commit(_:)`` of a migration run's batch as the run holds it (`BatchCommittingStore`),
    /// each write built as it is read.
    package func commit(batch writes: WriteBatch.Writes) throws(KeepsakeError) -> [StoreWriteResult] {
        try commit(WriteList(count: writes.count) { writes.write(at: $0) })
    }

    private func commit(_ writes: WriteList) throws(KeepsakeError) -> [StoreWriteResult] {
        // One pass: each key checked, each value not verified already checked, and whether the
        // keys come sorted, each once (a migration run's batch does).
        var sorted = true
        var previous: String?
        for write in writes {
            try validateKey(write.key)
            // A value the migrator encoded and verified is one JSON value already.
            if let value = write.value, !write.valueIsVerified {
                try Self.checkValue(value, store: uri, key: write.key)
            }
            if sorted, let previous, !previous.precedesExactly(write.key) { sorted = false }
            previous = write.key
        }
        return try holdingLock { () throws(KeepsakeError) in
            try apply(writes, sorted: sorted, to: try readDocument())
        }
    }

    /// Runs `body` holding the suite's writer lock (an exclusive `flock` on `<file>.lock`, made
    /// with the suite's directory if need be), waiting for it up to ``lockTimeout``.
    ///
    /// - Throws: `KeepsakeError.Code.lockTimeout` when another writer held it too long, the
    ///   errors of making the directory or opening the lock file, then what `body` throws.
    func holdingLock<T>(_ body: () throws(KeepsakeError) -> T) throws(KeepsakeError) -> T {
        do throws(SystemFailure) {
            try Syscall.makeDirectories(directory)
        } catch {
            throw error.error(store: uri, "cannot create the suite's directory")
        }
        let acquired: StoreLock?
        do throws(SystemFailure) {
            acquired = try StoreLock.acquire(lockPath, timeout: lockTimeout)
        } catch {
            throw error.error(store: uri, "cannot open the lock file \(lockPath)")
        }
        guard let lock = acquired else {
            throw KeepsakeError(
                .lockTimeout, store: uri,
                """
                another process held the lock file \(lockPath) for more than \(lockTimeout); \
                is another migrate or app writing this suite?
                """)
        }
        defer { lock.unlock() }
        return try body()
    }

    /// Applies `writes` (checked by the caller) to `document`, the suite as read with the lock
    /// held, and replaces the suite file durably when anything changed. Call with the lock held.
    private func apply(_ writes: WriteList, sorted: Bool, to document: DefaultsDocument) throws(KeepsakeError)
        -> [StoreWriteResult]
    {
        // Only the written keys are looked at: the other members keep their bytes, copied once
        // from the document into the new one.
        var results: [StoreWriteResult] = []
        results.reserveCapacity(writes.count)
        var changed = false
        let newDocument: Data
        if sorted {
            // Each key once, in order (a migration run's batch): no index of the changes needed,
            // only which writes apply.
            var applied: [Int] = []
            applied.reserveCapacity(writes.count)
            // The members are sorted too: found by walking both lists once, not by a search each.
            var member = document.entries.startIndex
            for position in writes.indices {
                let write = writes[position]
                while member < document.entries.endIndex, document.entries[member].key.precedesExactly(write.key) {
                    member += 1
                }
                let current: Data? =
                    member < document.entries.endIndex && document.entries[member].key.isExactly(write.key)
                    ? document.bytes[document.entries[member].range] : nil
                guard write.expects(current) else {
                    results.append(.conflict)
                    continue
                }
                if current != write.value { changed = true }
                applied.append(position)
                results.append(.applied)
            }
            let changes = AppliedWrites(writes: writes, applied: applied)
            guard changed else { return results }
            removeLeftovers()
            do throws(SystemFailure) {
                try fileSystem.replace(fileName, in: directory) { fd throws(SystemFailure) in
                    try document.write(applying: changes) { chunk throws(SystemFailure) in
                        try Syscall.writeAll(fd, chunk)
                    }
                }
            } catch {
                throw error.error(store: uri, "cannot write the suite file; it was left as it was")
            }
            return results
        } else {
            var changes: [ExactString: Data?] = [:]
            for write in writes {
                let key = ExactString(write.key)
                let current = changes[key] ?? document.slice(forKey: write.key)
                guard write.expects(current) else {
                    results.append(.conflict)
                    continue
                }
                if current != write.value { changed = true }
                changes[key] = .some(write.value)
                results.append(.applied)
            }
            guard changed else { return results }
            newDocument = document.applying(changes)
        }
        removeLeftovers()
        do throws(SystemFailure) {
            try fileSystem.replace(fileName, in: directory, with: newDocument)
        } catch {
            throw error.error(store: uri, "cannot write the suite file; it was left as it was")
        }
        return results
    }

    // MARK: Plain values

    /// The plain value under `key`, decoded as `T`, or `nil` when the key is absent.
    ///
    /// - Throws: `KeepsakeError.Code.corruptRecord` when the stored value is not a `T`.
    public func value<T: Decodable>(_ type: T.Type = T.self, forKey key: String) throws(KeepsakeError) -> T? {
        guard let bytes = try data(forKey: key) else { return nil }
        do {
            return try PlainJSON.decode(T.self, from: bytes)
        } catch let error as DecodingError {
            throw KeepsakeError(
                .corruptRecord, store: uri, key: key,
                "the stored value is not \(withArticle(String(describing: T.self)))", cause: error.keepsakeCause)
        } catch {
            throw KeepsakeError(
                .corruptRecord, store: uri, key: key, "the stored value is not valid JSON",
                cause: (error as? JSONSyntaxError)?.cause)
        }
    }

    /// Stores a plain value under `key` (as JSON, dates ISO 8601), replacing what was there.
    ///
    /// - Throws: `KeepsakeError.Code.encodingFailed` when the value cannot be encoded — a date
    ///   outside the years 0001–9999 among them — and the store's own errors.
    /// - Important: If this throws, the suite file is as it was.
    public func set<T: Encodable>(_ value: T, forKey key: String) throws(KeepsakeError) {
        let bytes: Data
        do {
            bytes = try CanonicalJSON.encode(value)
        } catch {
            throw KeepsakeError(
                .encodingFailed, store: uri, key: key, "the value could not be encoded as JSON",
                cause: encodingCause(error), underlying: error)
        }
        try setData(bytes, forKey: key)
    }

    // MARK: Document

    /// Removes temporary files a crashed writer of this suite left. Called under the lock.
    func removeLeftovers() {
        let names: [String]
        do throws(SystemFailure) {
            names = try Syscall.listDirectory(directory)
        } catch {
            return  // Cleaning is best effort: a leftover is harmless and the write reports its own errors.
        }
        for name in names where name.hasPrefix(fileSystem.temporaryPrefix) {
            Syscall.unlink(directory + "/" + name)
        }
    }

    /// Once per instance, on its first read: removes a crashed writer's leftovers (a killed
    /// write can leave its temporary file, or the previous document under its rollback name)
    /// when the suite's lock file exists and no writer holds it — so they do not wait for the
    /// suite's next write. A read never creates the lock file and never waits for it.
    private func removeLeftoversIfUnlocked() {
        let first = leftoversChecked.withLock { checked in
            defer { checked = true }
            return !checked
        }
        guard first, access(lockPath, F_OK) == 0 else { return }
        // Best effort: a leftover is harmless, and a lock that cannot be taken now means a writer
        // is at work (it cleans under the lock itself).
        guard let lock = try? StoreLock.acquire(lockPath, timeout: .zero) else { return }
        defer { lock.unlock() }
        removeLeftovers()
    }

    /// The suite as it is on disk now: the cached parse when the file is provably the version
    /// parsed last (see ``SuiteCache``), else the file read and parsed (and cached).
    func readDocument() throws(KeepsakeError) -> DefaultsDocument {
        if let settled = cache.settledDocument(at: path) { return settled }
        removeLeftoversIfUnlocked()
        let readAt = SuiteCache.now()
        if let (document, generation) = cache.cached() {
            // Compared with the cached bytes as it is read, chunk by chunk: a large suite that
            // did not change is not held twice (a run's commit reads the suite again).
            do throws(SystemFailure) {
                if let identity = try Self.suite(path, holds: document.bytes) {
                    cache.confirm(generation: generation, identity: identity, readAt: readAt)
                    return document
                }
            } catch {
                // Not an answer either way: the full read below meets the same failure and
                // reports it, naming the store.
            }
        }
        let read: (bytes: Data, identity: FileIdentity?)?
        do throws(SystemFailure) {
            read = try Self.readSuite(path)
        } catch {
            cache.clear()
            if error.errno == ENOTDIR { return DefaultsDocument.empty }
            throw error.error(store: uri, "cannot read the suite file")
        }
        guard let read else {
            cache.clear()
            return DefaultsDocument.empty
        }
        do throws(JSONSyntaxError) {
            return try cache.document(
                for: read.bytes, identity: read.identity, readAt: readAt, parse: DefaultsDocument.parse)
        } catch {
            throw KeepsakeError(
                .corruptStore, store: uri,
                """
                the suite file is not a JSON object of key → value; it was left as it is — \
                repair it or move it away
                """, cause: error.cause)
        }
    }

    /// The suite file opened for reading (a regular file; symbolic links not followed) and its
    /// status; `nil` when there is none.
    private static func openSuite(_ path: String) throws(SystemFailure) -> (fd: Int32, info: stat)? {
        do throws(SystemFailure) {
            return try Syscall.openRegularFile(path)
        } catch {
            if error.errno == ENOENT { return nil }
            throw error
        }
    }

    /// The identity of the regular file at `path` when it holds exactly `expected` and did not
    /// change while it was compared; `nil` when it differs, changed, or is not there. Read in
    /// chunks of 256 KB into one buffer, so that nothing the size of the suite is allocated.
    private static func suite(_ path: String, holds expected: Data) throws(SystemFailure) -> FileIdentity? {
        guard let (fd, before) = try openSuite(path) else { return nil }
        defer { Syscall.close(fd) }
        guard Int(clamping: before.st_size) == expected.count else { return nil }
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        var compared = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemFailure(call: "read", errno: errno)
            }
            if count == 0 { break }
            guard compared + count <= expected.count else { return nil }
            let start = expected.startIndex + compared
            let same = expected[start..<(start + count)].withUnsafeBytes { stored in
                buffer.withUnsafeBytes { read in
                    guard let stored = stored.baseAddress, let read = read.baseAddress else { return false }
                    return memcmp(stored, read, count) == 0
                }
            }
            guard same else { return nil }
            compared += count
        }
        guard compared == expected.count else { return nil }
        var after = stat()
        guard fstat(fd, &after) == 0, FileIdentity(after) == FileIdentity(before) else { return nil }
        return FileIdentity(before)
    }

    /// The bytes of the regular file at `path` (symbolic links not followed), and its identity
    /// when it did not change while it was read; `nil` when there is no file.
    private static func readSuite(_ path: String) throws(SystemFailure) -> (bytes: Data, identity: FileIdentity?)? {
        guard let (fd, before) = try openSuite(path) else { return nil }
        defer { Syscall.close(fd) }
        let bytes = try Syscall.readToEnd(fd, size: Int(clamping: before.st_size), as: Data.self)
        var after = stat()
        let unchanged = fstat(fd, &after) == 0 && FileIdentity(after) == FileIdentity(before)
        return (bytes, unchanged ? FileIdentity(before) : nil)
    }

    /// A value must be exactly one JSON value: the document is spliced from values' bytes.
    static func checkValue(_ value: Data, store: String, key: String) throws(KeepsakeError) {
        let range: Range<Int>
        do throws(JSONSyntaxError) {
            range = try JSONParser.withParser(value) { parser throws(JSONSyntaxError) in
                let range = try parser.skipValue()
                try parser.expectEnd()
                return range
            }
        } catch {
            throw KeepsakeError(
                .valueRefused, store: store, key: key,
                """
                a defaults suite holds JSON values; these bytes are not one JSON value \
                (store text as a JSON string)
                """, cause: error.cause)
        }
        // The document keeps the value's bytes only: whitespace around them would not be read back.
        guard range == 0..<value.count else {
            throw KeepsakeError(
                .valueRefused, store: store, key: key,
                """
                a defaults suite keeps exactly one JSON value, and these bytes have whitespace around \
                it (a trailing newline?) that would not be read back; store the value without it
                """)
        }
    }
}

extension DefaultsStore: ExclusiveUpdateStore {
    /// Reads the value under `key`, passes it to `change` and stores what it returns, all under
    /// the suite's writer lock — the `flock` on `<file>.lock` that every Keepsake writer of the
    /// suite takes, in this process or another — so that `Vault.update` on a suite never meets
    /// `conflict`: writers take turns, and each change runs once.
    ///
    /// The lock covers the whole suite, every key, not only `key`: while `change` runs, every
    /// other writer of the suite waits (up to its own ``lockTimeout``). So `change` must be short
    /// and must not write to this suite at all, under any key: a write from inside it waits for
    /// the lock this update holds, then throws `lockTimeout` (and the update with it). Reads take
    /// no lock; one from inside `change` sees the suite as it was before this update.
    ///
    /// The write is the one ``commit(_:)`` makes: the suite read under the lock (a change by any
    /// writer, Keepsake or not, is seen), the new value checked to be one JSON value, the file
    /// replaced durably (temporary file, fsync, rename, directory fsync).
    ///
    /// - Throws: What `change` throws, with nothing written and the lock released;
    ///   `KeepsakeError.Code.valueRefused` when what it returns is not one JSON value;
    ///   `KeepsakeError.Code.lockTimeout` when another writer held the lock too long; the errors
    ///   of ``commit(_:)``.
    /// - Important: If this throws, the suite file is as it was.
    public func exclusiveUpdate(
        forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data
    ) throws(KeepsakeError) {
        try validateKey(key)
        let result = try holdingLock { () throws(KeepsakeError) -> StoreWriteResult? in
            let document = try readDocument()
            let current = document.value(forKey: key)
            let value = try change(current)
            try Self.checkValue(value, store: uri, key: key)
            let write = StoreWrite(key: key, value: value, expectation: .unchanged(current))
            return try apply(WriteList(count: 1) { _ in write }, sorted: true, to: document).first
        }
        switch result {
        case .applied?: return
        case let .failed(error)?: throw error
        case .conflict?, nil:
            // Not expected: the write is checked against the very document read under the lock.
            throw KeepsakeError(
                .io, store: uri, key: key, "the suite changed under its writer lock; nothing was written")
        }
    }
}

/// A suite file sliced into its top-level members, each kept as its exact bytes. Keys are exact
/// strings: `"caf\u{E9}"` and `"cafe\u{301}"` are two members.
struct DefaultsDocument: Sendable {
    let bytes: Data
    /// Sorted by key (UTF-8 bytes), no key twice; a key is found by binary search.
    let entries: [(key: String, range: Range<Int>)]

    static let empty = DefaultsDocument(bytes: Data(), entries: [])

    func value(forKey key: String) -> Data? {
        range(forKey: key).map { Data(bytes[$0]) }
    }

    /// The value's bytes under `key`, sharing the document's storage (indices are the
    /// document's own), or `nil`.
    func slice(forKey key: String) -> Data? {
        range(forKey: key).map { bytes[$0] }
    }

    private func range(forKey key: String) -> Range<Int>? {
        let low = firstIndex(notBefore: key)
        guard low < entries.count, entries[low].key.isExactly(key) else { return nil }
        return entries[low].range
    }

    /// The index of the first entry whose key does not sort before `key` (by UTF-8 bytes).
    func firstIndex(notBefore key: String) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].key.precedesExactly(key) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The first `limit` entries `pattern` matches that sort after `key` (from the first for
    /// `nil`), in order.
    func entries(
        matching pattern: KeyPattern, after key: String?, limit: Int = .max
    ) -> ArraySlice<(key: String, range: Range<Int>)> {
        var start = firstIndex(notBefore: pattern.prefix)
        if let key {
            var past = firstIndex(notBefore: key)
            if past < entries.count, entries[past].key.isExactly(key) { past += 1 }
            start = max(start, past)
        }
        var end = start
        while end < entries.count, end - start < limit, pattern.matches(entries[end].key) { end += 1 }
        return entries[start..<end]
    }

    static func parse(_ bytes: Data) throws(JSONSyntaxError) -> DefaultsDocument {
        let entries = try SuiteIndexer.members(of: bytes)
        // Keepsake writes suites sorted: check in one pass before sorting. A key written twice
        // shows as two equal neighbours once sorted; the parse is then repeated with an index to
        // name the second occurrence where it is.
        if zip(entries, entries.dropFirst()).allSatisfy({ $0.key.precedesExactly($1.key) }) {
            return DefaultsDocument(bytes: bytes, entries: entries)
        }
        let sorted = entries.sorted { $0.key.precedesExactly($1.key) }
        if zip(sorted, sorted.dropFirst()).contains(where: { $0.key.isExactly($1.key) }) {
            _ = try SuiteIndexer.members(of: bytes, threads: 1, namingDuplicates: true)
        }
        return DefaultsDocument(bytes: bytes, entries: sorted)
    }

    /// This document with `changes` applied (a value replaces or adds a member, `nil` removes
    /// it): `{ "key": value, … }` with one member per line, keys sorted (UTF-8 bytes), values as
    /// given or as they were, byte for byte.
    func applying(_ changes: [ExactString: Data?]) -> Data {
        applying(sorted: changes.map { ($0.key.value, $0.value) }.sorted { $0.key.precedesExactly($1.key) })
    }

    /// ``applying(_:)`` with the changes as a list sorted by key (UTF-8 bytes), each key once.
    func applying<Changes: RandomAccessCollection<(key: String, value: Data?)>>(sorted changes: Changes) -> Data
    where Changes.Index == Int {
        // Built in a `Data` of the final size, each chunk appended as it is filled.
        var out = Data(capacity: bytes.count + changes.reduce(0) { $0 + ($1.value?.count ?? 0) + 64 } + 16)
        write(applying: changes) { chunk in out.append(contentsOf: chunk) }
        return out
    }

    /// Writes the document with `changes` applied (sorted by key, UTF-8 bytes, each key once)
    /// through `sink`, in chunks of at most about `chunk` bytes, merging the sorted members with
    /// the sorted changes in one pass: a commit streams the new suite into its temporary file
    /// this way, so that a million-record suite is never held twice.
    ///
    /// - Throws: What `sink` throws; then what was written is incomplete.
    func write<Changes: RandomAccessCollection<(key: String, value: Data?)>, Failure: Error>(
        applying changes: Changes, chunk: Int = 1 << 18,
        to sink: (UnsafeRawBufferPointer) throws(Failure) -> Void
    ) throws(Failure) where Changes.Index == Int {
        var writer = DocumentWriter(self, chunk: chunk)
        // Each change is read once (a run's batch builds it as it is read).
        for change in changes {
            _ = try writer.copyMembers(before: change.key, to: sink)
            guard let value = change.value else { continue }
            try value.withUnsafeBytes { buffer in
                Result { () throws(Failure) in _ = try writer.member(change.key, buffer, to: sink) }
            }.get()
        }
        try writer.finish(to: sink)
    }
}

/// Writes a ``DefaultsDocument`` with changes applied, as they come: the document's sorted
/// members merged with changed keys given in sorted order (UTF-8 bytes, each once), a member
/// per line, each value as given or as it was, byte for byte. The bytes go to a sink in chunks
/// of about `chunk` bytes; where each new value lands in them is returned, so that a migration
/// run streaming its writes into the new suite can find them again.
struct DocumentWriter {
    let document: DefaultsDocument
    let chunk: Int
    private var out: [UInt8] = []
    private var first = true
    /// The index of the first of the document's members not yet written or replaced.
    private(set) var next = 0
    /// Bytes handed to the sink so far.
    private(set) var flushed = 0

    init(_ document: DefaultsDocument, chunk: Int = 1 << 18) {
        self.document = document
        self.chunk = chunk
        out.reserveCapacity(chunk + 4096)
        out.append(UInt8(ascii: "{"))
    }

    /// Bytes written so far, handed to the sink or not.
    var count: Int { flushed + out.count }

    /// Writes the document's members that sort before `key` and are not written yet; when the
    /// document has a member `key`, returns its index and passes over it (it is replaced or
    /// removed, never written as it was).
    mutating func copyMembers<Failure: Error>(
        before key: String, to sink: (UnsafeRawBufferPointer) throws(Failure) -> Void
    ) throws(Failure) -> Int? {
        try copyMembers(while: { $0.precedesExactly(key) }, to: sink)
        let entries = document.entries
        guard next < entries.count, entries[next].key.isExactly(key) else { return nil }
        next += 1
        return next - 1
    }

    /// Writes the document's members not written yet, from the next, while `more` holds for
    /// their keys.
    private mutating func copyMembers<Failure: Error>(
        while more: (String) -> Bool, to sink: (UnsafeRawBufferPointer) throws(Failure) -> Void
    ) throws(Failure) {
        let entries = document.entries
        guard next < entries.count, more(entries[next].key) else { return }
        let base = document.bytes.startIndex
        try document.bytes.withUnsafeBytes { raw in
            Result { () throws(Failure) in
                while next < entries.count, more(entries[next].key) {
                    let range = entries[next].range
                    _ = try member(
                        entries[next].key,
                        UnsafeRawBufferPointer(rebasing: raw[(range.lowerBound - base)..<(range.upperBound - base)]),
                        to: sink)
                    next += 1
                }
            }
        }.get()
    }

    /// Writes the member `key`: `value`, and returns where the value's bytes lie in all that is
    /// written.
    mutating func member<Failure: Error>(
        _ key: String, _ value: UnsafeRawBufferPointer, to sink: (UnsafeRawBufferPointer) throws(Failure) -> Void
    ) throws(Failure) -> Range<Int> {
        out.append(contentsOf: first ? Self.firstSeparator : Self.separator)
        first = false
        CanonicalJSON.appendString(key, to: &out)
        out.append(contentsOf: Self.colon)
        let start = count
        out.append(contentsOf: value)
        let range = start..<count
        if out.count >= chunk { try flush(to: sink) }
        return range
    }

    /// Writes the members left and the closing brace, and hands everything to the sink.
    mutating func finish<Failure: Error>(to sink: (UnsafeRawBufferPointer) throws(Failure) -> Void) throws(Failure) {
        try copyMembers(while: { _ in true }, to: sink)
        out.append(contentsOf: first ? Self.emptyEnd : Self.end)
        try flush(to: sink)
    }

    /// Hands what is buffered to the sink.
    mutating func flush<Failure: Error>(to sink: (UnsafeRawBufferPointer) throws(Failure) -> Void) throws(Failure) {
        guard !out.isEmpty else { return }
        let result = out.withUnsafeBytes { buffer in Result { () throws(Failure) in try sink(buffer) } }
        flushed += out.count
        out.removeAll(keepingCapacity: true)
        try result.get()
    }

    private static let firstSeparator: [UInt8] = Array("\n  ".utf8)
    private static let separator: [UInt8] = Array(",\n  ".utf8)
    private static let colon: [UInt8] = Array(": ".utf8)
    private static let end: [UInt8] = Array("\n}\n".utf8)
    private static let emptyEnd: [UInt8] = Array("}\n".utf8)
}

/// The writes of a batch that apply, in order, as the (key, value) changes a document is
/// written with: indices into the batch rather than a copy of it.
struct AppliedWrites: RandomAccessCollection {
    let writes: WriteList
    let applied: [Int]

    var startIndex: Int { 0 }
    var endIndex: Int { applied.count }
    subscript(position: Int) -> (key: String, value: Data?) {
        let write = writes[applied[position]]
        return (write.key, write.value)
    }
}

/// A commit's writes, each read through `write`: an array's, or a migration run's batch, whose
/// writes are built one at a time as they are read (never all held as ``StoreWrite``s).
struct WriteList: RandomAccessCollection {
    let count: Int
    let write: (Int) -> StoreWrite

    var startIndex: Int { 0 }
    var endIndex: Int { count }
    subscript(position: Int) -> StoreWrite { write(position) }
}
