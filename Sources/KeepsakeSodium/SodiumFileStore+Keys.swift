internal import FileKit
import Foundation
import Keepsake
internal import SodiumKit

#if canImport(Glibc)
import Glibc
#endif

/// What a store knows of its keys: the data keys as last read from its header, that header
/// file's identity, and the master key's subkeys.
struct KeyState: Sendable {
    var keys: KeySet
    /// `nil` when not known: the next check reads the header.
    var header: FileIdentity?
    /// `nil` for a store made from a bare data key (tests): it cannot unwrap a new header.
    var master: MasterSubkeys?
    /// The other keys of the key set the store was opened with (a key file naming several),
    /// tried when ``master`` no longer opens the header: another process changed the master
    /// key to one of them.
    var otherMasters: [MasterSubkeys] = []
}

extension SodiumFileStore {
    /// The data keys this store holds now.
    var keySet: KeySet { keyState.withLock { $0.keys } }

    /// The keys a write uses now: the primary generation's record key and the name key. The
    /// name key never changes in a store's life, so file names computed with it stay right.
    var subkeys: DataSubkeys { keySet.writing }

    /// The data keys of the header on disk: the ones held when the header file is the one
    /// read last (one `lstat`), else the header read again.
    ///
    /// A header rewritten by another process (a master key change, a data key rotation) whose
    /// primary generation this store already holds needs no unwrap: the keys it holds still
    /// write what every reader of that header opens. A new primary is unwrapped with the master
    /// key this store was opened with.
    ///
    /// - Throws: `wrongKey` when the header has a primary generation this store does not hold
    ///   and its master key no longer opens the header (the master key was changed since the
    ///   store was opened); what reading the header throws.
    func currentKeys() throws(KeepsakeError) -> KeySet {
        var info = stat()
        if lstat(headerPath, &info) == 0 {
            let identity = FileIdentity(info)
            if let keys = keyState.withLock({ $0.header == identity ? $0.keys : nil }) { return keys }
        }
        let (header, identity) = try Self.readHeaderWithIdentity(directory: directory, uri: uri)
        guard header.storeID == storeID else {
            throw KeepsakeError(
                .corruptStore, store: uri,
                "the header on disk belongs to another store than the one opened; it was left as it is",
                cause: .library(domain: "KeepsakeSodium.format", code: 1, message: "store id mismatch"))
        }
        let held = keyState.withLock { $0.keys }
        if header.formatVersion == held.formatVersion, header.primaryGeneration == held.primary.number {
            keyState.withLock { $0.header = identity }
            return held
        }
        return try unwrapWithHeldKeys(header, identity: identity).keys
    }

    /// The data keys of `header`, unwrapped with the master key this store was opened with or,
    /// when the master key was changed since, another key of its key set; the keys and that
    /// master key become the store's.
    func unwrapWithHeldKeys(
        _ header: StoreHeader, identity: FileIdentity
    ) throws(KeepsakeError) -> (keys: KeySet, master: MasterSubkeys) {
        let (master, others) = keyState.withLock { ($0.master, $0.otherMasters) }
        guard let master else {
            throw KeepsakeError(
                .wrongKey, store: uri,
                "the store's header names data keys this store was not given; open the store again")
        }
        let opened = try Self.unwrap(
            header, masters: [master] + others,
            source: others.isEmpty ? "master key this store was opened with" : "key set this store was opened with",
            uri: uri)
        keyState.withLock {
            $0.keys = opened.keys
            $0.header = identity
            $0.master = opened.master
            $0.otherMasters = opened.others
        }
        return (opened.keys, opened.master)
    }

