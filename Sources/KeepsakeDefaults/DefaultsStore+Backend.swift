internal import FileKit
import Foundation
import Keepsake

extension StoreURI.Scheme {
    /// `defaults:PATH`: a defaults-style JSON suite file (``DefaultsStore``).
    public static let defaults: Self = "defaults"
}

/// The `defaults:PATH` backend: opens a ``DefaultsStore`` on the suite file at `PATH` (created by
/// its first write).
public struct DefaultsBackend: StoreBackend {
    /// A backend for `defaults:` URIs.
    public init() {}

    public var scheme: StoreURI.Scheme { .defaults }
    public var locationName: String { "PATH" }
    public var summary: String { "a defaults-style JSON suite file, one JSON value per key" }
    public var locationIsPath: Bool { true }

    /// The store on the suite file at the URI's path.
    ///
    /// - Throws: `KeepsakeError.Code.notFound` when `StoreOpenOptions.requireExisting` is
    ///   set and the suite file does not exist.
    /// - Important: Nothing is created or written, whether this returns or throws.
    public func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        let store = DefaultsStore(path: uri.location)
        if options.requireExisting, !FileManager.default.fileExists(atPath: store.path) {
            throw KeepsakeError(
                .notFound, store: store.uri,
                """
                the suite file does not exist; nothing was read or written (a suite is created by its \
                first write)
                """)
        }
        return store
    }
}

extension DefaultsStore: ValueConstrainedStore {
    /// A suite reached through any path: its directory's device and inode and its file name
    /// (the suite file itself is replaced by a new file on every write), symbolic links
    /// resolved; the URI while the directory does not exist.
    public var identity: String {
        var location = path
        if let resolved = realpath(location, nil) {
            location = String(cString: resolved)
            free(resolved)
        }
        var info = stat()
        guard stat(FilePath.directory(of: location), &info) == 0 else { return uri }
        return "defaults:\(info.st_dev):\(info.st_ino)/" + FilePath.lastComponent(of: location)
    }

    /// `<suite>.backups` beside the suite file.
    public var defaultBackupDirectory: String? {
        var name = FilePath.lastComponent(of: path)
        if name.hasSuffix(".json"), name.count > 5 { name.removeLast(5) }
        return FilePath.directory(of: path) + "/\(name).backups"
    }

    /// Every record as a slice of the suite's bytes as read once (no copy per record).
    public func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        let document = try currentDocument()
        return document.entries.map { ($0.key, .success(document.bytes[$0.range])) }
    }

    /// Every member of the suite as parsed once, each value a slice of the suite's bytes.
    public func forEachRecord(
        _ body: (_ count: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError) {
        let document = try currentDocument()
        for entry in document.entries { body(document.entries.count, entry.key, .success(document.bytes[entry.range])) }
    }

    /// A defaults suite holds exactly one JSON value per key (text as a JSON string).
    ///
    /// - Throws: `KeepsakeError.Code.valueRefused` when `value` is not exactly one JSON value.
    public func checkCanHold(_ value: Data, forKey key: String) throws(KeepsakeError) {
        do throws(KeepsakeError) {
            try Self.checkValue(value, store: uri, key: key)
        } catch {
            throw KeepsakeError(
                .valueRefused, store: uri, key: key,
                """
                a defaults suite holds JSON values, and this value is not one JSON value, so it cannot be \
                copied here as it is; it was left where it is
                """, cause: error.cause)
        }
    }
}

extension DefaultsStore: PrefixScanningStore {
    /// The keys `pattern` matches: a binary search in the parsed suite (its keys are sorted).
    public func keys(matching pattern: KeyPattern) throws(KeepsakeError) -> [String] {
        try currentDocument().entries(matching: pattern, after: nil).map(\.key)
    }

    /// A page of the records `pattern` matches, sliced from the suite as read (a suite that did
    /// not change since the last page is not read again).
    public func records(
        matching pattern: KeyPattern, after key: String?, limit: Int
    ) throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        let document = try currentDocument()
        return document.entries(matching: pattern, after: key, limit: max(0, limit)).map {
            ($0.key, .success(document.bytes[$0.range]))
        }
    }
}

extension DefaultsStore: ObservableStore {
    /// Hints from an inotify watch on the suite's directory: `.any` whenever the suite file is
    /// replaced, written or removed (by any process). The directory is created (0700) if it
    /// does not exist yet, so that the suite's first write is seen.
    ///
    /// - Throws: `KeepsakeError` when the directory cannot be made or watched.
    public func changes() throws(KeepsakeError) -> StoreChanges {
        let directory = FilePath.directory(of: path)
        do throws(SystemFailure) {
            try Syscall.makeDirectories(directory)
        } catch {
            throw error.error(store: uri, "cannot create the suite's directory \(directory) to watch it")
        }
        let name = FilePath.lastComponent(of: path)
        return try .watching(directory, store: uri) { $0 == name }
    }
}
