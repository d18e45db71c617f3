import Foundation
import Keepsake
import Testing

@testable import KeepsakeSodium

#if canImport(Glibc)
import Glibc
#endif

@Suite("Master keys: key files, passphrases, wrong keys")
struct MasterKeyTests {
    @Test("Creating a store makes a 32-byte key file, and the same file opens it")
    func keyFileIsCreated() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("1".utf8), forKey: "a")
            let key = try readBytes(directory + "/store.key")
            #expect(key.count == 32)
            #expect(Set(key).count > 8)
            #expect(try reopen(directory).data(forKey: "a") == Data("1".utf8))
        }
    }

    @Test("An existing key file is used as it is, never replaced")
    func existingKeyFileIsUsed() throws {
        try withTemporaryDirectory { directory in
            let key = counting(from: 100, count: 32)
            try writeKeyFile(key, to: directory + "/store.key")
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("1".utf8), forKey: "a")
            #expect(try readBytes(directory + "/store.key") == key)
            #expect(try reopen(directory).data(forKey: "a") == Data("1".utf8))
        }
    }

    @Test("Another key file is refused with wrongKey naming that key file, before any record is read")
    func wrongKeyFile() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("1".utf8), forKey: "a")
            try writeKeyFile(counting(from: 7, count: 32), to: directory + "/wrong.key")
            let error = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore(directory: directory + "/store", key: .keyFile(path: directory + "/wrong.key"))
            }
            #expect(error.code == .wrongKey)
            #expect(error.store == store.uri)
            #expect(error.message.contains("key file " + directory + "/wrong.key"))
            #expect(error.cause?.isLibrary == true)
        }
    }

    @Test("A missing key file is notFound naming its path (errno kept); a key file of another length is refused")
    func badKeyFiles() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            let missing = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore(directory: directory + "/store", key: .keyFile(path: directory + "/none.key"))
            }
            #expect(missing.code == .notFound)
            #expect(missing.errno == ENOENT)
            #expect(missing.message.contains(directory + "/none.key"))
            // Not a whole number of 32-byte keys, or more than 16 of them.
            for length in [0, 31, 33, 65, 17 * 32] {
                try writeKeyFile(counting(from: 0, count: length), to: directory + "/bad.key")
                let error = try #require(throws: KeepsakeError.self) {
                    _ = try SodiumFileStore(
                        directory: directory + "/store", key: .keyFile(path: directory + "/bad.key"))
                }
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains("bad.key"))
            }
        }
    }

    @Test("A passphrase store opens with its passphrase and refuses another with wrongKey, never quoting it")
    func passphrases() throws {
        try withTemporaryDirectory { directory in
            let store = try SodiumFileStore.create(
                directory: directory + "/store", key: passphrase("open sesame"),
                passphraseLimits: fastLimits)
            try store.setData(Data("1".utf8), forKey: "a")
            let header = try StoreHeader.parse(readBytes(directory + "/store/keepsake.header"))
            #expect(header.keyKind == .passphrase)
            #expect(header.opsLimit == 1 && header.memLimit == 64 * 1024)
            #expect(header.salt != [UInt8](repeating: 0, count: 16))
            let reopened = try SodiumFileStore(directory: directory + "/store", key: passphrase("open sesame"))
            #expect(try reopened.data(forKey: "a") == Data("1".utf8))
            let error = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore(directory: directory + "/store", key: passphrase("open says me"))
            }
            #expect(error.code == .wrongKey)
            #expect(error.message.contains("passphrase from test"))
            #expect(!error.description.contains("open says me"))
            #expect(!error.description.contains("open sesame"))
        }
    }

    @Test("The interactive Argon2id limits work end to end")
    func interactiveLimits() throws {
        try withTemporaryDirectory { directory in
            let store = try SodiumFileStore.create(
                directory: directory + "/store", key: passphrase("pw"),
                passphraseLimits: .interactive)
            try store.setData(Data("1".utf8), forKey: "a")
            let header = try StoreHeader.parse(readBytes(directory + "/store/keepsake.header"))
            #expect(header.opsLimit == PassphraseLimits.interactive.opsLimit)
            #expect(header.memLimit == 64 * 1024 * 1024)
            #expect(try SodiumFileStore(directory: directory + "/store", key: passphrase("pw")).keys() == ["a"])
        }
    }

    @Test("A key of the wrong kind is refused with wrongKey saying what protects the store")
    func wrongKind() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            let byPassphrase = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore(directory: directory + "/store", key: passphrase("x"))
            }
            #expect(byPassphrase.code == .wrongKey)
            #expect(byPassphrase.message.contains("protected by a key"))
            _ = try SodiumFileStore.create(
                directory: directory + "/p", key: passphrase("x"), passphraseLimits: fastLimits)
            let byFile = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore(directory: directory + "/p", key: .keyFile(path: directory + "/store.key"))
            }
            #expect(byFile.code == .wrongKey)
            #expect(byFile.message.contains("protected by a passphrase"))
            #expect(byFile.message.contains("key file " + directory + "/store.key"))
        }
    }

    @Test("An empty passphrase and out-of-range limits are refused")
    func invalidArguments() throws {
        try withTemporaryDirectory { directory in
            let empty = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore.create(
                    directory: directory + "/s", key: passphrase(""), passphraseLimits: fastLimits)
            }
            #expect(empty.code == .invalidArgument)
            #expect(try listing(directory + "/s").contains("keepsake.header") == false)
            #expect(throws: KeepsakeError.self) { _ = try PassphraseLimits(opsLimit: 0, memLimit: 64 * 1024) }
            #expect(throws: KeepsakeError.self) { _ = try PassphraseLimits(opsLimit: 1, memLimit: 1024) }
        }
    }

    @Test("Opening where there is no store is unavailable; creating over a store is refused")
    func missingAndExisting() throws {
        try withTemporaryDirectory { directory in
            let none = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore(directory: directory + "/nothing", key: .keyFile(path: directory + "/k"))
            }
            #expect(none.code == .unavailable)
            #expect(none.store == "file:" + directory + "/nothing")
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("1".utf8), forKey: "a")
            let again = try #require(throws: KeepsakeError.self) { _ = try makeKeyFileStore(in: directory) }
            #expect(again.code == .invalidArgument)
            #expect(try reopen(directory).data(forKey: "a") == Data("1".utf8))
        }
    }

    @Test("A custom provider supplies the master key without any change to the store")
    func customProvider() throws {
        struct FixedProvider: MasterKeyProvider {
            var description: String { "test keyring entry" }
            func masterKey(createIfAbsent: Bool) throws(KeepsakeError) -> SecureBytes {
                SecureBytes(copying: counting(from: 42, count: 32))
            }
        }
        try withTemporaryDirectory { directory in
            let store = try SodiumFileStore.create(directory: directory + "/s", key: .provider(FixedProvider()))
            try store.setData(Data("1".utf8), forKey: "a")
            try writeKeyFile(counting(from: 42, count: 32), to: directory + "/same.key")
            #expect(
                try SodiumFileStore(directory: directory + "/s", key: .keyFile(path: directory + "/same.key")).keys()
                    == ["a"])
            try writeKeyFile(counting(from: 43, count: 32), to: directory + "/other.key")
            let error = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore(directory: directory + "/s", key: .keyFile(path: directory + "/other.key"))
            }
            #expect(error.code == .wrongKey)
        }
    }
}

