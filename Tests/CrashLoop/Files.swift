import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file operations of the crash loop, each named after the shell command it replaces.
enum Files {
    /// A file's bytes; nil if it cannot be read.
    static func bytes(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    /// Whether something is at the path (`[ -e ]`).
    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// `rm -rf PATH`.
    static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

    /// `mkdir -p PATH`.
    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Abort(message: "cannot create \(path): \(error)")
        }
    }

    /// The names in a directory, hidden ones too, sorted (`ls -A`); none if it cannot be read.
    static func names(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// The names in a directory that `ls` lists: not hidden, sorted.
    static func visibleNames(in directory: String) -> [String] {
        names(in: directory).filter { !$0.hasPrefix(".") }
    }

    /// The regular files of a directory (`find DIR -maxdepth 1 -type f`), by name.
    static func regularFiles(in directory: String) -> [String] {
        names(in: directory).filter { status(directory + "/" + $0).map(isRegular) ?? false }
    }

    /// How many entries of a directory have a name `matching` accepts
    /// (`find DIR -maxdepth 1 -name PATTERN | wc -l`); 0 if there is no directory.
    static func count(in directory: String, matching: (String) -> Bool) -> Int {
        names(in: directory).filter(matching).count
    }

    /// A path's modification time (`lstat`), to the nanosecond.
    static func modificationTime(_ path: String) throws -> timespec {
        guard let status = status(path) else {
            throw Abort(message: "cannot stat \(path): \(String(cString: strerror(errno)))")
        }
        return status.st_mtim
    }

    /// Writes a new file (or replaces one).
    static func create(_ path: String, holding bytes: [UInt8]) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw Abort(message: "cannot write \(path)")
        }
    }

    /// `cp SOURCE DESTINATION` (`preserving`: `cp -p`): an existing destination is truncated and
    /// written in place (its inode, and any hard link to it, kept).
    static func copyFile(_ source: String, to destination: String, preserving: Bool = false) throws {
        guard let bytes = bytes(source), let from = status(source) else {
            throw Abort(message: "cannot read \(source)")
        }
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_TRUNC, from.st_mode & 0o7777)
        guard descriptor >= 0 else { throw Abort(message: "cannot write \(destination)") }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Abort(message: "cannot write \(destination)") }
            written += count
        }
        if preserving {
            fchmod(descriptor, from.st_mode & 0o7777)
            var times = [from.st_atim, from.st_mtim]
            futimens(descriptor, &times)
        }
    }

    /// `cp -a SOURCE DESTINATION` of a directory: DESTINATION, created if missing, gets every
    /// entry of SOURCE (regular files, directories and symbolic links, recursively), then SOURCE's
    /// mode and times. With an existing DESTINATION this is `cp -a SOURCE/. DESTINATION/`.
    static func copyTree(_ source: String, to destination: String) throws {
        guard let from = status(source) else { throw Abort(message: "cannot read \(source)") }
        if !exists(destination) { try makeDirectory(destination) }
        for name in names(in: source) {
            let (entry, target) = (source + "/" + name, destination + "/" + name)
            guard let status = status(entry) else { continue }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                try copyTree(entry, to: target)
            case S_IFLNK:
                let link = try FileManager.default.destinationOfSymbolicLink(atPath: entry)
                remove(target)
                try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: link)
            default:
                try copyFile(entry, to: target, preserving: true)
            }
        }
        chmod(destination, from.st_mode & 0o7777)
        var times = [from.st_atim, from.st_mtim]
        utimensat(AT_FDCWD, destination, &times, 0)
    }

    /// `lstat(2)`; nil if it fails.
    private static func status(_ path: String) -> stat? {
        var result = stat()
        return lstat(path, &result) == 0 ? result : nil
    }

    private static func isRegular(_ status: stat) -> Bool { status.st_mode & S_IFMT == S_IFREG }
}

extension timespec {
    /// The same instant.
    func equals(_ other: timespec) -> Bool { tv_sec == other.tv_sec && tv_nsec == other.tv_nsec }
}
