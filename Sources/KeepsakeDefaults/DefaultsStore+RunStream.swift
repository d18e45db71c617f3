internal import FileKit
import Foundation
import Keepsake

// A migration run's writes, written into the new suite file while the run is still evaluating.
//
// A run over a large suite used to hold every migrated record's new bytes until its one commit
// (about 75 bytes a record besides the suite itself), and the commit then wrote the whole new
// suite while nothing else ran. Here each block of writes is merged with the suite's members as
// the run hands it on, into an unnamed file (`O_TMPFILE`) beside the suite: the run keeps only
// where each write's bytes lie. The commit checks, under the lock, that the suite file still
// holds exactly the document the run read — the same check a batch commit makes before it
// writes — and then only gives the file its name and renames it into place, as a batch commit
// does. When the suite changed meanwhile, nothing of the stream is written: its bytes are read
// back and the run commits its writes as a batch, each applied only over what it was migrated
// from. A kill before the rename leaves nothing (the file has no name until the commit).

extension DefaultsStore: RunStreamingStore {
    /// A stream for the run reading this suite now, over the document it read (the one parsed
    /// last); `nil` when there is none, when the suite's directory cannot hold an unnamed file
    /// (no `O_TMPFILE`, read-only, no room), or when the store was made not to stream — then
    /// the run commits its writes as a batch, and that commit reports what keeps it from
    /// writing, if anything does.
    package func beginRunStream() -> (any RunStream)? {
        guard streamsRuns, let (document, _) = cache.cached(), !document.entries.isEmpty else { return nil }
        let opened: Int32?
        do throws(SystemFailure) {
            opened = try fileSystem.openUnnamedFile(in: directory)
        } catch {
            // Not a failure of the run: its batch commit writes a named temporary file instead,
            // and reports, naming the store, any failure to write there.
            return nil
        }
        guard let fd = opened else { return nil }
        return DefaultsRunStream(store: self, document: document, fd: fd)
    }

    /// Puts `stream`'s file in place of the suite when the suite holds the document the stream
    /// was written over: `true`. `false`, nothing written, when the suite changed since.
    fileprivate func commit(_ stream: DefaultsRunStream) throws(KeepsakeError) -> Bool {
        try holdingLock { () throws(KeepsakeError) -> Bool in
            guard try readDocument().bytes.isSameBuffer(as: stream.document.bytes) else { return false }
            guard stream.changed else { return true }
            removeLeftovers()
            do throws(SystemFailure) {
                try fileSystem.replace(fileName, in: directory, withUnnamed: stream.fd)
            } catch {
                throw error.error(store: uri, "cannot write the suite file; it was left as it was")
            }
            return true
        }
    }
}

/// The new suite, written into an unnamed file as a run's writes come (see the top of this file).
final class DefaultsRunStream: RunStream {
    let store: DefaultsStore
    /// The suite as the run read it: the members its writes are merged with.
    let document: DefaultsDocument
    /// The unnamed file (`O_TMPFILE`), open for reading and writing; -1 once closed.
    private(set) var fd: Int32
    private var writer: DocumentWriter
    /// The last key written: keys come in the suite's order.
    private var previousKey: String?
    /// Whether any write's bytes differ from the member's as read.
    private(set) var changed = false
    /// Set when the stream takes no more writes.
    private var stopped = false
    /// The failure to write that stopped it, if one did.
    private var failure: KeepsakeError?

    init(store: DefaultsStore, document: DefaultsDocument, fd: Int32) {
        self.store = store
        self.document = document
        self.fd = fd
        writer = DocumentWriter(document)
    }

    deinit { discard() }

    func append(key: String, value: UnsafeRawBufferPointer, over original: Data) -> Range<Int>? {
        guard !stopped else { return nil }
        if let previousKey, !previousKey.precedesExactly(key) {
            stopped = true
            return nil
        }
        previousKey = key
        let fd = self.fd
        do throws(SystemFailure) {
            // The member the write replaces must be the one the run read: the same bytes of
            // the same read of the suite (nearly always the very buffer it handed over).
            guard
                let index = try writer.copyMembers(
                    before: key,
                    to: { buffer throws(SystemFailure) in
                        try Syscall.writeAll(fd, buffer)
                    }),
                holds(original, at: index)
            else {
                stopped = true
                return nil
            }
            if !changed, !Self.equal(value, document.bytes[document.entries[index].range]) { changed = true }
            return try writer.member(key, value) { buffer throws(SystemFailure) in try Syscall.writeAll(fd, buffer) }
        } catch {
            fail(error)
            return nil
        }
    }

    func commit() throws(KeepsakeError) -> Bool {
        if let failure { throw failure }
        guard !stopped else { return false }
        let fd = self.fd
        do throws(SystemFailure) {
            try writer.finish { buffer throws(SystemFailure) in try Syscall.writeAll(fd, buffer) }
        } catch {
            fail(error)
            throw failure ?? error.error(store: store.uri, "cannot write the suite file")
        }
        return try store.commit(self)
    }

    func readBack(_ body: (_ chunk: UnsafeRawBufferPointer, _ offset: Int) -> Void) throws(KeepsakeError) {
        let fd = self.fd
        do throws(SystemFailure) {
            try writer.flush { buffer throws(SystemFailure) in try Syscall.writeAll(fd, buffer) }
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var offset = 0
            while offset < writer.count {
                let count = buffer.withUnsafeMutableBytes { raw in
                    pread(fd, raw.baseAddress, min(raw.count, writer.count - offset), off_t(offset))
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw SystemFailure(call: "pread", errno: errno)
                }
                if count == 0 { break }  // shorter than written: the caller finds its bytes missing
                buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count]), offset) }
                offset += count
            }
        } catch {
            throw error.error(
                store: store.uri,
                "cannot read back the migrated records written so far; the suite file was left as it was")
        }
    }

    func original(forKey key: String) -> Data? {
        document.slice(forKey: key)
    }

    func discard() {
        guard fd >= 0 else { return }
        Syscall.close(fd)
        fd = -1
    }

    /// Stops the stream on a failure to write, which its commit then throws.
    private func fail(_ error: SystemFailure) {
        stopped = true
        failure = error.error(store: store.uri, "cannot write the suite file; it was left as it was")
    }

    /// Whether `original` is the document's member at `index`: its very bytes (a slice of the
    /// document's buffer, as the store handed it over), else equal bytes.
    private func holds(_ original: Data, at index: Int) -> Bool {
        let member = document.bytes[document.entries[index].range]
        guard original.count == member.count else { return false }
        if original.isSameBuffer(as: member) { return true }
        return original == member
    }

    private static func equal(_ value: UnsafeRawBufferPointer, _ bytes: Data) -> Bool {
        guard value.count == bytes.count else { return false }
        return bytes.withUnsafeBytes { stored in
            guard let one = value.baseAddress, let two = stored.baseAddress else { return true }
            return memcmp(one, two, value.count) == 0
        }
    }
}

extension Data {
    /// Whether `other` is these very bytes in memory (the same buffer and range), not only
    /// equal ones.
    fileprivate func isSameBuffer(as other: Data) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { one in
            other.withUnsafeBytes { two in one.baseAddress == two.baseAddress }
        }
    }
}
