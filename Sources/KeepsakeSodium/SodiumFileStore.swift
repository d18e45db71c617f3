internal import FileKit
import Foundation
import Keepsake
internal import SodiumKit
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A store that keeps each record encrypted at rest in its own file, with libsodium.
///
/// ```swift
/// // Once: a new store and a new key file (0600, 32 random bytes).
/// let store = try SodiumFileStore.create(directory: "/var/lib/myapp/records",
///                                        key: .keyFile(path: "/etc/myapp/records.key"))
/// // Afterwards:
/// let store = try SodiumFileStore(directory: "/var/lib/myapp/records",
///                                 key: .keyFile(path: "/etc/myapp/records.key"))
/// try Vault(store: store).save(person, in: Person.chain)
/// ```
///
/// ## Layout
/// The directory (created 0700) holds `keepsake.header`, `keepsake.lock`, and one file per
/// record named by a keyed BLAKE2b hash of its key (`<64 hex digits>.ksr`), all 0600. Each
/// record is sealed with XChaCha20-Poly1305 under a fresh random nonce; the associated data
/// binds the format version, the store id and the record's name hash, so a file that was
/// altered, truncated, renamed to another record or copied from another store fails to open
/// with `KeepsakeError.Code.corruptRecord`. The record key travels inside the ciphertext, so
/// ``keys()`` lists records without names leaking. `docs/FORMAT.md` specifies the format.
///
/// ## Keys
/// Records are encrypted under a random *data key*, which the header keeps wrapped by the
/// *master key* (a key file, a passphrase through Argon2id, or a ``MasterKeyProvider``). A
/// wrong master key is refused by the header's key check with `KeepsakeError.Code.wrongKey`
/// before any record is read. Changing the master key
/// (``changeMasterKey(to:passphraseLimits:)``) rewrites only the header, atomically, so an
/// interruption leaves a store that opens with the old key or the new one, every record intact.
///
/// ## Durability and concurrency
/// Every write goes to a 0600 temporary file (named `.tmp-` and random digits, nothing about
/// the record), which is made durable before it is renamed into place, and the directory is
/// fsync'd after; the previous file is kept under a rollback name until then, so a failed write
/// leaves the previous record. A batch (``commit(_:)``) does this for all its records with one
/// flush of the file system and one directory sync. Writers
/// hold an exclusive `flock` on `keepsake.lock`; readers take no lock and see a whole old or a
/// whole new file. `Vault.update` reads, changes and writes its record under that lock
/// (``exclusiveUpdate(forKey:_:)``): writers of the store take turns. Temporary files left by a
/// crash are removed when the store is opened (if no writer holds the lock) and before every
/// write.
///
/// No key, passphrase or record value appears in a file name, an error or a log. Errors name
/// the store and, for calls about one record, the record key the caller passed (in
/// `KeepsakeError.key`); errors about a file found on disk name its hashed file name.
public final class SodiumFileStore: RecordStore, ExclusiveUpdateStore {
    /// The store directory, absolute.
    public let directory: String
    /// `file:<directory>`.
    public let uri: String
    /// Records are encrypted at rest; files are app data, wiped by a reinstall.
    public var capabilities: StoreCapabilities { [.encryptedAtRest] }
    /// How long a write waits for another process holding the store's lock.
    public let lockTimeout: Duration
    /// The store id from the header, in hex: bound into every record.
    public var identifier: String { Hex.encode(storeID) }

    /// The version of the libsodium this process uses, e.g. `1.0.18`.
    public static var libraryVersion: String { Sodium.versionString }

    let storeID: [UInt8]
    /// The data keys as last read from the header, the header file's identity then, and the
    /// master key's subkeys (to unwrap a header another process rewrote).
    let keyState: Mutex<KeyState>
    let fileSystem: FileSystem
    let random: RandomSource
    /// What unlocked reads saw of record files, so that a batch can check `.unchanged`
    /// expectations by the file's identity instead of reading and decrypting it again.
    let seen: SeenRecords

