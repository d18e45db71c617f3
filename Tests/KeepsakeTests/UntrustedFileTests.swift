import Foundation
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Testing

@testable import Keepsake

/// Untrusted files: anything but a regular file is refused at once, and parsing stays linear.
@Suite("Untrusted files and sizes")
struct UntrustedFileTests {
    /// The error `body` throws, which must be a ``KeepsakeError``.
    func keepsakeError(_ body: () throws -> Void) -> KeepsakeError? {
        do {
            try body()
            return nil
        } catch {
            return error as? KeepsakeError
        }
    }

    @Test("a FIFO at the suite path is refused at once with invalidArgument, for reads and writes")
    func fifoSuite() throws {
        let path = try temporaryDirectory() + "/suite.json"
        try makeFIFO(path)
        let store = DefaultsStore(path: path)
        for attempt in [
            { _ = try store.keys() }, { _ = try store.data(forKey: "k") },
            { try store.setData(bytes("1"), forKey: "k") }, { _ = try store.allRecords() }
        ] {
            let error = keepsakeError(attempt)
            #expect(error?.code == .invalidArgument)
            #expect(error?.store == store.uri)
            #expect(error?.cause == .other("it is a FIFO, not a regular file"))
        }
        var info = stat()
        #expect(lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO, "the FIFO is left as it is")
    }

    @Test("a directory or a character device at the suite path is refused the same way")
    func otherKinds() throws {
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/suite.json", withIntermediateDirectories: false)
        #expect(
            keepsakeError { _ = try DefaultsStore(path: directory + "/suite.json").keys() }?.cause
                == .other("it is a directory, not a regular file"))
        #expect(
            keepsakeError { _ = try DefaultsStore(path: "/dev/zero").keys() }?.cause
                == .other("it is a character device, not a regular file"))
    }

    @Test("a status over a plain value of 100k members is linear: it is parsed once and reported unmanaged")
    func hugePlainValue() throws {
        var members: [String] = []
        for index in 0..<100_000 { members.append("\"k\(index)\":\(index)") }
        let blob = bytes("{" + members.joined(separator: ",") + "}")
        let store = InMemoryStore(contents: ["blob": blob, "person": bytes(#"{"name":"Ada","age":"36"}"#)])
        let reports = try Migrator(store: store, chains: SampleModels.all, context: .fixed(now: Date())).plan()
        #expect(reports.map(\.state) == [.unmanaged, .outdated])
        #expect(try store.data(forKey: "blob") == blob)
    }

    @Test("a record of 100k fields is unreadable with a message of a few lines, and a late duplicate is found")
    func hugeRecord() throws {
        var members: [String] = []
        for index in 0..<100_000 { members.append("\"k\(index)\":\(index)") }
        let outcome = Person.chain.outcome(
            of: bytes("{" + members.joined(separator: ",") + "}"), context: .fixed(now: Date()))
        #expect(outcome.error?.code == .unrecognisedRecord)
        #expect((outcome.error?.message.count ?? .max) < 1000)
        #expect(outcome.error?.message.contains("(99980 more)") == true)
        let duplicated = bytes("{" + members.joined(separator: ",") + ",\"k5\":0}")
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(duplicated) }
    }

    @Test("fields of a large object are found by name: decoding a 100k-entry dictionary reads every entry")
    func largeDictionary() throws {
        struct Counts: Decodable { let counts: [String: Int] }
        var members: [String] = []
        for index in 0..<100_000 { members.append("\"k\(index)\":\(index)") }
        let value = try JSONParser.parse(bytes(#"{"counts":{"# + members.joined(separator: ",") + "}}"))
        let decoded = try JSONValueDecoder.decode(Counts.self, from: value)
        #expect(decoded.counts.count == 100_000)
        #expect(decoded.counts["k99999"] == 99_999)
    }
}
