internal import FileKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where `migrate run --backup` and a ``Vault`` with ``Vault/Options/backup``
/// keep a record's original bytes before replacing them.
///
/// A run's backups (``saveAll(_:store:)``) are one document, `<directory>/records.jsonl`,
/// written with one durable write before any record is replaced: a header line, then one line
/// per record with its key and its bytes exactly as they were stored. A single record's
/// backup (``save(_:forKey:store:)``, what a ``Vault`` writes) is one file,
/// `<directory>/<key>.json` (characters other than letters, digits, `.`, `_` and `-`
/// percent-encoded), holding the bytes as they were — the format every run wrote before
/// batch documents, still read. Files are mode 0600 in a 0700 directory and durable before
/// the record is replaced. ``originals(at:)`` and ``original(forKey:at:)`` read both; restore a
/// record with `migrate put KEY --store URI --from-backup <directory>`.
///
/// A backup is never overwritten: a second document in the same directory is
/// `records~2.jsonl`, a second backup of the same key `<key>~2.json`, then `~3`… (`~` is always
/// percent-encoded in a key, so these names are no key's). ``create(in:at:)`` makes a directory
/// of its own for each run.
public struct BackupDirectory: Sendable, Hashable {
    /// The directory's absolute or relative path, as given.
    public let path: String

    /// The backup directory at `path`; nothing is created until the first ``save(_:forKey:store:)``.
    public init(path: String) {
        self.path = path
    }

    /// A new directory named after `date` (UTC, `20261121T094500Z`) inside `parent`. A date
    /// outside the years 0001–9999 (a broken clock) is named after the nearest date inside.
    public static func timestamped(in parent: String, at date: Date = Date()) -> BackupDirectory {
        let seconds = date.timeIntervalSinceReferenceDate
        let clamped = seconds.isNaN ? 0 : min(max(seconds, ISO8601.earliest), ISO8601.end - 1)
        let iso: String  // 2026-11-21T09:45:00.123Z
        do throws(ISO8601.Failure) {
            iso = try ISO8601.millisecondString(from: Date(timeIntervalSinceReferenceDate: clamped))
        } catch {
            preconditionFailure("BackupDirectory: a clamped date is always in range (\(error.reason))")
        }
        let compact = iso.prefix(19).filter { $0 != "-" && $0 != ":" } + "Z"
        return BackupDirectory(path: parent + "/" + compact)
    }

    /// A new, empty directory named after `date` (see ``timestamped(in:at:)``) inside `parent`,
    /// created now and never one that exists: two runs in the same second get `…Z` and `…Z-2`,
    /// so neither overwrites the other's backups. `parent` and missing parents are created 0700.
    ///
    /// - Throws: ``KeepsakeError/Code/backupFailed`` (with the `errno`) when the directory cannot
    ///   be created.
    /// - Important: If this throws, no backup directory was created.
    public static func create(in parent: String, at date: Date = Date()) throws(KeepsakeError) -> BackupDirectory {
        let base = timestamped(in: parent, at: date).path
        do throws(SystemFailure) {
            try Syscall.makeDirectories(parent)
            for attempt in 1...10_000 {
                let path = attempt == 1 ? base : base + "-\(attempt)"
                do throws(SystemFailure) {
                    try Syscall.mkdir(path, 0o700)
                    return BackupDirectory(path: path)
                } catch  where error.errno == EEXIST {
                    continue
                }
            }
            throw SystemFailure(call: "mkdir", errno: EEXIST)
        } catch {
            throw KeepsakeError(.backupFailed, "cannot create a backup directory in \(parent)", cause: error.cause)
        }
    }