    var headerPath: String { directory + "/" + Format.headerFileName }
    var lockPath: String { directory + "/" + Format.lockFileName }

    // MARK: Opening

    /// Opens the existing store in `directory` with the master key from `key`.
    ///
    /// The header is read and its checksum and key check verified before anything else; then
    /// temporary files a crashed writer left are removed, if no writer holds the lock.
    ///
    /// - Parameters:
    ///   - directory: The store directory (relative paths are taken from the current directory).
    ///   - key: Where the master key comes from; it must be the kind the store was created
    ///     with (a key file or provider for a key-protected store, a passphrase for a
    ///     passphrase-protected one).
    ///   - lockTimeout: How long a write waits for another writer.
    /// - Throws: `KeepsakeError` naming the store:
    ///   `KeepsakeError.Code.wrongKey` when the key or passphrase does not open the store
    ///   (the message names the source tried); `KeepsakeError.Code.unavailable` when there is
    ///   no directory or no header; `KeepsakeError.Code.corruptStore` when the header is
    ///   damaged, altered or of another format version; `.io` / `.permissionDenied` with the
    ///   `errno`; `.invalidArgument` for a key file that does not hold 32 bytes.
    /// - Important: Opening never writes a record or the header; it only removes leftover
    ///   temporary files.
    public convenience init(directory: String, key: MasterKeySource, lockTimeout: Duration = .seconds(10))
        throws(KeepsakeError)
    {
        try self.init(directory: directory, key: key, lockTimeout: lockTimeout, fileSystem: .live, random: .system)
    }

    convenience init(
        directory: String, key: MasterKeySource, lockTimeout: Duration, fileSystem: FileSystem, random: RandomSource
    ) throws(KeepsakeError) {
        let directory = Self.absolute(directory)
        let uri = Self.uri(directory)
        let (header, identity) = try Self.readHeaderWithIdentity(directory: directory, uri: uri)
        let opened: (keys: KeySet, master: MasterSubkeys, others: [MasterSubkeys])
        do throws(KeepsakeError) {
            let masters = try key.existingKeys(for: header).map(MasterSubkeys.init(masterKey:))
            opened = try Self.unwrap(header, masters: masters, source: key.description, uri: uri)
        } catch {
            throw Self.locate(error, uri)
        }
        self.init(
            directory: directory, storeID: header.storeID,
            keyState: KeyState(keys: opened.keys, header: identity, master: opened.master, otherMasters: opened.others),
            lockTimeout: lockTimeout, fileSystem: fileSystem, random: random)
        cleanLeftoversIfUnlocked()
    }

    /// A store over a format-1 data key with no master key known (tests).
    convenience init(
        directory: String, storeID: [UInt8], dataKey: SecureBytes, lockTimeout: Duration,
        fileSystem: FileSystem, random: RandomSource
    ) {
        self.init(
            directory: directory, storeID: storeID,
            keyState: KeyState(keys: KeySet(formatOneDataKey: dataKey), header: nil, master: nil),
            lockTimeout: lockTimeout, fileSystem: fileSystem, random: random)
    }

    init(
        directory: String, storeID: [UInt8], keyState: KeyState, lockTimeout: Duration,
        fileSystem: FileSystem, random: RandomSource
    ) {
        self.directory = directory
        self.uri = Self.uri(directory)
        self.storeID = storeID
        self.keyState = Mutex(keyState)
        self.lockTimeout = lockTimeout
        self.fileSystem = fileSystem
        self.random = random
        self.seen = SeenRecords()
    }

    // MARK: Creating

