import Foundation
import Keepsake
import Migrations
import Testing

@testable import KeepsakeSodium

/// What the format detects (FORMAT.md §7): every check here must fail with a typed error whose
/// cause is a `Cause.library`, and leave every file exactly as it was.
@Suite("Tampering with an encrypted store")
struct TamperTests {
    /// A store with two small records; returns the directory of the store and the file names.
    private func prepare(_ directory: String) throws -> (store: SodiumFileStore, path: String, a: String, b: String) {
        let store = try makeKeyFileStore(in: directory)
        try store.setData(Data(#"{"a":1}"#.utf8), forKey: "k")
        try store.setData(Data(#"{"b":2}"#.utf8), forKey: "other")
        let path = directory + "/store"
        return (store, path, store.subkeys.fileName(of: "k"), store.subkeys.fileName(of: "other"))
    }

    private func expectCorruptRecord(
        _ store: SodiumFileStore, key: String = "k", sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let value = try store.data(forKey: key)
            Issue.record("a tampered record read as \(String(describing: value))", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .corruptRecord, sourceLocation: sourceLocation)
            #expect(error.store == store.uri, sourceLocation: sourceLocation)
            #expect(error.key == key, sourceLocation: sourceLocation)
            #expect(error.cause?.isLibrary == true, sourceLocation: sourceLocation)
        }
    }

    @Test("Every truncation of a record file fails to open and is left as it is")
    func truncations() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            let original = try readBytes(path + "/" + name)
            #expect(original.count == 34 + 4 + 1 + 7 + 16)
            for length in 0..<original.count {
                let truncated = Array(original[0..<length])
                try writeBytes(truncated, to: path + "/" + name)
                expectCorruptRecord(store)
                #expect(try readBytes(path + "/" + name) == truncated)
            }
            try writeBytes(original, to: path + "/" + name)
            #expect(try store.data(forKey: "k") == Data(#"{"a":1}"#.utf8))
        }
    }

    @Test("Every single-bit flip in a record file fails to open")
    func recordBitFlips() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            let original = try readBytes(path + "/" + name)
            for bit in 0..<(original.count * 8) {
                var flipped = original
                flipped[bit / 8] ^= UInt8(1 << (bit % 8))
                try writeBytes(flipped, to: path + "/" + name)
                expectCorruptRecord(store)
            }
            try writeBytes(original, to: path + "/" + name)
            #expect(try store.data(forKey: "k") == Data(#"{"a":1}"#.utf8))
            #expect(try store.data(forKey: "other") == Data(#"{"b":2}"#.utf8))
        }
    }

    @Test("Every single-bit flip in the header fails to open the store with corruptStore")
    func headerBitFlips() throws {
        try withTemporaryDirectory { directory in
            let (_, path, _, _) = try prepare(directory)
            let headerPath = path + "/keepsake.header"
            let original = try readBytes(headerPath)
            #expect(original.count == 200)
            for bit in 0..<(original.count * 8) {
                var flipped = original
                flipped[bit / 8] ^= UInt8(1 << (bit % 8))
                try writeBytes(flipped, to: headerPath)
                let error = try #require(throws: KeepsakeError.self) { _ = try reopen(directory) }
                #expect(error.code == .corruptStore)
                #expect(error.cause?.isLibrary == true)
                #expect(try readBytes(headerPath) == flipped)
            }
            try writeBytes(original, to: headerPath)
            #expect(try reopen(directory).keys() == ["k", "other"])
        }
    }

    /// The failed entries of `allRecords()`: file name and error, each checked to name no key.
    private func failures(_ store: SodiumFileStore) throws -> [(name: String, error: KeepsakeError)] {
        try store.allRecords().compactMap { entry in
            guard case let .failure(error) = entry.result else { return nil }
            return (entry.key, error)
        }
    }

    @Test("A record file renamed to another record's name fails to open, and allRecords reports it by file name")
    func swappedFiles() throws {
        try withTemporaryDirectory { directory in
            let (store, path, a, b) = try prepare(directory)
            let bytesA = try readBytes(path + "/" + a)
            let bytesB = try readBytes(path + "/" + b)
            try writeBytes(bytesA, to: path + "/" + b)
            try writeBytes(bytesB, to: path + "/" + a)
            expectCorruptRecord(store, key: "k")
            expectCorruptRecord(store, key: "other")
            #expect(try store.keys() == [], "no readable record")
            let failed = try failures(store)
            #expect(failed.map(\.name) == [a, b].sorted())
            for (name, error) in failed {
                #expect(error.code == .corruptRecord)
                #expect(error.key == nil)
                #expect(error.store == store.uri)
                #expect(error.message.contains(name))
                #expect(!error.message.contains("other"))
            }
            #expect(try readBytes(path + "/" + a) == bytesB)
        }
    }

    @Test("One record file that fails to open does not stop listing the others")
    func oneBadFileAmongGood() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            try store.setData(Data(#"{"c":3}"#.utf8), forKey: "third")
            var bytes = try readBytes(path + "/" + name)
            bytes[bytes.count - 1] ^= 0x01
            try writeBytes(bytes, to: path + "/" + name)
            #expect(try store.keys() == ["other", "third"])
            #expect(try store.allData().map(\.data) == [Data(#"{"b":2}"#.utf8), Data(#"{"c":3}"#.utf8)])
            let records = try store.allRecords()
            #expect(records.map(\.key) == [name, "other", "third"].sorted())
            #expect(try failures(store).map(\.name) == [name])
            #expect(try failures(store).first?.error.cause?.isLibrary == true)
            #expect(try readBytes(path + "/" + name) == bytes)
        }
    }

    @Test("The migrator reports one bad record file as unreadable and still migrates every other record")
    func migratorGoesOn() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            let path = directory + "/store"
            try store.setData(Data(#"{"name":"Ada","age":"36"}"#.utf8), forKey: "person")
            try store.setData(
                Data(#"{"version":1,"startDate":0,"deviceId":"d","userId":"u"}"#.utf8), forKey: "trialInfo")
            try store.setData(Data(#""dark""#.utf8), forKey: "theme")
            let bad = store.subkeys.fileName(of: "theme")
            var bytes = try readBytes(path + "/" + bad)
            bytes[40] ^= 0x01
            try writeBytes(bytes, to: path + "/" + bad)

            let migrator = Migrator(
                store: store, chains: SampleModels.all,
                context: .fixed(now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev"))
            let plan = try migrator.plan()
            #expect(plan.map(\.key) == [bad, "person", "trialInfo"])
            #expect(plan.map(\.state) == [.unreadable, .outdated, .outdated])
            let reports = try migrator.run()
            #expect(reports.map(\.state) == [.unreadable, .migrated, .migrated])
            #expect(reports[0].error?.code == .corruptRecord)
            #expect(reports[0].error?.message.contains(bad) == true)
            #expect(
                try store.data(forKey: "person")
                    == Data(#"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#.utf8))
            #expect(try readBytes(path + "/" + bad) == bytes, "the bad file is left as it is")
        }
    }

    @Test("A record file copied from another store with another key fails to open")
    func crossStoreCopy() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            let otherStore = try makeKeyFileStore(in: directory + "/elsewhere")
            try otherStore.setData(Data(#"{"planted":true}"#.utf8), forKey: "k")
            let planted = try readBytes(directory + "/elsewhere/store/" + otherStore.subkeys.fileName(of: "k"))
            try writeBytes(planted, to: path + "/" + name)
            expectCorruptRecord(store)
        }
    }

    @Test("A record file copied from a store sharing the data key but not the store id fails to open")
    func crossStoreCopySameDataKey() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            // The same data key under another store id: only the associated data differs.
            let twin = SodiumFileStore(
                directory: path, storeID: counting(from: 1, count: 16), dataKey: store.keySet.generations[0].dataKey,
                lockTimeout: .seconds(1), fileSystem: .live, random: .system)
            let forged = RecordFile.seal(
                value: Data("forged".utf8), recordKey: "k", storeID: twin.storeID,
                keys: twin.subkeys, nonce: counting(from: 9, count: 24))
            try writeBytes([UInt8](forged), to: path + "/" + name)
            expectCorruptRecord(store)
            #expect(try twin.data(forKey: "k") == Data("forged".utf8))
        }
    }

    @Test("A record file relabelled with another format version fails to open")
    func versionDowngrade() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            var bytes = try readBytes(path + "/" + name)
            bytes[8] = 0  // version 1 → 0
            try writeBytes(bytes, to: path + "/" + name)
            expectCorruptRecord(store)
            bytes[8] = 2  // a "newer" version
            try writeBytes(bytes, to: path + "/" + name)
            expectCorruptRecord(store)
        }
    }

    @Test("Another store's header in place of this one's opens no record, and listing reports the strangers")
    func swappedHeader() throws {
        try withTemporaryDirectory { directory in
            let (_, path, _, _) = try prepare(directory)
            // The other store uses the same key file, so its header passes the key check.
            let other = try SodiumFileStore.create(
                directory: directory + "/other", key: .keyFile(path: directory + "/store.key"))
            try writeBytes(try readBytes(directory + "/other/keepsake.header"), to: path + "/keepsake.header")
            let opened = try reopen(directory)
            #expect(opened.identifier == other.identifier)
            // Under the other store's name key no file has the name of "k"; the files that are
            // there belong to another data key, and listing reports them.
            #expect(try opened.data(forKey: "k") == nil)
            #expect(try opened.keys() == [])
            let failed = try failures(opened)
            #expect(failed.count == 2)
            #expect(failed.allSatisfy { $0.error.code == .corruptRecord && $0.error.cause?.isLibrary == true })
        }
    }

    @Test("A replayed older file of the same record is not detected (documented limit)")
    func replayIsNotDetected() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            let old = try readBytes(path + "/" + name)
            try store.setData(Data(#"{"a":2}"#.utf8), forKey: "k")
            try writeBytes(old, to: path + "/" + name)
            // Authentic bytes of this record in this store: the format cannot tell them from
            // the latest without state kept elsewhere (FORMAT.md §7).
            #expect(try store.data(forKey: "k") == Data(#"{"a":1}"#.utf8))
        }
    }

    @Test("A failed read writes nothing: the directory is unchanged")
    func failedReadWritesNothing() throws {
        try withTemporaryDirectory { directory in
            let (store, path, name, _) = try prepare(directory)
            var bytes = try readBytes(path + "/" + name)
            bytes[bytes.count - 1] ^= 0x80
            try writeBytes(bytes, to: path + "/" + name)
            let before = try listing(path).map { ($0, try readBytes(path + "/" + $0)) }
            expectCorruptRecord(store)
            #expect(try failures(store).map(\.name) == [name])
            let after = try listing(path).map { ($0, try readBytes(path + "/" + $0)) }
            #expect(before.map(\.0) == after.map(\.0))
            #expect(before.map(\.1) == after.map(\.1))
        }
    }
}
