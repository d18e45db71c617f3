import Foundation
import Keepsake
import Testing

@testable import KeepsakeDefaults

/// The suite indexer cuts a large document into parts parsed at once; whatever the cuts, its
/// result must be the one a single pass from the start gives.
@Suite("Suite indexing in parts: the same members and errors as one pass")
struct SuiteIndexerTests {
    /// A suite of `count` members as Keepsake writes one (`{\n  "key": value,\n  …\n}\n`),
    /// each value made by `value`.
    static func suite(_ count: Int, _ value: (Int) -> String) -> Data {
        var text = "{\n"
        for index in 0..<count {
            text += "  \"person-\(String(format: "%07d", index))\": \(value(index))"
            text += index == count - 1 ? "\n" : ",\n"
        }
        return Data((text + "}\n").utf8)
    }

    static func envelope(_ index: Int) -> String {
        #"{"data":{"age":"\#(20 + index % 60)","name":"Person \#(index)"},"schema":"Person","version":0}"#
    }

    static func same(_ first: [SuiteIndexer.Entry], _ second: [SuiteIndexer.Entry]) -> Bool {
        first.count == second.count && zip(first, second).allSatisfy { $0.key == $1.key && $0.range == $1.range }
    }

    static func error(_ body: () throws(JSONSyntaxError) -> [SuiteIndexer.Entry]) -> JSONSyntaxError? {
        do throws(JSONSyntaxError) {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("a suite as Keepsake writes it: cut at member starts, the same entries on 2, 3 and 8 threads")
    func keepsakeSuite() throws {
        let bytes = Self.suite(20_000, Self.envelope)
        #expect(bytes.count > SuiteIndexer.parallelThreshold)
        let starts = SuiteIndexer.partStarts(of: bytes, parts: 4)
        #expect(starts.count == 3)
        for start in starts {
            // Each cut is the opening quote of a member name, right after ",\n  ".
            #expect(bytes[bytes.startIndex + start] == UInt8(ascii: "\""))
            #expect(bytes[(bytes.startIndex + start - 4)..<(bytes.startIndex + start)] == Data(",\n  ".utf8))
        }
        let serial = try SuiteIndexer.members(of: bytes, threads: 1)
        #expect(serial.count == 20_000)
        #expect(serial.first?.key == "person-0000000" && serial.last?.key == "person-0019999")
        let last = try #require(serial.last)
        #expect(String(decoding: bytes[last.range], as: UTF8.self) == Self.envelope(19_999))
        for threads in [2, 3, 8] {
            #expect(Self.same(try SuiteIndexer.members(of: bytes, threads: threads), serial), "\(threads) threads")
        }
        // A slice of a larger buffer: ranges in the slice's own indices, as before.
        let padded = Data("xx".utf8) + bytes
        let slice = padded[padded.startIndex + 2..<padded.endIndex]
        let sliced = try SuiteIndexer.members(of: slice, threads: 2)
        #expect(sliced.map(\.key) == serial.map(\.key))
        #expect(slice[sliced[7].range] == bytes[serial[7].range])
    }

    @Test("cuts that land inside pretty-printed values are not taken: the same entries as one pass")
    func cutsInsideValues() throws {
        // Every value is an object printed over many lines whose members also follow ",\n  ":
        // most places the cutter finds are inside a value, not at a top-level member.
        let bytes = Self.suite(1_000) { index in
            "{\n" + (0..<40).map { "    \"field\($0)\": \"value \(index)-\($0)\"" }.joined(separator: ",\n  ") + "\n  }"
        }
        #expect(bytes.count > SuiteIndexer.parallelThreshold)
        // Some cuts are the name of a nested member (six spaces in), which no part may take.
        let starts = SuiteIndexer.partStarts(of: bytes, parts: 7)
        #expect(starts.contains { bytes[(bytes.startIndex + $0 - 6)..<(bytes.startIndex + $0)] == Data("      ".utf8) })
        let serial = try SuiteIndexer.members(of: bytes, threads: 1)
        #expect(serial.count == 1_000)
        for threads in [2, 4, 7] {
            #expect(Self.same(try SuiteIndexer.members(of: bytes, threads: threads), serial), "\(threads) threads")
        }
    }

    @Test("a document with no place to cut (one line) is read in one pass")
    func minified() throws {
        let bytes = Data(String(decoding: Self.suite(20_000, Self.envelope), as: UTF8.self).filter { $0 != "\n" }.utf8)
        #expect(SuiteIndexer.partStarts(of: bytes, parts: 2).isEmpty)
        #expect(
            Self.same(try SuiteIndexer.members(of: bytes, threads: 2), try SuiteIndexer.members(of: bytes, threads: 1)))
    }

    @Test(
        "an error anywhere is the error one pass throws: the same offset and reason",
        arguments: [0.1, 0.3, 0.5, 0.7, 0.95])
    func errors(at fraction: Double) throws {
        var bytes = Self.suite(20_000, Self.envelope)
        // Break the value of the member at `fraction` of the document: its version's digit.
        let member = Int(Double(20_000) * fraction)
        let entries = try SuiteIndexer.members(of: bytes, threads: 1)
        let value = entries[member].range
        let digit = try #require(bytes[value].lastIndex(of: UInt8(ascii: "0")))
        bytes[digit] = UInt8(ascii: "x")
        let serial = try #require(
            Self.error { () throws(JSONSyntaxError) in try SuiteIndexer.members(of: bytes, threads: 1) })
        #expect(serial.offset == digit)
        for threads in [2, 3, 8] {
            let parallel = Self.error { () throws(JSONSyntaxError) in
                try SuiteIndexer.members(of: bytes, threads: threads)
            }
            #expect(parallel?.offset == serial.offset && parallel?.reason == serial.reason, "\(threads) threads")
        }
    }

    @Test("a key written twice in a large suite is named where it occurs the second time")
    func duplicateKey() throws {
        var text = String(decoding: Self.suite(20_000, Self.envelope), as: UTF8.self)
        let second = try #require(text.range(of: "\"person-0015001\""))
        text.replaceSubrange(second, with: "\"person-0015000\"")
        let bytes = Data(text.utf8)
        let offset = text.utf8.distance(from: text.startIndex, to: second.lowerBound)
        #expect(try SuiteIndexer.members(of: bytes, threads: 2).count == 20_000, "indexing alone keeps both")
        let error = Self.error { () throws(JSONSyntaxError) in try DefaultsDocument.parse(bytes).entries }
        #expect(
            error?.offset == offset && error?.reason == "duplicate key 'person-0015000'", "\(String(describing: error))"
        )
    }

    @Test("a document cut short, or with data after it, fails as one pass fails")
    func truncatedAndTrailing() throws {
        let bytes = Self.suite(20_000, Self.envelope)
        for broken in [bytes.prefix(bytes.count - 3), bytes + Data(#"{"x":1}"#.utf8), bytes.prefix(bytes.count / 2)] {
            let serial = try #require(
                Self.error { () throws(JSONSyntaxError) in try SuiteIndexer.members(of: broken, threads: 1) })
            let parallel = Self.error { () throws(JSONSyntaxError) in try SuiteIndexer.members(of: broken, threads: 2) }
            #expect(parallel?.offset == serial.offset && parallel?.reason == serial.reason)
        }
    }
}
