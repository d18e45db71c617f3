import FileKit
import Foundation
import Keepsake
import Synchronization
import Testing

@testable import KeepsakeKeyring

/// Where the keyring write lock lives, and what is refused there; no keyring needed.
@Suite("Keyring write lock: its directory and name")
struct KeyringWriteLockDirectoryTests {
    func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keepsake-lock-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    @Test("the lock lives in $XDG_RUNTIME_DIR/keepsake, made with mode 0700")
    func madeInRuntimeDirectory() throws {
        let runtime = try scratch()
        defer { try? FileManager.default.removeItem(atPath: runtime) }  // scratch files only
        let directory = try KeyringWriteLock.directory(
            environment: ["XDG_RUNTIME_DIR": runtime], store: "keyring:s", key: "k")
        #expect(directory == runtime + "/keepsake")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        #expect(attributes[.posixPermissions] as? Int == 0o700)
        // Used again as it is.
        #expect(
            try KeyringWriteLock.directory(environment: ["XDG_RUNTIME_DIR": runtime], store: "keyring:s", key: "k")
                == directory)
    }

    @Test(
        "without a usable XDG_RUNTIME_DIR (unset, relative, missing), a private directory in the user's cache, else /tmp"
    )
    func fallsBack() throws {
        let home = try scratch()
        defer { try? FileManager.default.removeItem(atPath: home) }  // scratch files only
        // A runtime directory that cannot be made (under a plain file) falls back too.
        #expect(FileManager.default.createFile(atPath: home + "/file", contents: Data()))
        for runtime in [nil, "", "relative/run", home + "/file/run"] {
            var environment = ["HOME": home]
            environment["XDG_RUNTIME_DIR"] = runtime
            let directory = try KeyringWriteLock.directory(environment: environment, store: "keyring:s", key: nil)
            #expect(directory == home + "/.cache/keepsake/locks", "\(String(describing: runtime))")
            #expect(try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int == 0o700)
        }
        #expect(
            try KeyringWriteLock.directory(
                environment: ["HOME": home, "XDG_CACHE_HOME": home + "/xdg-cache"], store: "keyring:s", key: nil)
                == home + "/xdg-cache/keepsake/locks")
        let tmp = try scratch()
        defer { try? FileManager.default.removeItem(atPath: tmp) }  // scratch files only
        #expect(
            try KeyringWriteLock.directory(environment: ["TMPDIR": tmp], store: "keyring:s", key: nil)
                == tmp + "/keepsake-\(geteuid())")
    }

    @Test(
        "one rule for the keyring and move locks: a squatted or linked place is passed over, an open one of ours narrowed"
    )
    func onePrivateRule() throws {
        let root = try scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }  // scratch files only
        let (runtime, home, tmp) = (root + "/run", root + "/home", root + "/tmp")
        for directory in [runtime, home, tmp] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        }
        let environment = ["XDG_RUNTIME_DIR": runtime, "HOME": home, "TMPDIR": tmp]
        // A symbolic link where the runtime lock directory goes: passed over for the user's cache.
        try FileManager.default.createSymbolicLink(atPath: runtime + "/keepsake", withDestinationPath: root)
        let cache = home + "/.cache/keepsake/locks"
        #expect(try KeyringWriteLock.directory(environment: environment, store: "keyring:s", key: "k") == cache)
        #expect(try Syscall.userLockDirectory(environment: environment) == cache, "the move lock's too")
        // One of this user's that others may use: narrowed to 0700, and used.
        try FileManager.default.removeItem(atPath: runtime + "/keepsake")
        try FileManager.default.createDirectory(atPath: runtime + "/keepsake", withIntermediateDirectories: false)
        #expect(chmod(runtime + "/keepsake", 0o755) == 0)
        #expect(try Syscall.userLockDirectory(environment: environment) == runtime + "/keepsake")
        #expect(
            try FileManager.default.attributesOfItem(atPath: runtime + "/keepsake")[.posixPermissions] as? Int == 0o700)

        // Nowhere private: refused, naming each place and what to do; nothing is made.
        let blocked = ["XDG_RUNTIME_DIR": runtime, "TMPDIR": tmp]
        try FileManager.default.removeItem(atPath: runtime + "/keepsake")
        try FileManager.default.createSymbolicLink(atPath: runtime + "/keepsake", withDestinationPath: root)
        try FileManager.default.createSymbolicLink(atPath: tmp + "/keepsake-\(geteuid())", withDestinationPath: root)
        let error = try #require(throws: KeepsakeError.self) {
            try KeyringWriteLock.directory(environment: blocked, store: "keyring:s", key: "k")
        }
        #expect(error.code == .permissionDenied && error.store == "keyring:s" && error.key == "k")
        #expect(error.message.contains("nothing was written"), "\(error.message)")
        #expect(error.message.contains(runtime + "/keepsake: not a directory"), "\(error.message)")
        #expect(error.message.contains("set XDG_RUNTIME_DIR (or HOME)"), "\(error.message)")

        if geteuid() == 0 {
            // Another user's directory made first in /tmp (the squat): passed over for the cache.
            try FileManager.default.removeItem(atPath: tmp + "/keepsake-0")
            try FileManager.default.createDirectory(atPath: tmp + "/keepsake-0", withIntermediateDirectories: false)
            #expect(chown(tmp + "/keepsake-0", 65534, 65534) == 0)
            let squatted = ["TMPDIR": tmp, "HOME": home]
            #expect(try KeyringWriteLock.directory(environment: squatted, store: "keyring:s", key: nil) == cache)
            let nowhere = try #require(throws: KeepsakeError.self) {
                try KeyringWriteLock.directory(environment: ["TMPDIR": tmp], store: "keyring:s", key: nil)
            }
            #expect(nowhere.message.contains("owned by uid 65534"), "\(nowhere.message)")
        }
    }

    @Test("the lock's name depends on the session bus and the service, and is a plain file name")
    func names() {
        let a = KeyringWriteLock.lockName(service: "com.example.a")
        let b = KeyringWriteLock.lockName(service: "com.example.b")
        #expect(a != b)
        #expect(a == KeyringWriteLock.lockName(service: "com.example.a"))
        #expect(a.hasPrefix("keyring-") && a.hasSuffix(".lock") && a.count == "keyring-".count + 16 + ".lock".count)
        #expect(!a.contains("/"))
    }
}