    /// Creates a new, empty store in `directory` protected by `key`, and opens it.
    ///
    /// The directory and missing parents are created with mode 0700 (an existing directory is
    /// used as it is, never chmod'ed). A new random store id and data key are made, and the
    /// header is written durably. With ``MasterKeySource/keyFile(path:)``, the key file is
    /// created (0600, 32 random bytes) if nothing is at its path, else the existing one is used.
    ///
    /// ```swift
    /// let store = try SodiumFileStore.create(
    ///     directory: dir, key: .passphrase(passphrase, origin: "prompt"), passphraseLimits: .moderate)
    /// ```
    ///
    /// - Parameters:
    ///   - directory: Where the store goes; it must not hold a store already.
    ///   - key: The master key source.
    ///   - passphraseLimits: Argon2id cost, for a passphrase (ignored otherwise).
    ///   - lockTimeout: How long a write waits for another writer.
    /// - Throws: `KeepsakeError.Code.invalidArgument` when the directory already holds a store
    ///   or record files, or for an empty passphrase; `.io` / `.permissionDenied` with the
    ///   `errno`; `.lockTimeout`.
    /// - Important: If this throws, no header was written (a key file or keyring item it created
    ///   may remain, it protects nothing yet); running it again is safe.
    public static func create(
        directory: String, key: MasterKeySource, passphraseLimits: PassphraseLimits = .moderate,
        lockTimeout: Duration = .seconds(10)
    ) throws(KeepsakeError) -> SodiumFileStore {
        try create(
            directory: directory, key: key, passphraseLimits: passphraseLimits, lockTimeout: lockTimeout,
            fileSystem: .live, random: .system)
    }

    static func create(
        directory: String, key: MasterKeySource, passphraseLimits: PassphraseLimits, lockTimeout: Duration,
        fileSystem: FileSystem, random: RandomSource
    ) throws(KeepsakeError) -> SodiumFileStore {
        let directory = absolute(directory)
        let uri = uri(directory)
        do throws(SystemFailure) {
            try Syscall.makeDirectories(directory)
        } catch {
            throw KeepsakeError(error.code, store: uri, "cannot create the store directory", cause: error.cause)
        }
        let lock = try acquireLock(directory + "/" + Format.lockFileName, timeout: lockTimeout, uri: uri)
        defer { lock.unlock() }
        // A create killed while writing the header may have left its temporary file.
        fileSystem.removeLeftovers(in: directory)
        let names: [String]
        do throws(SystemFailure) {
            names = try Syscall.listDirectory(directory)
        } catch {
            throw KeepsakeError(error.code, store: uri, "cannot list the store directory", cause: error.cause)
        }
        if names.contains(Format.headerFileName) {
            throw KeepsakeError(
                .invalidArgument, store: uri, "the directory already holds a Keepsake store; open it instead")
        }
        if names.contains(where: isRecordFileName) {
            throw KeepsakeError(
                .invalidArgument, store: uri,
                """
                the directory holds record files but no store header; it was left as it is — \
                create the store in an empty directory
                """)
        }
        let material: MasterKeyMaterial
        let storeID: [UInt8]
        do throws(KeepsakeError) {
            if case .provider = key {
                // A provider may keep one key per store (the keyring), so it is told the new id.
                storeID = random.bytes(Format.storeIDBytes)
                material = try key.newMaterial(
                    limits: passphraseLimits, random: random, fileSystem: fileSystem,
                    storeID: storeID)
            } else {
                // The order the test vectors record: a passphrase's salt, then the store id.
                material = try key.newMaterial(
                    limits: passphraseLimits, random: random, fileSystem: fileSystem,
                    storeID: [])
                storeID = random.bytes(Format.storeIDBytes)
            }
        } catch {
            throw locate(error, uri)
        }
        let dataKey = random.secret(Format.keyBytes)
        let header = StoreHeader.seal(
            keyKind: material.kind, storeID: storeID, salt: material.salt, opsLimit: material.opsLimit,
            memLimit: material.memLimit, keyGeneration: 1, wrapNonce: random.bytes(Sodium.aeadNonceBytes),
            masterKey: material.key, dataKey: dataKey)
        do throws(SystemFailure) {
            try fileSystem.replace(Format.headerFileName, in: directory, with: Data(header.encoded))
        } catch {
            throw KeepsakeError(
                error.code, store: uri, "cannot write the store header; no store was created",
                cause: error.cause)
        }
        Log.sodium.debug("encrypted store created", metadata: ["store": "\(uri)", "masterKey": "\(key)"])
        // No header identity yet: the first write's check reads the header once.
        return SodiumFileStore(
            directory: directory, storeID: storeID,
            keyState: KeyState(
                keys: KeySet(formatOneDataKey: dataKey), header: nil,
                master: MasterSubkeys(masterKey: material.key)),
            lockTimeout: lockTimeout, fileSystem: fileSystem, random: random)
    }

