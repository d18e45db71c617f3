import Foundation
import Keepsake
import KeepsakeDefaults
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The defaults store keeps the last parsed suite and reuses it while the file is provably the
/// same; another process changing the file in any way must be seen by the next read.
@Suite("Defaults store: the parsed-suite cache")
struct SuiteCacheTests {
    /// Runs `script` with `sh -c` in `directory`, as another process would change the suite.
    private func shell(_ script: String, in directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "sh -c \(script) failed")
    }

    private func status(_ path: String) throws -> stat {
        var info = stat()
        try #require(lstat(path, &info) == 0)
        return info
    }

    @Test("a same-size file another process renames over the suite is read at once")
    func replacedByRename() throws {
        let directory = try temporaryDirectory()
        let store = DefaultsStore(path: directory + "/suite.json")
        try store.set(1, forKey: "a")
        #expect(try store.value(Int.self, forKey: "a") == 1)
        #expect(try store.value(Int.self, forKey: "a") == 1)  // served from the cache
        let size = try status(directory + "/suite.json").st_size
        try shell(#"printf '{\n  "a": 2\n}\n' > next && mv next suite.json"#, in: directory)
        #expect(try status(directory + "/suite.json").st_size == size, "the replacement has the same size")
        #expect(try store.value(Int.self, forKey: "a") == 2)
        #expect(try store.keys() == ["a"])
    }

    @Test(
        "a settled suite rewritten in place with the same size and its old modification time restored is read again",
        .timeLimit(.minutes(1)))
    func rewrittenInPlaceWithOldTimes() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/suite.json"
        let store = DefaultsStore(path: path)
        try store.set(1, forKey: "a")
        // Let the version settle (its change time well before the read), so that the cache
        // may trust the file's identity alone from now on.
        Thread.sleep(forTimeInterval: Double(3))
        #expect(try store.value(Int.self, forKey: "a") == 1)
        #expect(try store.value(Int.self, forKey: "a") == 1)
        let before = try status(path)
        // Same inode, same size, the modification time set back to the very nanosecond: only
        // the status-change time tells this version apart.
        let mtime = "\(before.st_mtim.tv_sec).\(String(format: "%09ld", before.st_mtim.tv_nsec))"
        try shell(#"printf '{\n  "a": 3\n}\n' 1<> suite.json && touch -m -d @\#(mtime) suite.json"#, in: directory)
        let after = try status(path)
        #expect(after.st_ino == before.st_ino && after.st_size == before.st_size)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(try store.value(Int.self, forKey: "a") == 3)
    }

    @Test("a suite removed, or replaced by a corrupt one, is seen as such by the next read")
    func removedOrCorrupted() throws {
        let directory = try temporaryDirectory()
        let store = DefaultsStore(path: directory + "/suite.json")
        try store.set("x", forKey: "k")
        #expect(try store.value(String.self, forKey: "k") == "x")
        try shell("rm suite.json", in: directory)
        #expect(try store.data(forKey: "k") == nil)
        try store.set("y", forKey: "k")
        #expect(try store.value(String.self, forKey: "k") == "y")
        try shell(#"printf 'not json' > next && mv next suite.json"#, in: directory)
        let error = try #require(throws: KeepsakeError.self) { _ = try store.data(forKey: "k") }
        #expect(error.code == .corruptStore)
        #expect(try String(contentsOfFile: directory + "/suite.json", encoding: .utf8) == "not json")
    }

    @Test("two stores on one suite see each other's writes")
    func twoStores() throws {
        let path = try temporaryDirectory() + "/suite.json"
        let first = DefaultsStore(path: path)
        let second = DefaultsStore(path: path)
        try first.set(1, forKey: "a")
        #expect(try second.value(Int.self, forKey: "a") == 1)
        try second.set(2, forKey: "a")
        #expect(try first.value(Int.self, forKey: "a") == 2)
        try first.set(3, forKey: "b")
        #expect(try second.keys() == ["a", "b"])
    }
}

/// The defaults store validates values by skipping them without building strings where it can;
/// that fast path must refuse exactly what the full parser refuses.
@Suite("Defaults store: values validated without building them")
struct SkippedValueTests {
    static let refused: [String] = [
        #"{"a":1,"a":2}"#,  // plain duplicate names
        #"{"a":1,"\u0061":2}"#,  // the same name, once escaped
        #"{"é":1,"\u00e9":2}"#,  // the same non-ASCII name, once escaped
        // Past the small-object scan:
        "{" + (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + #","k3":0}"#,
        #"{"x":{"y":[{"z":1,"z":1}]}}"#,  // a duplicate deep inside
        "\"a\u{01}b\"",  // a control character in a string
        #""unterminated"#,
        #"["\x"]"#  // an invalid escape
    ]

    @Test("values the parser refuses are refused, with the store's bytes unchanged", arguments: refused)
    func refusesBadValues(_ text: String) throws {
        let path = try temporaryDirectory() + "/suite.json"
        let store = DefaultsStore(path: path)
        try store.set("kept", forKey: "other")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = try #require(throws: KeepsakeError.self) { try store.setData(Data(text.utf8), forKey: "k") }
        #expect(error.code == .valueRefused)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("invalid UTF-8 inside a value string is refused")
    func refusesInvalidUTF8() throws {
        let store = DefaultsStore(path: try temporaryDirectory() + "/suite.json")
        let bytes = Data([UInt8(ascii: "\""), 0xC3, 0x28, UInt8(ascii: "\"")])
        let error = try #require(throws: KeepsakeError.self) { try store.setData(bytes, forKey: "k") }
        #expect(error.code == .valueRefused)
    }

    @Test("values with plain, escaped and non-ASCII strings and many members are kept byte for byte")
    func keepsGoodValues() throws {
        let store = DefaultsStore(path: try temporaryDirectory() + "/suite.json")
        let values = [
            #"{"a":"plain","b":"esc\"aped\\","c":"café","\u0064":"d"}"#,
            "{" + (0..<40).map { #""k\#($0)":"v\#($0)""# }.joined(separator: ",") + "}",
            #"[{"x":{"y":[1,2,{"z":null}]}},true,false,-1.5e3]"#
        ]
        for (index, value) in values.enumerated() {
            try store.setData(Data(value.utf8), forKey: "v\(index)")
        }
        for (index, value) in values.enumerated() {
            #expect(try store.data(forKey: "v\(index)") == Data(value.utf8))
            #expect(try DefaultsStore(path: store.path).data(forKey: "v\(index)") == Data(value.utf8))
        }
    }
}
