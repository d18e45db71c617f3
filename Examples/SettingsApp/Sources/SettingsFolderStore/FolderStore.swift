import Foundation
import Keepsake

#if canImport(Glibc)
import Glibc
#endif

// A store of the app's own, in one file: one plain file per record under a directory, named
// `folder:DIR`. Registered with the app's `settings-migrate` (and any `StoreBackends`), every
// `migrate` command works on it — status, run, copy to and from the other stores.

extension StoreURI.Scheme {
    /// `folder:DIR`: one plain file per record (``FolderStore``).
    public static let folder: Self = "folder"
}

/// The `folder:DIR` backend: opens a ``FolderStore`` on `DIR` (created by the first write).
public struct FolderBackend: StoreBackend {
    /// A backend for `folder:` URIs.
    public init() {}

    public var scheme: StoreURI.Scheme { .folder }
    public var locationName: String { "DIR" }
    public var summary: String { "one plain file per record in a directory" }
    public var locationIsPath: Bool { true }

    public func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        let store = FolderStore(directory: uri.location)
        if options.requireExisting, !FileManager.default.fileExists(atPath: store.directory) {
            throw KeepsakeError(
                .notFound, store: store.uri, "the directory does not exist (it is created by the first write)")
        }
        return store
    }
}

/// One plain file per record under a directory: the file name is the key's UTF-8 bytes in hex
/// (so any key is a safe name), the contents the record's bytes. A write replaces the file
/// atomically (temporary file, fsync, rename); writers take an exclusive `flock` on `.lock`, so
/// a batch's expectations are checked and applied as one unit.
public struct FolderStore: RecordStore {
    /// The directory, absolute.
    public let directory: String
    public var uri: String { "folder:\(directory)" }
    public var capabilities: StoreCapabilities { [] }

    /// A store on `directory` (relative to the current directory unless absolute).
    public init(directory: String) {
        self.directory =
            directory.hasPrefix("/") ? directory : FileManager.default.currentDirectoryPath + "/" + directory
    }

    public func data(forKey key: String) throws(KeepsakeError) -> Data? {
        try validateKey(key)
        return try read(path(of: key), key: key)
    }

    public func keys() throws(KeepsakeError) -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch CocoaError.fileReadNoSuchFile {
            return []
        } catch {
            throw KeepsakeError(.io, store: uri, "cannot list the directory: \(error)")
        }
        return names.compactMap(Self.key(fromName:)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    public func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        for write in writes { try validateKey(write.key) }
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { throw failure("mkdir", key: nil) }
        let lock = open(directory + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw failure("open .lock", key: nil) }
        defer { close(lock) }
        guard flock(lock, LOCK_EX) == 0 else { throw failure("flock", key: nil) }
        // Expectations first, so that a batch that cannot apply whole applies nothing.
        var results: [StoreWriteResult] = []
        for write in writes {
            results.append(write.expects(try read(path(of: write.key), key: write.key)) ? .applied : .conflict)
        }
        for (write, result) in zip(writes, results) where result == .applied {
            let target = path(of: write.key)
            guard let value = write.value else {
                guard unlink(target) == 0 || errno == ENOENT else { throw failure("unlink", key: write.key) }
                continue
            }
            let temporary = directory + "/.tmp-" + UUID().uuidString
            let file = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard file >= 0 else { throw failure("open", key: write.key) }
            let written = value.withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
            let synced = fsync(file)
            close(file)
            guard written == value.count, synced == 0, rename(temporary, target) == 0 else {
                unlink(temporary)
                throw failure("write", key: write.key)
            }
        }
        let directoryFile = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFile >= 0 {
            fsync(directoryFile)
            close(directoryFile)
        }
        return results
    }

    private func path(of key: String) -> String {
        directory + "/" + key.utf8.map { String(format: "%02x", $0) }.joined() + ".record"
    }

    private static func key(fromName name: String) -> String? {
        guard name.hasSuffix(".record") else { return nil }
        let hex = Array(name.dropLast(".record".count).utf8)
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: hex.count, by: 2) {
            guard let byte = UInt8(String(decoding: hex[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private func read(_ path: String, key: String) throws(KeepsakeError) -> Data? {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else {
            if errno == ENOENT { return nil }
            throw failure("open", key: key)
        }
        defer { close(file) }
        var contents = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
            guard count >= 0 else { throw failure("read", key: key) }
            if count == 0 { return contents }
            contents.append(contentsOf: buffer[..<count])
        }
    }

    private func failure(_ call: String, key: String?) -> KeepsakeError {
        KeepsakeError(
            .io, store: uri, key: key, "\(call) failed in \(directory)", cause: .posix(call: call, errno: errno))
    }
}