    /// The header's data keys under the first of `masters` that opens it (in order), that key,
    /// and the others; `wrongKey` naming `source` when none does.
    static func unwrap(
        _ header: StoreHeader, masters: [MasterSubkeys], source: String, uri: String
    ) throws(KeepsakeError) -> (keys: KeySet, master: MasterSubkeys, others: [MasterSubkeys]) {
        var refusal: KeepsakeError?
        for (index, master) in masters.enumerated() {
            do throws(KeepsakeError) {
                let keys = try unwrap(header, master: master, source: source, uri: uri)
                var others = masters
                others.remove(at: index)
                return (keys, master, others)
            } catch  where error.code == .wrongKey {
                refusal = refusal ?? error
            }
        }
        guard var refusal else {
            throw KeepsakeError(.wrongKey, store: uri, "the \(source) holds no key; nothing was read or written")
        }
        if masters.count > 1 {
            refusal.message = refusal.message.replacingOccurrences(
                of: "the \(source) does not open", with: "none of the \(masters.count) keys of the \(source) opens")
        }
        throw refusal
    }

    /// The header file and the identity of the version read.
    static func readHeaderWithIdentity(
        directory: String, uri: String
    ) throws(KeepsakeError) -> (StoreHeader, FileIdentity) {
        let read: (bytes: [UInt8], info: stat)?
        do throws(SystemFailure) {
            read = try Syscall.readFileWithInfo(directory + "/" + Format.headerFileName)
        } catch {
            if error.errno == ENOTDIR {
                throw KeepsakeError(
                    .unavailable, store: uri, "the store location is not a directory", cause: error.cause)
            }
            throw KeepsakeError(error.code, store: uri, "cannot read the store header", cause: error.cause)
        }
        guard let (bytes, info) = read else {
            let exists: Bool?
            do throws(SystemFailure) { exists = try Syscall.isDirectory(directory) } catch {
                throw KeepsakeError(error.code, store: uri, "cannot read the store directory", cause: error.cause)
            }
            throw KeepsakeError(
                .unavailable, store: uri,
                exists == nil
                    ? "there is no store directory; create the store first"
                    : "the directory holds no store header; create the store first")
        }
        do throws(FormatFailure) {
            return (try StoreHeader.parse(bytes), FileIdentity(info))
        } catch {
            throw KeepsakeError(
                .corruptStore, store: uri,
                """
                the store header cannot be used (\(error.reason)); it was left as it is and no record was read
                """, cause: error.cause)
        }
    }

    static func readHeader(directory: String, uri: String) throws(KeepsakeError) -> StoreHeader {
        try readHeaderWithIdentity(directory: directory, uri: uri).0
    }

    /// The header's data keys under `master`; `source` names the master key in a wrong-key error.
    static func unwrap(
        _ header: StoreHeader, master: MasterSubkeys, source: String, uri: String
    ) throws(KeepsakeError) -> KeySet {
        do throws(FormatFailure) {
            return try header.unwrapKeys(with: master)
        } catch  where error.kind == .wrongKey {
            throw KeepsakeError(
                .wrongKey, store: uri,
                """
                the \(source) does not open this store (the header's key check does not match); \
                nothing was read or written
                """, cause: error.cause)
        } catch {
            throw KeepsakeError(
                .corruptStore, store: uri, "the store header cannot be used (\(error.reason))",
                cause: error.cause)
        }
    }

    /// `bytes` opened as the record file named by `nameHash`; when it names a data key
    /// generation this store does not hold, the header is checked once for new keys (another
    /// process rotated the data key) and the file opened again.
    func openRecord(_ bytes: [UInt8], nameHash: [UInt8]) throws(FormatFailure) -> (recordKey: String, value: Data) {
        do throws(FormatFailure) {
            return try RecordFile.open(bytes, nameHash: nameHash, storeID: storeID, keys: keySet)
        } catch  where error.kind == .unknownGeneration || error.kind == .newerGeneration {
            let keys: KeySet
            do throws(KeepsakeError) {
                keys = try currentKeys()
            } catch {
                throw FormatFailure(
                    kind: error.code == .wrongKey ? .unknownGeneration : .corrupt, reason: error.message, sodium: nil)
            }
            return try RecordFile.open(bytes, nameHash: nameHash, storeID: storeID, keys: keys)
        }
    }
}
