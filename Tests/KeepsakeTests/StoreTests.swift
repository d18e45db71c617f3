import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeTesting
import Migrations
import Testing

@Suite("In-memory store")
struct InMemoryStoreTests {
    @Test("keeps the store contract", arguments: StoreContract.checks)
    func contract(_ check: StoreContract.Check) throws {
        try check.run(on: InMemoryStore(name: "contract"))
    }
}

@Suite("Defaults store")
struct DefaultsStoreTests {
    @Test("keeps the store contract", arguments: StoreContract.checks)
    func contract(_ check: StoreContract.Check) throws {
        try check.run(on: DefaultsStore(path: try temporaryDirectory() + "/suite.json"))
    }

    @Test("creates its directory 0700 and its files 0600, and leaves no temporary file")
    func permissions() throws {
        let directory = try temporaryDirectory() + "/app/nested"
        let store = DefaultsStore(path: directory + "/suite.json")
        try store.set("dark", forKey: "theme")
        #expect(try mode(of: directory) == 0o700)
        #expect(try mode(of: (directory as NSString).deletingLastPathComponent) == 0o700)
        #expect(try mode(of: directory + "/suite.json") == 0o600)
        #expect(try mode(of: directory + "/suite.json.lock") == 0o600)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["suite.json", "suite.json.lock"]
        )
    }

    @Test("a batch in key order (a migration run's) adds, replaces, removes and refuses like any other")
    func sortedBatch() throws {
        let path = try temporaryDirectory() + "/suite.json"
        try bytes(#"{"b": 1, "d": [2], "f": "three", "h": 4}"#).write(to: URL(fileURLWithPath: path))
        let store = DefaultsStore(path: path)
        let results = try store.commit([
            StoreWrite(key: "a", value: bytes("0"), expectation: .unchanged(nil)),
            StoreWrite(key: "b", value: bytes("10"), expectation: .unchanged(bytes("1"))),
            StoreWrite(key: "d", value: bytes("20"), expectation: .unchanged(bytes("[3]"))),
            StoreWrite(key: "f", value: nil, expectation: .unchanged(bytes(#""three""#))),
            StoreWrite(key: "z", value: bytes("true"))
        ])
        #expect(results == [.applied, .applied, .conflict, .applied, .applied])
        #expect(
            try String(contentsOfFile: path, encoding: .utf8) == """
                {
                  "a": 0,
                  "b": 10,
                  "d": [2],
                  "h": 4,
                  "z": true
                }

                """)
    }

    @Test("writes one member per line with keys sorted, and keeps untouched values byte for byte")
    func documentLayout() throws {
        let path = try temporaryDirectory() + "/suite.json"
        try bytes(#"{"zeta": [1, 2,   3], "alpha" : {"x":true}}"#).write(to: URL(fileURLWithPath: path))
        let store = DefaultsStore(path: path)
        try store.set(7, forKey: "middle")
        #expect(
            try String(contentsOfFile: path, encoding: .utf8) == """
                {
                  "alpha": {"x":true},
                  "middle": 7,
                  "zeta": [1, 2,   3]
                }

                """)
        #expect(try store.data(forKey: "zeta") == bytes("[1, 2,   3]"))
    }

    @Test(
        "a corrupt document is an error naming the store, and is never overwritten",
        arguments: ["not json", "[1,2]", #"{"a":1,"a":2}"#, #"{"a":1} trailing"#, ""])
    func corruptDocument(_ contents: String) throws {
        let path = try temporaryDirectory() + "/suite.json"
        try bytes(contents).write(to: URL(fileURLWithPath: path))
        let store = DefaultsStore(path: path)
        for attempt in 0..<3 {
            do {
                switch attempt {
                case 0: _ = try store.keys()
                case 1: _ = try store.data(forKey: "a")
                default: try store.set(1, forKey: "b")
                }
                Issue.record("attempt \(attempt) did not throw")
            } catch {
                #expect(error.code == .corruptStore)
                #expect(error.store == "defaults:" + path)
                #expect(error.description.contains("left as it is"))
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes(contents))
    }

    @Test("a missing suite file reads as empty, and so does a missing directory")
    func missingFile() throws {
        let store = DefaultsStore(path: try temporaryDirectory() + "/nowhere/suite.json")
        #expect(try store.keys() == [])
        #expect(try store.data(forKey: "person") == nil)
    }

    @Test("plain values round-trip through the typed API")
    func plainValues() throws {
        let store = DefaultsStore(path: try temporaryDirectory() + "/suite.json")
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        try store.set("dark", forKey: "theme")
        try store.set(42, forKey: "launches")
        try store.set(true, forKey: "onboarded")
        try store.set(["a", "b"], forKey: "recent")
        try store.set(date, forKey: "lastSeen")
        #expect(try store.value(String.self, forKey: "theme") == "dark")
        #expect(try store.value(Int.self, forKey: "launches") == 42)
        #expect(try store.value(Bool.self, forKey: "onboarded") == true)
        #expect(try store.value([String].self, forKey: "recent") == ["a", "b"])
        #expect(try store.value(Date.self, forKey: "lastSeen") == date)
        #expect(try store.data(forKey: "lastSeen") == bytes(#""2023-11-14T22:13:20.500Z""#))
        #expect(try store.value(String.self, forKey: "absent") == nil)
        #expect { try store.value(Int.self, forKey: "theme") } throws: { error in
            (error as? KeepsakeError)?.code == .corruptRecord && (error as? KeepsakeError)?.key == "theme"
        }
    }

    @Test("records and plain values live side by side; a record read migrates and writes back")
    func recordsBesidePlainValues() throws {
        let path = try temporaryDirectory() + "/suite.json"
        try bytes(#"{"theme":"dark","person":"{\"name\":\"Ada\",\"age\":\"36\"}"}"#).write(
            to: URL(fileURLWithPath: path))
        let store = DefaultsStore(path: path)
        let context = MigrationContext.fixed(now: Date(), deviceIdentity: "d")
        let state = try Vault(store: store, context: context).load(Person.chain)
        #expect(state?.value == PersonV3(alias: "Ada", email: "---") && state?.storedVersion == 0)
        #expect(try store.value(String.self, forKey: "theme") == "dark")
        #expect(
            try store.data(forKey: "person")
                == bytes(#"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#))
    }

    @Test("bytes that are not one JSON value are refused before anything is written")
    func nonJSONValue() throws {
        let path = try temporaryDirectory() + "/suite.json"
        let store = DefaultsStore(path: path)
        #expect { try store.setData(bytes("hello"), forKey: "k") } throws: { error in
            (error as? KeepsakeError)?.code == .valueRefused
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("the default place is $XDG_CONFIG_HOME/<app>/<suite>.json, else ~/.config")
    func defaultPlace() throws {
        let xdg = try DefaultsStore(
            suite: "settings", app: "com.example.notes",
            environment: ["XDG_CONFIG_HOME": "/cfg", "HOME": "/home/u"])
        #expect(xdg.path == "/cfg/com.example.notes/settings.json")
        let home = try DefaultsStore(suite: "settings", app: "notes", environment: ["HOME": "/home/u"])
        #expect(home.path == "/home/u/.config/notes/settings.json")
        #expect(throws: KeepsakeError.self) { try DefaultsStore(suite: "../x", app: "a", environment: ["HOME": "/h"]) }
    }

    @Test("leftover temporary files of a crashed writer are removed by the next write")
    func leftovers() throws {
        let directory = try temporaryDirectory()
        let leftover = directory + "/.suite.json.tmp-crashed"
        try bytes("{}").write(to: URL(fileURLWithPath: leftover))
        try DefaultsStore(path: directory + "/suite.json").set(1, forKey: "a")
        #expect(!FileManager.default.fileExists(atPath: leftover))
    }

    @Test("a crashed writer's leftovers go on the first read when no writer holds the lock, and stay while one does")
    func leftoversRemovedOnRead() throws {
        let directory = try temporaryDirectory()
        let suite = directory + "/suite.json"
        try DefaultsStore(path: suite).set(1, forKey: "a")  // the suite and its lock file exist
        let leftover = directory + "/.suite.json.tmp-0123456789abcdef"  // e.g. the old document's rollback link

        // A writer holds the lock: a read leaves the leftover to it, and still reads.
        try bytes(#"{"a":0}"#).write(to: URL(fileURLWithPath: leftover))
        let fd = open(suite + ".lock", O_RDWR)
        #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        #expect(try DefaultsStore(path: suite).data(forKey: "a") == bytes("1"))
        #expect(FileManager.default.fileExists(atPath: leftover))
        close(fd)

        // No writer: the first read of a new instance removes it; the suite is untouched.
        #expect(try DefaultsStore(path: suite).keys() == ["a"])
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(try String(contentsOfFile: suite, encoding: .utf8).contains(#""a""#))
    }

    @Test("a read never creates the lock file")
    func readCreatesNoLockFile() throws {
        let directory = try temporaryDirectory()
        try bytes(#"{"a":1}"#).write(to: URL(fileURLWithPath: directory + "/suite.json"))
        #expect(try DefaultsStore(path: directory + "/suite.json").data(forKey: "a") == bytes("1"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/suite.json.lock"))
    }

    @Test("concurrent writers in one process lose no update")
    func concurrentWriters() async throws {
        let store = DefaultsStore(path: try temporaryDirectory() + "/suite.json")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<6 {
                group.addTask {
                    for index in 0..<10 { try store.set(index, forKey: "w\(writer)-\(index)") }
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.keys().count == 60)
    }

    @Test("a second process holding the lock makes a write wait, then time out, leaving the file as it was")
    func secondProcessHoldsLock() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/suite.json"
        let store = DefaultsStore(path: path, lockTimeout: .milliseconds(300))
        try store.set("before", forKey: "k")
        let holder = try LockHolder(lockPath: path + ".lock", signals: directory)
        defer { holder.release() }
        #expect(holder.holds, "the other process took the lock")
        #expect { try store.set("during", forKey: "k") } throws: { error in
            let error = error as? KeepsakeError
            return error?.code == .lockTimeout && error?.store == "defaults:" + path
        }
        #expect(try store.value(String.self, forKey: "k") == "before")
        holder.release()
        try store.set("after", forKey: "k")
        #expect(try store.value(String.self, forKey: "k") == "after")
    }

    @Test("a place the process may not write gives a permission error naming the store")
    func permissionDenied() throws {
        // sysfs refuses new files even to root, so this holds on CI too.
        let store = DefaultsStore(path: "/sys/keepsake-suite.json")
        #expect { try store.set(1, forKey: "a") } throws: { error in
            let error = error as? KeepsakeError
            return error?.code == .permissionDenied && error?.store == "defaults:/sys/keepsake-suite.json"
                && error?.errno == EACCES
        }
    }
}
