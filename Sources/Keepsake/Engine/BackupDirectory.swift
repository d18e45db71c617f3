import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where `migrate run --backup` and a ``Vault`` with ``Vault/Options/backup``
/// keep a record's original bytes before replacing them.
///
/// Each record is one file, `<directory>/<key>.json` (characters other than letters, digits,
/// `.`, `_` and `-` percent-encoded), holding the bytes exactly as they were stored, mode 0600
/// in a 0700 directory, fsync'd before the record is replaced. Restore one with
/// `migrate put KEY --store URI < <directory>/<key>.json`.
///
/// A backup is never overwritten: a second backup of the same key in the same directory is
/// `<key>~2.json`, then `~3`… (`~` is always percent-encoded in a key, so these names are
/// no key's). ``create(in:at:)`` makes a directory of its own for each run.
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

    /// Writes the backups of many records as one durable batch and returns, for each, its
    /// file's path or why it could not be written: every backup is written to a temporary file,
    /// the file system is flushed once, each is linked to its name (`<key>.json`, or `~2`, `~3`…
    /// when that name is taken: never over another backup), and the directory is synced once.
    /// A file under a backup's name is always complete, even if the process is killed; a crash
    /// can leave only temporary files (`.tmp-…`).
    ///
    /// - Important: Each backup that this reports written is durable when this returns; a
    ///   record whose backup failed must not be replaced (callers skip its write).
    public func saveAll(_ records: [(key: String, bytes: Data)], store: String) -> [Result<String, KeepsakeError>] {
        func failed(_ key: String, _ file: String, _ error: SystemFailure) -> Result<String, KeepsakeError> {
            .failure(
                KeepsakeError(
                    .backupFailed, store: store, key: key,
                    "cannot write the backup \(file); the record was not changed", cause: error.cause))
        }
        do throws(SystemFailure) {
            try Syscall.makeDirectories(path)
        } catch {
            return records.map { failed($0.key, path, error) }
        }
        // Temporary files under names no backup can have, written and flushed as one group.
        let fileSystem = FileSystem(temporaryPrefix: ".tmp-")
        let temporaries = records.map { _ in fileSystem.temporaryName() }
        let written = fileSystem.commitGroup(
            zip(records, temporaries).map { GroupedFile(name: $1, data: $0.bytes) }, in: path)
        var results: [Result<String, KeepsakeError>] = []
        results.reserveCapacity(records.count)
        var linked = false
        for ((record, temporary), failure) in zip(zip(records, temporaries), written) {
            let name = Self.fileName(forKey: record.key).dropLast(".json".count)
            if let failure {
                results.append(failed(record.key, path + "/" + name + ".json", failure))
                continue
            }
            var result = failed(record.key, path + "/" + name + ".json", SystemFailure(call: "link", errno: EEXIST))
            for attempt in 1...10_000 {
                let file = path + "/" + name + (attempt == 1 ? "" : "~\(attempt)") + ".json"
                do throws(SystemFailure) {
                    try Syscall.link(path + "/" + temporary, file)  // never replaces an existing name
                    result = .success(file)
                    linked = true
                    break
                } catch  where error.errno == EEXIST {
                    continue
                } catch {
                    result = failed(record.key, file, error)
                    break
                }
            }
            Syscall.unlink(path + "/" + temporary)
            results.append(result)
        }
        guard linked else { return results }
        do throws(SystemFailure) {
            try Syscall.syncDirectory(path)
        } catch {
            // The names may not be durable: report every backup failed (their records are not
            // replaced); the files stay, complete, for whoever looks.
            return zip(records, results).map { record, result in
                guard case let .success(file) = result else { return result }
                return failed(record.key, file, error)
            }
        }
        return results
    }

    /// Removes the directory if nothing was backed up into it (a run that migrated nothing).
    /// Best effort: only an empty directory is ever removed.
    public func removeIfEmpty() {
        _ = Glibc.rmdir(path)
    }
}