extension KeyringTests {
    @Suite("Keyring write lock against a private keyring")
    struct WriteLock {
        /// The lock file of `store`'s service on this bus.
        func lockPath(_ store: KeyringStore) throws -> String {
            try KeyringWriteLock.directory(store: store.uri, key: nil) + "/"
                + KeyringWriteLock.lockName(service: store.service)
        }

        @Test("a writer that cannot get the lock by its deadline throws .lockTimeout and writes nothing")
        func lockTimeout() throws {
            let store = try PrivateKeyring.freshStore("lock-held", timeout: .milliseconds(400))
            let old = Data(#"{"v":"old"}"#.utf8)
            try store.setData(old, forKey: "k")
            // Another process's lock, as flock sees it: a separate open file description.
            let fd = open(try lockPath(store), O_RDWR | O_CREAT, 0o600)
            try #require(fd >= 0)
            #expect(flock(fd, LOCK_EX) == 0)
            let started = ContinuousClock.now
            let error = try #require(throws: KeepsakeError.self) {
                try store.setData(Data(#"{"v":"new"}"#.utf8), forKey: "k")
            }
            let waited = ContinuousClock.now - started
            close(fd)
            #expect(error.code == .lockTimeout && error.store == store.uri && error.key == "k")
            #expect(error.message.contains("nothing was written"), "\(error.message)")
            #expect(waited >= .milliseconds(350) && waited < .seconds(3), "waited \(waited)")
            #expect(try store.data(forKey: "k") == old)
            // Reads take no lock; once it is free, writes go through.
            try store.setData(Data(#"{"v":"new"}"#.utf8), forKey: "k")
            #expect(try store.data(forKey: "k") == Data(#"{"v":"new"}"#.utf8))
        }

        @Test("a holder that dies does not block anyone: the kernel releases its flock")
        func crashedHolder() throws {
            let store = try PrivateKeyring.freshStore("lock-crash", timeout: .seconds(5))
            let holder = Process()
            holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            // One process holds the lock (no child inherits it): bash takes it, then becomes sleep.
            holder.arguments = [
                "bash", "-c", #"exec 9>>"$1" && flock --exclusive 9 && exec sleep 60"#, "_", try lockPath(store)
            ]
            try holder.run()
            try PrivateKeyring.register(holder)
            // Until the holder has the lock, a write could slip in first: wait for it.
            var held = false
            for _ in 0..<100 where !held {
                let fd = open(try lockPath(store), O_RDWR | O_CREAT, 0o600)
                held = flock(fd, LOCK_EX | LOCK_NB) != 0
                close(fd)
                if !held { Thread.sleep(forTimeInterval: 0.02) }
            }
            try #require(held, "the flock holder did not take the lock")
            let writer = Mutex<Result<Void, KeepsakeError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread {
                do throws(KeepsakeError) {
                    try store.setData(Data(#"{"v":1}"#.utf8), forKey: "k")
                    writer.withLock { $0 = .success(()) }
                } catch {
                    writer.withLock { $0 = .failure(error) }
                }
                done.signal()
            }.start()
            Thread.sleep(forTimeInterval: 0.3)
            #expect(writer.withLock { $0 } == nil, "the write waits while the lock is held")
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
            done.wait()
            let result = try #require(writer.withLock { $0 })
            #expect(throws: Never.self) { try result.get() }
            #expect(try store.data(forKey: "k") == Data(#"{"v":1}"#.utf8))
        }

        @Test("a read-back that changes between reads is another client's write: applied, not undone")
        func changingReadBackNotUndone() throws {
            var store = try PrivateKeyring.freshStore("read-back-changes")
            let previous = Data(#"{"v":"previous"}"#.utf8)
            try store.setData(previous, forKey: "k")
            let reads = Mutex(0)
            store.readBackTransform = { _ in
                let count = reads.withLock {
                    $0 += 1
                    return $0
                }
                return Data(#"{"v":"another client's \#(count)"}"#.utf8)
            }
            let mine = Data(#"{"v":"mine"}"#.utf8)
            try store.setData(mine, forKey: "k")
            #expect(reads.withLock { $0 } == 2)
            store.readBackTransform = nil
            #expect(try store.data(forKey: "k") == mine, "not put back to the previous record")

            // A new item too: not deleted.
            reads.withLock { $0 = 0 }
            store.readBackTransform = { _ in
                let count = reads.withLock {
                    $0 += 1
                    return $0
                }
                return Data(#"{"v":"another client's \#(count)"}"#.utf8)
            }
            try store.setData(mine, forKey: "fresh")
            store.readBackTransform = nil
            #expect(try store.data(forKey: "fresh") == mine)
        }

        @Test(
            "another client's one write between a write and its read-back is not taken for the provider's doing",
            PrivateKeyring.notAgainst(.keePassXC, PrivateKeyring.keePassXCReplaceDialog))
        func oneForeignWriteNotUndone() throws {
            var store = try PrivateKeyring.freshStore("read-back-foreign")
            let service = store.service
            let previous = Data(#"{"v":"previous"}"#.utf8)
            try store.setData(previous, forKey: "k")
            let reads = Mutex(0)
            store.readBackTransform = { data in
                let first = reads.withLock {
                    $0 += 1
                    return $0 == 1
                }
                guard first else { return data }
                // secret-tool writes the item after this write, just before its read-back
                // arrives: the read-back sees the other client's record.
                do {
                    try PrivateKeyring.secretToolStore(
                        label: "other client", attributes: [("service", service), ("username", "k")],
                        secret: #"{"v":"theirs"}"#)
                } catch {
                    Issue.record("secret-tool store failed: \(error)")
                }
                return Data(#"{"v":"theirs"}"#.utf8)
            }
            let mine = Data(#"{"v":"mine"}"#.utf8)
            try store.setData(mine, forKey: "k")
            store.readBackTransform = nil
            #expect(reads.withLock { $0 } == 3, "read back, read again, written and read again")
            // Not rolled back to the previous record: this write, later than theirs, stands.
            #expect(try store.data(forKey: "k") == mine)
            #expect(try PrivateKeyring.secretToolSearch(service: service).count == 1)
        }
    }
}