@Suite("Changing the master key")
struct RekeyTests {
    @Test("Rekeying to a new key file keeps every record; the old key no longer opens the store")
    func rekeyToKeyFile() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            let records = (0..<5).map { ("key-\($0)", Data("value \($0)".utf8)) }
            for (key, value) in records { try store.setData(value, forKey: key) }
            let filesBefore = try recordFiles(directory + "/store").map { try readBytes(directory + "/store/" + $0) }
            #expect(try store.keyGeneration() == 1)
            try store.changeMasterKey(to: .keyFile(path: directory + "/new.key"))
            #expect(try store.keyGeneration() == 2)
            #expect(try readBytes(directory + "/new.key").count == 32)
            #expect(try mode(directory + "/new.key") == 0o600)
            let filesAfter = try recordFiles(directory + "/store").map { try readBytes(directory + "/store/" + $0) }
            #expect(filesBefore == filesAfter)
            let reopened = try SodiumFileStore(
                directory: directory + "/store", key: .keyFile(path: directory + "/new.key"))
            for (key, value) in records { #expect(try reopened.data(forKey: key) == value) }
            let old = try #require(throws: KeepsakeError.self) { _ = try reopen(directory) }
            #expect(old.code == .wrongKey)
            // The instance that rekeyed keeps working.
            try store.setData(Data("after".utf8), forKey: "later")
            #expect(try reopened.data(forKey: "later") == Data("after".utf8))
        }
    }

    @Test("Changing the passphrase, and moving between passphrase and key file, keep every record")
    func passphraseChanges() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            let store = try SodiumFileStore.create(
                directory: path, key: passphrase("one"), passphraseLimits: fastLimits)
            try store.setData(Data("kept".utf8), forKey: "a")
            try store.changeMasterKey(to: passphrase("two"), passphraseLimits: fastLimits)
            #expect(try SodiumFileStore(directory: path, key: passphrase("two")).data(forKey: "a") == Data("kept".utf8))
            #expect(throws: KeepsakeError.self) { _ = try SodiumFileStore(directory: path, key: passphrase("one")) }
            try store.changeMasterKey(to: .keyFile(path: directory + "/k"))
            let byFile = try SodiumFileStore(directory: path, key: .keyFile(path: directory + "/k"))
            #expect(try byFile.data(forKey: "a") == Data("kept".utf8))
            try byFile.changeMasterKey(to: passphrase("three"), passphraseLimits: fastLimits)
            #expect(
                try SodiumFileStore(directory: path, key: passphrase("three")).data(forKey: "a") == Data("kept".utf8))
            #expect(try byFile.keyGeneration() == 4)
        }
    }

    @Test("A rekey that fails at any file step leaves a store that opens with the old key, every record intact")
    func interruptedRekey() throws {
        for newKind in ["key file", "passphrase"] {
            var failAt = 1
            while true {
                let finished = try withTemporaryDirectory { directory -> Bool in
                    let store = try makeKeyFileStore(in: directory)
                    try store.setData(Data("one".utf8), forKey: "a")
                    try store.setData(Data("two".utf8), forKey: "b")
                    let plan = FaultPlan(failAt: failAt)
                    let faulty = try reopen(directory, fileSystem: plan.fileSystem)
                    let newKey: MasterKeySource =
                        newKind == "key file"
                        ? .keyFile(path: directory + "/new.key") : passphrase("new")
                    do {
                        try faulty.changeMasterKey(to: newKey, passphraseLimits: fastLimits)
                    } catch let error as KeepsakeError {
                        #expect(plan.fired)
                        #expect(error.code == .io)
                        #expect(error.errno == EIO)
                    }
                    let opensWithOld = try opens(directory + "/store", with: .keyFile(path: directory + "/store.key"))
                    let opensWithNew = try opens(directory + "/store", with: newKey)
                    let opened: SodiumFileStore =
                        try plan.fired
                        ? reopen(directory)
                        : SodiumFileStore(directory: directory + "/store", key: newKey)
                    #expect(
                        plan.fired ? (opensWithOld && !opensWithNew) : (opensWithNew && !opensWithOld),
                        "\(newKind), failing step \(failAt) of \(plan.steps)")
                    #expect(try opened.allData().map(\.key) == ["a", "b"])
                    #expect(try opened.data(forKey: "a") == Data("one".utf8))
                    #expect(try listing(directory + "/store").allSatisfy { !$0.hasPrefix(".tmp-") })
                    #expect(try listing(directory).allSatisfy { !$0.hasPrefix(".tmp-") })
                    return !plan.fired
                }
                if finished { break }
                failAt += 1
            }
            // Every step of the key file creation and of the header replace was made to fail.
            #expect(failAt == (newKind == "key file" ? 5 + 6 : 6) + 1, "\(newKind)")
        }
    }

    @Test("A crash after the header rename opens with the new key and removes the rollback file")
    func crashAfterRename() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("one".utf8), forKey: "a")
            let oldHeader = try readBytes(directory + "/store/keepsake.header")
            try store.changeMasterKey(to: .keyFile(path: directory + "/new.key"))
            // What a crash between the rename and the removal of the rollback link leaves.
            try writeBytes(oldHeader, to: directory + "/store/.tmp-00000000deadbeef")
            try writeBytes([1, 2, 3], to: directory + "/store/.tmp-0000000000c0ffee")
            let reopened = try SodiumFileStore(
                directory: directory + "/store", key: .keyFile(path: directory + "/new.key"))
            #expect(try reopened.data(forKey: "a") == Data("one".utf8))
            #expect(
                try listing(directory + "/store")
                    == [store.subkeys.fileName(of: "a"), "keepsake.header", "keepsake.lock"].sorted())
        }
    }
}

/// Whether `key` opens the store: `false` only for ``KeepsakeError/Code/wrongKey`` (or a key
/// file that was never created); any other error is rethrown.
func opens(_ directory: String, with key: MasterKeySource) throws -> Bool {
    let result = Result { () throws(KeepsakeError) in try SodiumFileStore(directory: directory, key: key) }
    switch result {
    case .success:
        return true
    case let .failure(error):
        if error.code == .wrongKey || error.errno == ENOENT { return false }
        throw error
    }
}
