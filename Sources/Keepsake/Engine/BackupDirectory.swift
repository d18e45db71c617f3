import Foundation

/// Where `migrate run --backup` and a ``Vault`` with ``Vault/Options/backup``
/// keep a record's original bytes before replacing them.
///
/// Each record is one file, `<directory>/<key>.json` (characters other than letters, digits,
/// `.`, `_` and `-` percent-encoded), holding the bytes exactly as they were stored, mode 0600
/// in a 0700 directory, fsync'd before the record is replaced. Restore one with
/// `migrate put KEY --store URI < <directory>/<key>.json`.
public struct BackupDirectory: Sendable, Hashable {
    public let path: String

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

    /// Writes `bytes` as the backup of `key` and returns the file's path.
    ///
    /// - Important: The file is durable when this returns; if it throws, the record must not be
    ///   replaced (callers stop that record's write).
    @discardableResult
    public func save(_ bytes: Data, forKey key: String, store: String) throws(KeepsakeError) -> String {
        let file = path + "/" + Self.fileName(forKey: key)
        do throws(SystemFailure) {
            try Syscall.makeDirectories(path)
            try FileSystem.live.replace(Self.fileName(forKey: key), in: path, with: bytes)
        } catch {
            throw KeepsakeError(.backupFailed, store: store, key: key,
                                "cannot write the backup \(file); the record was not changed", cause: error.cause)
        }
        return file
    }
}
