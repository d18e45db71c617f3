internal import FileKit
import Foundation
import Keepsake
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The last parsed version of a suite file, reused while the file is provably the same.
///
/// A file is known by its `FileIdentity`. That alone is not proof: a file system stamps times
/// with a coarse clock (a few milliseconds, up to seconds on some), and a replacement can reuse
/// the freed inode number and have the same size, so two versions written within one tick can
/// look identical. Hence two ways to reuse the parse:
///
/// - **By identity alone** (one `lstat`), only once the version was settled when it was read
///   (`FileIdentity.isSettled(changed:readAt:)`: its status-change time, in whole seconds, more
///   than 2 s before the second it was read in — so it was at least 2 s old, and every version
///   at least 3 s old qualifies). Any later change — a write in place or a new file renamed over
///   it — gets a status-change time after that moment, so a version with the same identity is
///   the same version.
/// - **By content** for a version changed recently: the file is read and its bytes compared
///   with the cached ones; the parse is reused only when they are equal.
///
/// Everything else is read and parsed again.
final class SuiteCache: Sendable {
    private struct Entry {
        var identity: FileIdentity
        /// `CLOCK_REALTIME` seconds just before the bytes were read.
        var readAt: timespec
        var document: DefaultsDocument
        /// Which parse this is: a new one for every document cached.
        var generation: Int
    }

    private let generations = Atomic<Int>(0)

    private let entry = Mutex<Entry?>(nil)

    /// The cached document when the file at `path` has the cached identity and that version is
    /// settled; `nil` when the file must be read.
    func settledDocument(at path: String) -> DefaultsDocument? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let identity = FileIdentity(info)
        return entry.withLock { entry -> DefaultsDocument? in
            guard let cached = entry, cached.identity == identity,
                FileIdentity.isSettled(changed: identity.changed, readAt: cached.readAt)
            else { return nil }
            return cached.document
        }
    }

    /// The document for `bytes`, read at `readAt` from a file of `identity`: the cached parse
    /// when the bytes are the cached ones, else `parse(bytes)`, which is then cached.
    func document(
        for bytes: Data, identity: FileIdentity?, readAt: timespec,
        parse: (Data) throws(JSONSyntaxError) -> DefaultsDocument
    ) throws(JSONSyntaxError) -> DefaultsDocument {
        let reused = entry.withLock { entry -> DefaultsDocument? in
            guard var cached = entry, cached.document.bytes == bytes else { return nil }
            if let identity {
                cached.identity = identity
                cached.readAt = readAt
                entry = cached
            } else {
                entry = nil
            }
            return cached.document
        }
        if let reused { return reused }
        let document = try parse(bytes)
        entry.withLock { entry in
            let generation = generations.add(1, ordering: .relaxed).newValue
            entry = identity.map { Entry(identity: $0, readAt: readAt, document: document, generation: generation) }
        }
        return document
    }

    /// The cached document and which parse it is, whatever the file holds now: for a reader
    /// that compares the file with it (``confirm(generation:identity:readAt:)``) rather than
    /// reading a second copy.
    func cached() -> (document: DefaultsDocument, generation: Int)? {
        entry.withLock { entry in entry.map { ($0.document, $0.generation) } }
    }

    /// Records that the file, of `identity` and read at `readAt`, holds exactly the bytes of the
    /// cached parse `generation` (compared by the caller); nothing when another parse has been
    /// cached since.
    func confirm(generation: Int, identity: FileIdentity, readAt: timespec) {
        entry.withLock { entry in
            guard var cached = entry, cached.generation == generation else { return }
            cached.identity = identity
            cached.readAt = readAt
            entry = cached
        }
    }

    /// Forgets the cached version (the file is gone or unreadable).
    func clear() { entry.withLock { $0 = nil } }

    /// `CLOCK_REALTIME` now: the clock file systems stamp times with.
    static func now() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }
}