    // MARK: RecordStore

    /// The decrypted value stored under `key`, or `nil` when the store holds no file for it.
    ///
    /// - Throws: `KeepsakeError.Code.corruptRecord` (cause `Cause.library`) when the file is
    ///   not an authentic record of this store under this key — altered, truncated, renamed,
    ///   copied from another store; `KeepsakeError.Code.unavailable` when the store directory
    ///   is gone; `.io` with the `errno`.
    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        let name = subkeys.fileName(of: key)
        let readAt = SeenRecords.now()
        guard let (bytes, info) = try readRecordFile(name, key: key) else {
            try checkDirectoryExists(key: key)
            return nil
        }
        let opened: (recordKey: String, value: Data)
        do throws(FormatFailure) {
            opened = try openRecord(bytes, nameHash: subkeys.nameHash(of: key))
        } catch {
            throw KeepsakeError(
                error.kind == .unknownGeneration ? .wrongKey : .corruptRecord, store: uri, key: key,
                "the record's file \(name) cannot be opened\(error.generationNote); it was left as it is",
                cause: error.cause)
        }
        guard Array(opened.recordKey.utf8) == Array(key.utf8) else {
            throw KeepsakeError(
                .corruptRecord, store: uri, key: key, "the record's file \(name) holds another record",
                cause: .library(domain: "KeepsakeSodium.format", code: 1, message: "record key mismatch"))
        }
        seen.record(name, identity: FileIdentity(info), readAt: readAt, value: opened.value)
        return opened.value
    }

    /// Every record key that can be read, sorted; every record file is decrypted to recover
    /// its key.
    ///
    /// A record file that cannot be read or opened is not listed here — one bad file does not
    /// hide the others — and it is never skipped silently elsewhere: ``allRecords()`` (what
    /// `migrate status` and `run` use) reports it under its file name, and
    /// ``data(forKey:)`` for its key throws `KeepsakeError.Code.corruptRecord`.
    ///
    /// - Throws: Only when the store directory cannot be listed (`.unavailable` when it is gone).
    public func keys() throws(KeepsakeError) -> [String] {
        try allData().map(\.key)
    }

    /// Every record that can be read, with its decrypted value, sorted by key. See ``keys()``
    /// for record files that cannot be read.
    ///
    /// - Throws: As ``keys()``.
    public func allData() throws(KeepsakeError) -> [(key: String, data: Data)] {
        try allRecords().compactMap { entry in
            guard case let .success(data) = entry.result else { return nil }
            return (entry.key, data)
        }
    }

    /// Every record with its decrypted value or, for a record file that cannot be read or
    /// opened (damaged, truncated, planted, from another store, unreadable to this user), the
    /// error — listed under the file's name (`<64 hex digits>.ksr`), since its key is inside
    /// the ciphertext. Sorted by key.
    ///
    /// - Throws: Only when the store directory cannot be listed (`.unavailable` when it is gone).
    public func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        let names: [String]
        do throws(SystemFailure) {
            names = try Syscall.listDirectory(directory)
        } catch {
            throw storeError(error, "cannot list the store directory")
        }
        var records: [(key: String, result: Result<Data, KeepsakeError>)] = []
        var observed: [String: SeenRecords.Entry] = [:]
        for name in names where Self.isRecordFileName(name) {
            let read: (bytes: [UInt8], info: stat)?
            let readAt = SeenRecords.now()
            do throws(SystemFailure) {
                read = try Syscall.readFileWithInfo(directory + "/" + name)
            } catch  where error.errno == ENOTDIR {
                throw storeError(error, "cannot read the store directory")  // the directory was replaced
            } catch {
                records.append(
                    (
                        name,
                        .failure(
                            KeepsakeError(
                                error.code, store: uri, "cannot read the record file \(name); it was left as it is",
                                cause: error.cause))
                    ))
                continue
            }
            guard let (bytes, info) = read else { continue }  // deleted meanwhile
            let nameHash = Hex.decode(String(name.dropLast(Format.recordSuffix.count)))!
            do throws(FormatFailure) {
                let opened = try openRecord(bytes, nameHash: nameHash)
                records.append((opened.recordKey, .success(opened.value)))
                observed[name] = seen.entry(identity: FileIdentity(info), readAt: readAt, value: opened.value)
            } catch {
                records.append(
                    (
                        name,
                        .failure(
                            KeepsakeError(
                                error.kind == .unknownGeneration ? .wrongKey : .corruptRecord, store: uri,
                                "the record file \(name) cannot be opened\(error.generationNote); it was left as it is",
                                cause: error.cause))
                    ))
            }
        }
        seen.replaceAll(with: observed)
        return records.sorted { $0.key.precedesExactly($1.key) }
    }

    /// Applies `writes` in order under the store's lock, as one durable group: every new record
    /// file is written to a temporary file, the file system is flushed once, each is renamed
    /// into place (a removal renamed away), and the directory is synced once — instead of two
    /// flushes per record. Every record file is whole at every moment: its previous bytes or its
    /// new ones, even if the process is killed (see the crash loop in `scripts/crash-loop`). A
    /// key written twice in one batch splits it in two groups, so the second write sees the first.
    ///
    /// A write whose expectation does not hold is `StoreWriteResult.conflict`. A write that
    /// fails is `StoreWriteResult.failed(_:)` and leaves that record's previous file in place;
    /// the other writes are still made. A failed flush or directory sync fails every write of
    /// its group, and each of those records keeps its previous file. `CommitProgress` hears of
    /// each record as its new file is written, and of each group once it is durable.
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` for an empty key or one with NUL (before
    ///   anything is written); `KeepsakeError.Code.lockTimeout` when another writer holds the
    ///   lock too long; `.io` when the lock cannot be taken.
    /// - Important: If this throws, nothing was written.
    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try validateKey(write.key) }
        try checkDirectoryExists(key: nil)
        let lock = try Self.acquireLock(lockPath, timeout: lockTimeout, uri: uri)
        defer { lock.unlock() }
        return apply(writes, keys: try currentKeys())
    }

    /// ``commit(_:)``'s work once its keys are checked and the lock is taken: the leftovers
    /// removed, then `writes` applied in groups, sealed under `keys` (the header's as read
    /// under this lock). Call with the lock held.
    func apply(_ writes: [StoreWrite], keys: KeySet) -> [StoreWriteResult] {
        let subkeys = keys.writing
        let generation = keys.writtenGeneration
        var existing = cleanLeftovers()
        var results = [StoreWriteResult](repeating: .applied, count: writes.count)
        var group: [(index: Int, file: GroupedFile)] = []
        var names = Set<String>()
        var nonces = NonceBatch(random: random, count: writes.count { $0.value != nil })
        func flush() {
            // Progress as each record's new file is written, then once the group is durable.
            let failures = fileSystem.commitGroup(group.map(\.file), in: directory, existing: existing) { member in
                CommitProgress.report(group[member].index + 1, of: writes.count)
            }
            for (member, failure) in zip(group, failures) {
                // The file changed, or may have: what a read saw of it no longer tells.
                seen.forget(member.file.name)
                guard let failure else {
                    if member.file.data == nil {
                        existing?.remove(member.file.name)
                    } else {
                        existing?.insert(member.file.name)
                    }
                    continue
                }
                let write = writes[member.index]
                results[member.index] = .failed(
                    KeepsakeError(
                        failure.code, store: uri, key: write.key,
                        """
                        cannot \(write.value == nil ? "remove" : "write") the record's file; the previous \
                        record was left in place
                        """, cause: failure.cause))
            }
            if let last = group.last { CommitProgress.report(last.index + 1, of: writes.count) }
            group.removeAll()
            names.removeAll()
        }
        for (index, write) in writes.enumerated() {
            let name = subkeys.fileName(of: write.key)
            if names.contains(name) { flush() }
            if case let .unchanged(expected) = write.expectation {
                let holds: Bool
                do throws(KeepsakeError) {
                    holds = try holdsUnchanged(expected, name: name, key: write.key)
                } catch {
                    results[index] = .failed(error)
                    continue
                }
                guard holds else {
                    results[index] = .conflict
                    continue
                }
            }
            let file = write.value.map { value in
                RecordFile.seal(
                    value: value, recordKey: write.key, storeID: storeID, keys: subkeys, generation: generation,
                    nonce: nonces.next())
            }
            group.append((index, GroupedFile(name: name, data: file)))
            names.insert(name)
        }
        flush()
        return results
    }

    // MARK: ExclusiveUpdateStore

    /// Reads the record under `key`, passes it to `change` and stores what it returns, all under
    /// the store's writer lock — the `flock` on `keepsake.lock` that every writer of the store
    /// takes, in this process or another — so that `Vault.update` on this store never meets
    /// `conflict`: writers take turns, and each change runs once.
    ///
    /// The lock covers the whole store, every record, not only `key`: while `change` runs, every
    /// other writer of the store waits (up to its own ``lockTimeout``), and so does
    /// ``changeMasterKey(to:passphraseLimits:)``. So `change` must be short and must not write
    /// to this store at all, under any key: a write from inside it waits for the lock this update
    /// holds, then throws `lockTimeout` (and the update with it). Reads take no lock; one from
    /// inside `change` sees the record as it was before this update.
    ///
    /// The record is read and opened as ``data(forKey:)`` does, with the lock held; the write is
    /// the one ``commit(_:)`` makes, the new file sealed under a fresh nonce, made durable and
    /// renamed into place, its expectation (the bytes `change` was given) checked again.
    ///
    /// - Throws: What `change` throws, with nothing written and the lock released; what
    ///   ``data(forKey:)`` throws for a record that cannot be read (`corruptRecord`, …), before
    ///   `change` runs; `lockTimeout`; the write's own failure (the previous record left in
    ///   place).
    /// - Important: If this throws, the record's file is as it was.
    public func exclusiveUpdate(
        forKey key: String, _ change: (Data?) throws(KeepsakeError) -> Data
    ) throws(KeepsakeError) {
        try validateKey(key)
        try checkDirectoryExists(key: key)
        let lock = try Self.acquireLock(lockPath, timeout: lockTimeout, uri: uri)
        defer { lock.unlock() }
        let keys = try currentKeys()
        let current = try data(forKey: key)
        let value = try change(current)
        switch apply([StoreWrite(key: key, value: value, expectation: .unchanged(current))], keys: keys).first {
        case .applied?: return
        case let .failed(error)?: throw error
        case .conflict?, nil:
            // Not expected: no Keepsake writer can change the record while the lock is held.
            throw KeepsakeError(
                .io, store: uri, key: key,
                "the record's file changed under the store's writer lock; nothing was written")
        }
    }

    // MARK: Helpers

    static func absolute(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return (absolute as NSString).standardizingPath
    }

    static func uri(_ directory: String) -> String { "file:" + directory }

    static func isRecordFileName(_ name: String) -> Bool {
        guard name.hasSuffix(Format.recordSuffix) else { return false }
        let stem = name.utf8.dropLast(Format.recordSuffix.utf8.count)
        return stem.count == 2 * Format.nameHashBytes
            && stem.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }

    static func locate(_ error: KeepsakeError, _ uri: String) -> KeepsakeError {
        var copy = error
        if copy.store == nil { copy.store = uri }
        return copy
    }

    static func acquireLock(_ path: String, timeout: Duration, uri: String) throws(KeepsakeError) -> StoreLock {
        let acquired: StoreLock?
        do throws(SystemFailure) {
            acquired = try StoreLock.acquire(path, timeout: timeout)
        } catch {
            throw KeepsakeError(error.code, store: uri, "cannot open the store's lock file", cause: error.cause)
        }
        guard let lock = acquired else {
            throw KeepsakeError(
                .lockTimeout, store: uri,
                """
                another process held the store's lock for more than \(timeout); is another migrate or app \
                writing this store?
                """)
        }
        return lock
    }

    private func storeError(_ failure: SystemFailure, key: String? = nil, _ message: String) -> KeepsakeError {
        if failure.errno == ENOENT || failure.errno == ENOTDIR {
            return KeepsakeError(
                .unavailable, store: uri, key: key, "the store directory is gone", cause: failure.cause)
        }
        return KeepsakeError(failure.code, store: uri, key: key, message, cause: failure.cause)
    }

    private func checkDirectoryExists(key: String?) throws(KeepsakeError) {
        do throws(SystemFailure) {
            guard try Syscall.isDirectory(directory) == true else {
                throw SystemFailure(call: "stat", errno: ENOTDIR)
            }
        } catch {
            throw storeError(error, key: key, "cannot read the store directory")
        }
    }

    private func readRecordFile(_ name: String, key: String?) throws(KeepsakeError) -> ([UInt8], stat)? {
        do throws(SystemFailure) {
            return try Syscall.readFileWithInfo(directory + "/" + name)
        } catch {
            if let fileType = error.fileType {
                // Inside the store's own directory, something else where a record file belongs
                // is damage to the store, not a bad argument of the caller's.
                throw KeepsakeError(
                    .corruptStore, store: uri, key: key,
                    "the store holds \(fileType) where the record file \(name) belongs; it was left as it is",
                    cause: error.cause)
            }
            throw storeError(
                error, key: key, key == nil ? "cannot read the record file \(name)" : "cannot read the record's file")
        }
    }

    /// Whether the record file `name` holds `expected` (`nil`: no file), checked under the lock.
    ///
    /// When an earlier unlocked read of this store saw the file with the identity it has now
    /// (one `lstat`: device, inode, size, mtime and ctime to the nanosecond) and that version
    /// was settled when read (``SeenRecords``), the value it held then is the value it holds
    /// now, and `expected` is compared with it by keyed hash. Otherwise the file is read and
    /// opened again, as ``data(forKey:)`` does.
    private func holdsUnchanged(_ expected: Data?, name: String, key: String) throws(KeepsakeError) -> Bool {
        switch seen.check(directory + "/" + name, name: name, against: expected) {
        case .holds: return true
        case .differs: return false
        case .unknown: return try data(forKey: key) == expected
        }
    }

    /// Removes temporary and rollback files a crashed writer left, and returns the other names
    /// in the directory (`nil` when it cannot be listed). Call with the lock held.
    /// Best effort: a leftover that cannot be removed is harmless and is tried again next time.
    @discardableResult
    func cleanLeftovers() -> Set<String>? {
        let names: [String]
        do throws(SystemFailure) {
            names = try Syscall.listDirectory(directory)
        } catch {
            return nil  // the caller's own reads and writes report an unreadable directory
        }
        var kept = Set<String>(minimumCapacity: names.count)
        for name in names {
            if name.hasPrefix(Format.temporaryPrefix) {
                Syscall.unlink(directory + "/" + name)
            } else {
                kept.insert(name)
            }
        }
        return kept
    }

    private func cleanLeftoversIfUnlocked() {
        let acquired: StoreLock?
        do throws(SystemFailure) {
            acquired = try StoreLock.acquire(lockPath, timeout: .zero)
        } catch {
            return  // a read-only store can still be read; its leftovers wait for a writer
        }
        guard let lock = acquired else { return }  // a writer is at work; it cleans up itself
        defer { lock.unlock() }
        cleanLeftovers()
    }
}
