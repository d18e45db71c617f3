import FileKit
import Foundation
import Keepsake
import SodiumKit
import Synchronization
import Testing

@testable import KeepsakeSodium

#if canImport(Glibc)
import Glibc
#endif

/// Key files: refused when others may read them; never a copy of a key left behind.
@Suite("Key file safety")
struct KeyFileSafetyTests {
    @Test(
        "a key file group or others may read or write is refused on open, with the chmod that fixes it",
        arguments: [0o644, 0o640, 0o604, 0o620, 0o660])
    func looseModeOnOpen(_ mode: Int) throws {
        try withTemporaryDirectory { (directory: String) throws in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("1".utf8), forKey: "k")
            let keyPath = directory + "/store.key"
            #expect(chmod(keyPath, mode_t(mode)) == 0)
            let error = try #require(throws: KeepsakeError.self) { _ = try reopen(directory) }
            #expect(error.code == .permissionDenied)
            #expect(error.store == store.uri)
            #expect(error.message.contains("chmod 600 \(keyPath)"))
            #expect(error.cause == .other("key file mode \(String(mode, radix: 8)), expected 600 or stricter"))
            #expect(chmod(keyPath, 0o600) == 0)
            #expect(try reopen(directory).data(forKey: "k") == Data("1".utf8))
            #expect(chmod(keyPath, 0o400) == 0)
            #expect(try reopen(directory).data(forKey: "k") == Data("1".utf8), "read-only for the owner is fine")
        }
    }

    @Test("creating a store with an existing key file others may read is refused, and no header is written")
    func looseModeOnCreate() throws {
        try withTemporaryDirectory { (directory: String) throws in
            let keyPath = directory + "/shared dir's.key"
            try writeBytes([UInt8](repeating: 7, count: 32), to: keyPath)
            #expect(chmod(keyPath, 0o644) == 0)
            let error = try #require(throws: KeepsakeError.self) {
                _ = try SodiumFileStore.create(directory: directory + "/store", key: .keyFile(path: keyPath))
            }
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains(#"chmod 600 '\#(directory)/shared dir'\''s.key'"#))
            #expect(!FileManager.default.fileExists(atPath: directory + "/store/keepsake.header"))
        }
    }

    @Test("a new key file is written unnamed until it is linked: a kill before the link leaves no copy of the key")
    func unnamedUntilLinked() throws {
        try withTemporaryDirectory { (directory: String) throws in
            let seen = Mutex<[String]?>(nil)
            let files = FileSystem { step in
                if step == .link {
                    seen.withLock {
                        $0 = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? ["unlistable"]
                    }
                    return EIO  // the process "dies" here: nothing after this runs
                }
                return nil
            }
            #expect(throws: KeepsakeError.self) {
                _ = try SodiumFileStore.create(
                    directory: directory + "/store", key: .keyFile(path: directory + "/store.key"),
                    passphraseLimits: fastLimits, lockTimeout: .seconds(1),
                    fileSystem: files, random: .system)
            }
            #expect(seen.withLock { $0 } == ["store"], "only the store directory: no file holds the key by name")
            #expect(try listing(directory) == ["store"])
        }
    }

    @Test("where unnamed files cannot be made, the named temporary is the key file's own and the next use removes it")
    func namedTemporaryFallback() throws {
        try withTemporaryDirectory { (directory: String) throws in
            let seen = Mutex<[String]>([])
            let files = FileSystem(
                fault: { step in
                    if step == .link {
                        seen.withLock { $0 = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] }
                        return EIO
                    }
                    return nil
                }, unnamedFiles: false)
            let key = KeyFile(path: directory + "/new.key", fileSystem: files)
            #expect(throws: KeepsakeError.self) { _ = try key.masterKey(createIfAbsent: true) }
            let temporaries = seen.withLock { $0 }.filter { $0 != "new.key" }
            #expect(temporaries.count == 1)
            #expect(temporaries.first?.hasPrefix(".new.key.tmp-") == true)
            #expect(try listing(directory) == [], "a failed create removes its temporary")
        }
    }

    @Test("an interrupted rekey leaves nothing behind after the next open")
    func leftoversRemovedOnOpen() throws {
        try withTemporaryDirectory { (directory: String) throws in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("1".utf8), forKey: "k")
            // What a kill during a rekey leaves on a system without unnamed files: a copy of a
            // key beside the key file, and the header's temporary and rollback files in the store.
            try writeBytes([UInt8](repeating: 1, count: 32), to: directory + "/.store.key.tmp-0123456789abcdef")
            try writeBytes([UInt8](repeating: 2, count: 12), to: directory + "/store/.tmp-00000000deadbeef")
            // Files that only look alike belong to someone else and stay.
            try writeBytes([3], to: directory + "/.tmp-0123456789abcdef")
            try writeBytes([4], to: directory + "/.store.key.tmp-notours")
            let reopened = try reopen(directory)
            #expect(try reopened.data(forKey: "k") == Data("1".utf8))
            #expect(try listing(directory) == [".store.key.tmp-notours", ".tmp-0123456789abcdef", "store", "store.key"])
            #expect(
                try listing(directory + "/store")
                    == [store.subkeys.fileName(of: "k"), "keepsake.header", "keepsake.lock"].sorted())
        }
    }
}

@Suite("Argon2id work an untrusted header can ask for")
struct HeaderLimitTests {
    private func header(opsLimit: UInt64, memLimit: UInt64) -> [UInt8] {
        StoreHeader.seal(
            keyKind: .passphrase, storeID: Array(repeating: 1, count: Format.storeIDBytes),
            salt: Array(repeating: 2, count: Sodium.pwhashSaltBytes), opsLimit: opsLimit, memLimit: memLimit,
            keyGeneration: 1, wrapNonce: Array(repeating: 3, count: Sodium.aeadNonceBytes),
            masterKey: SecureBytes(copying: Array(repeating: 4, count: 32)),
            dataKey: SecureBytes(copying: Array(repeating: 5, count: 32))
        ).encoded
    }

    @Test(
        "limits above twice SENSITIVE are refused at parse, before any Argon2id runs",
        arguments: [
            (UInt64(9), UInt64(64 * 1024)), (UInt64(1), UInt64(2_147_483_648 + 1024)),
            (UInt64(4_294_967_295), UInt64(4_398_046_510_080))
        ])
    func refused(_ limits: (UInt64, UInt64)) {
        #expect(throws: FormatFailure.self) { try StoreHeader.parse(header(opsLimit: limits.0, memLimit: limits.1)) }
        #expect(throws: KeepsakeError.self) { try PassphraseLimits(opsLimit: limits.0, memLimit: limits.1) }
    }

    @Test("the largest limits allowed, and libsodium's own presets, still parse")
    func accepted() throws {
        let parsed = try StoreHeader.parse(header(opsLimit: 8, memLimit: 2_147_483_648))
        #expect(parsed.opsLimit == 8 && parsed.memLimit == 2_147_483_648)
        for preset in [PassphraseLimits.interactive, .moderate, .sensitive] {
            #expect(try PassphraseLimits(opsLimit: preset.opsLimit, memLimit: preset.memLimit) == preset)
        }
    }
}