    /// The backup file name for `key`.
    public static func fileName(forKey key: String) -> String {
        var name = ""
        for byte in key.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                name.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: ".") where !name.isEmpty:
                name.append(".")
            default:
                name += String(format: "%%%02X", byte)
            }
        }
        return name + ".json"
    }

    /// Writes `bytes` as the backup of `key` and returns the file's path: `<key>.json`, or
    /// `<key>~2.json`, `~3`… when an earlier backup of the key is there (it is kept).
    ///
    /// - Important: The file is durable when this returns; if it throws, the record must not be
    ///   replaced (callers stop that record's write).
    @discardableResult
    public func save(_ bytes: Data, forKey key: String, store: String) throws(KeepsakeError) -> String {
        let name = Self.fileName(forKey: key).dropLast(".json".count)
        var file = path + "/" + name + ".json"
        do throws(SystemFailure) {
            try Syscall.makeDirectories(path)
            for attempt in 1...10_000 {
                file = path + "/" + name + (attempt == 1 ? "" : "~\(attempt)") + ".json"
                do throws(SystemFailure) {
                    try bytes.withUnsafeBytes { buffer in
                        Result { () throws(SystemFailure) in try FileSystem.live.createExclusively(file, with: buffer) }
                    }.get()
                    return file
                } catch  where error.errno == EEXIST {
                    continue
                }
            }
            throw SystemFailure(call: "link", errno: EEXIST)
        } catch {
            throw KeepsakeError(
                .backupFailed, store: store, key: key,
                "cannot write the backup \(file); the record was not changed", cause: error.cause)
        }
    }

    /// The file name of the `attempt`-th backup document in one directory: `records.jsonl`,
    /// then `records~2.jsonl`, `~3`… (a per-record backup's name always ends in `.json`).
    public static func documentName(attempt: Int) -> String {
        attempt == 1 ? "records.jsonl" : "records~\(attempt).jsonl"
    }

    /// Writes the backups of many records as one document, in one durable write, and returns
    /// for each record the document's path or why it could not be written.
    ///
    /// The document is `records.jsonl` in the directory (`records~2.jsonl`, `~3`… when that
    /// name is taken: never over another backup), mode 0600, JSON Lines: a first line
    /// `{"format":"keepsake-backup","version":1,"store":…,"records":N}`, then one line per
    /// record, `{"key":…,"text":…}` with the record's bytes as a JSON string when they are
    /// UTF-8, else `{"key":…,"base64":…}`. It is written to an unnamed (or temporary) file,
    /// fsync'd, linked to its name and the directory fsync'd: one new file and one flush for
    /// the whole batch, however many records. Under its name the document is always complete,
    /// even if the process is killed. ``originals(at:)`` and ``original(forKey:at:)`` read it
    /// back, and `migrate put KEY --from-backup PATH` restores a record from it.
    ///
    /// - Important: When this reports success the document is durable; when it fails, it fails
    ///   every record of the batch (none of them must be replaced: callers skip their writes)
    ///   and no document is left under a backup name.
    public func saveAll(_ records: [(key: String, bytes: Data)], store: String) -> [Result<String, KeepsakeError>] {
        guard !records.isEmpty else { return [] }
        var document = Data()
        document.reserveCapacity(records.reduce(128) { $0 + $1.key.utf8.count + $1.bytes.count + 32 })
        document.append(contentsOf: Array(#"{"format":"keepsake-backup","version":1,"store":"#.utf8))
        CanonicalJSON.appendString(store, to: &document)
        document.append(contentsOf: Array(",\"records\":\(records.count)}\n".utf8))
        for record in records {
            document.append(contentsOf: Array(#"{"key":"#.utf8))
            CanonicalJSON.appendString(record.key, to: &document)
            if let text = String(validating: record.bytes, as: UTF8.self) {
                document.append(contentsOf: Array(#","text":"#.utf8))
                CanonicalJSON.appendString(text, to: &document)
            } else {
                document.append(contentsOf: Array(#","base64":""#.utf8))
                document.append(record.bytes.base64EncodedData())
                document.append(UInt8(ascii: "\""))
            }
            document.append(contentsOf: Array("}\n".utf8))
        }
        var file = path + "/" + Self.documentName(attempt: 1)
        do throws(SystemFailure) {
            try Syscall.makeDirectories(path)
            for attempt in 1...10_000 {
                file = path + "/" + Self.documentName(attempt: attempt)
                do throws(SystemFailure) {
                    try document.withUnsafeBytes { buffer in
                        Result { () throws(SystemFailure) in try FileSystem.live.createExclusively(file, with: buffer) }
                    }.get()
                    return records.map { _ in .success(file) }
                } catch  where error.errno == EEXIST {
                    continue
                }
            }
            throw SystemFailure(call: "link", errno: EEXIST)
        } catch {
            return records.map { record in
                .failure(
                    KeepsakeError(
                        .backupFailed, store: store, key: record.key,
                        "cannot write the backup \(file); the record was not changed", cause: error.cause))
            }
        }
    }

    // MARK: Reading backups

    /// One record's original bytes found in a backup, and the file they were read from.
    public struct Original: Sendable, Hashable {
        /// The record's key.
        public let key: String
        /// The bytes exactly as they were stored before the record was replaced.
        public let bytes: Data
        /// The backup file: a batch document (`records.jsonl`) or a per-record file (`<key>.json`).
        public let file: String
    }

    /// Every original in the backup at `path`: a backup directory (every batch document
    /// `records*.jsonl` and every per-record file `<key>.json`, `<key>~2.json`… in it, the
    /// format earlier releases wrote and ``save(_:forKey:store:)`` still writes), or one such
    /// file. Sorted by file name, then in document order; other files in a directory are
    /// ignored.
    ///
    /// - Throws: ``KeepsakeError/Code/notFound`` when nothing is at `path`;
    ///   ``KeepsakeError/Code/invalidArgument`` when a batch document is damaged (naming the file
    ///   and line) or a file given by path is not a backup; `.io` / `.permissionDenied` with the
    ///   `errno` when a file cannot be read.
    public static func originals(at path: String) throws(KeepsakeError) -> [Original] {
        let isDirectory: Bool?
        do throws(SystemFailure) { isDirectory = try Syscall.isDirectory(path) } catch {
            throw KeepsakeError(error.code, "cannot read the backup \(path)", cause: error.cause)
        }
        guard let isDirectory else { throw KeepsakeError(.notFound, "there is no backup at \(path)") }
        guard isDirectory else {
            let name = (path as NSString).lastPathComponent
            if isDocumentName(name) { return try readDocument(path) }
            guard let key = key(fromFileName: name) else {
                throw KeepsakeError(
                    .invalidArgument, "\(path) is not a backup (a records.jsonl document or a <key>.json file)")
            }
            return [Original(key: key, bytes: try readWhole(path), file: path)]
        }
        let names: [String]
        do throws(SystemFailure) { names = try Syscall.listDirectory(path) } catch {
            throw KeepsakeError(error.code, "cannot list the backup directory \(path)", cause: error.cause)
        }
        var found: [Original] = []
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let file = path + "/" + name
            if isDocumentName(name) {
                found += try readDocument(file)
            } else if let key = key(fromFileName: name) {
                found.append(Original(key: key, bytes: try readWhole(file), file: file))
            }
        }
        return found
    }

    /// The original bytes of `key` in the backup at `path` (see ``originals(at:)``).
    ///
    /// - Throws: ``KeepsakeError/Code/notFound`` when the backup holds no original of `key`;
    ///   ``KeepsakeError/Code/invalidArgument`` when it holds more than one (the message names
    ///   the files: pass one of them); as ``originals(at:)`` otherwise.
    public static func original(forKey key: String, at path: String) throws(KeepsakeError) -> Original {
        let matches = try originals(at: path).filter { $0.key.isExactly(key) }
        guard let first = matches.first else {
            throw KeepsakeError(.notFound, key: key, "the backup \(path) holds no original of this record")
        }
        guard matches.count == 1 else {
            throw KeepsakeError(
                .invalidArgument, key: key,
                """
                the backup \(path) holds \(matches.count) originals of this record (in \
                \(matches.map(\.file).joined(separator: ", "))); pass the file to restore from
                """)
        }
        return first
    }

    /// Whether `name` is a batch document's name: `records.jsonl` or `records~<n>.jsonl`.
    static func isDocumentName(_ name: String) -> Bool {
        guard name.hasPrefix("records"), name.hasSuffix(".jsonl") else { return false }
        let middle = name.utf8.dropFirst("records".utf8.count).dropLast(".jsonl".utf8.count)
        guard let tilde = middle.first else { return true }
        return tilde == UInt8(ascii: "~") && middle.count > 1
            && middle.dropFirst().allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The key whose per-record backup file is `name` (`<key>.json` or `<key>~<n>.json`), or
    /// `nil` when no key's backup has that name.
    static func key(fromFileName name: String) -> String? {
        guard name.hasSuffix(".json") else { return nil }
        var stem = Array(name.utf8.dropLast(".json".utf8.count))
        if let tilde = stem.firstIndex(of: UInt8(ascii: "~")) {
            let digits = stem[(tilde + 1)...]
            guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else { return nil }
            stem.removeSubrange(tilde...)
        }
        var bytes: [UInt8] = []
        var index = 0
        while index < stem.count {
            if stem[index] == UInt8(ascii: "%") {
                guard index + 2 < stem.count,
                    let value = UInt8(String(decoding: stem[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                index += 3
            } else {
                bytes.append(stem[index])
                index += 1
            }
        }
        guard let key = String(validating: bytes, as: UTF8.self), !key.isEmpty,
            fileName(forKey: key) == String(decoding: stem, as: UTF8.self) + ".json"
        else { return nil }
        return key
    }

    private static func readWhole(_ file: String) throws(KeepsakeError) -> Data {
        let bytes: [UInt8]?
        do throws(SystemFailure) { bytes = try Syscall.readFile(file) } catch {
            throw KeepsakeError(error.code, "cannot read the backup \(file)", cause: error.cause)
        }
        guard let bytes else { throw KeepsakeError(.notFound, "the backup \(file) is gone") }
        return Data(bytes)
    }

    private static func readDocument(_ file: String) throws(KeepsakeError) -> [Original] {
        let bytes = try readWhole(file)
        func damaged(_ line: Int, _ reason: String) -> KeepsakeError {
            KeepsakeError(
                .invalidArgument, "the backup \(file) is damaged (line \(line): \(reason)); nothing was restored")
        }
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard lines.last?.isEmpty == true else {
            throw damaged(lines.count, "the document does not end with a newline")
        }
        func object(_ line: Int) throws(KeepsakeError) -> JSONObject {
            let value: JSONValue
            do throws(JSONSyntaxError) {
                value = try JSONParser.parse(Data(lines[line]))
            } catch {
                throw damaged(line + 1, "not JSON")
            }
            guard case let .object(object) = value else { throw damaged(line + 1, "not a JSON object") }
            return object
        }
        let header = try object(0)
        guard case .string("keepsake-backup") = header["format"] else { throw damaged(1, "not a Keepsake backup") }
        guard case .number("1") = header["version"] else {
            throw damaged(1, "a backup format version this release does not read")
        }
        guard case let .number(countText) = header["records"], let count = Int(countText),
            count == lines.count - 2
        else { throw damaged(1, "the record count does not match the document's lines") }
        var originals: [Original] = []
        originals.reserveCapacity(count)
        for line in 1..<(lines.count - 1) {
            let entry = try object(line)
            guard case let .string(key) = entry["key"], !key.isEmpty else { throw damaged(line + 1, "no key") }
            switch (entry["text"], entry["base64"]) {
            case let (.string(text)?, nil):
                originals.append(Original(key: key, bytes: Data(text.utf8), file: file))
            case let (nil, .string(encoded)?):
                guard let data = Data(base64Encoded: encoded) else { throw damaged(line + 1, "bad base64") }
                originals.append(Original(key: key, bytes: data, file: file))
            default:
                throw damaged(line + 1, "neither text nor base64")
            }
        }
        return originals
    }

    /// Removes the directory if nothing was backed up into it (a run that migrated nothing).
    /// Best effort: only an empty directory is ever removed.
    public func removeIfEmpty() {
        _ = Glibc.rmdir(path)
    }
}
