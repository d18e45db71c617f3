import Foundation
import Testing

@testable import Keepsake

/// What a run holds per record until its batch is written: its report (``RecordReports``) and
/// its write (``WriteBatch``), each at a fixed size, and each giving back exactly what went in.
@Suite("A run's reports and writes held compactly")
struct WriteBatchTests {
    /// Reports of every kind the compact form holds, and of the kinds it keeps whole.
    static let reports: [RecordReport] = [
        RecordReport(
            key: "a", schema: "Person", storedVersion: 0, latestVersion: 3, state: .outdated, form: .envelope,
            steps: [1, 2, 3]),
        RecordReport(key: "b", state: .unmanaged),
        RecordReport(
            key: "c-a-key-longer-than-fifteen-bytes", schema: "TrialInfo", storedVersion: 2, latestVersion: 2,
            state: .current, form: .inlineVersion, stringWrapped: true),
        // A stored version too large for the compact form: kept whole.
        RecordReport(
            key: "d", schema: "Person", storedVersion: 40_000, latestVersion: 3, state: .newer, form: .envelope),
        RecordReport(
            key: "e", schema: "Person", latestVersion: 3, state: .unreadable,
            error: KeepsakeError(.corruptRecord, store: "memory:x", key: "e", "bad")),
        RecordReport(key: "f", schema: "Other", storedVersion: -3, latestVersion: nil, state: .unmanaged),
        RecordReport(
            key: "g", schema: "Person", storedVersion: 0, latestVersion: 3, state: .migrated, form: .bare,
            steps: [1, 2, 3])
    ]

    @Test("reports read back as they were appended, at 32 bytes each when compact")
    func reportsRoundTrip() {
        #expect(RecordReports.compactStride == 32)
        var reports = RecordReports()
        for report in Self.reports { reports.append(report) }
        #expect(reports.count == Self.reports.count)
        for (position, report) in Self.reports.enumerated() {
            let read = reports[position]
            #expect(read.key == report.key)
            #expect(reports.key(at: position) == report.key)
            #expect(read.schema == report.schema)
            #expect(read.storedVersion == report.storedVersion, "\(report.key)")
            #expect(read.latestVersion == report.latestVersion)
            #expect(read.state == report.state)
            #expect(read.form == report.form)
            #expect(read.stringWrapped == report.stringWrapped)
            #expect(read.steps == report.steps)
            #expect(read.error?.message == report.error?.message)
            // The row a table prints: the same fields, read in place.
            let row = reports.row(at: position)
            #expect(row.key == report.key && row.schema == report.schema)
            #expect(row.storedVersion == report.storedVersion && row.latestVersion == report.latestVersion)
            #expect(row.state == report.state && row.form == report.form)
            #expect(row.stringWrapped == report.stringWrapped)
            #expect(row.whole?.error?.message == report.error?.message, "\(report.key)")
            let steps = row.whole?.steps ?? (row.stepList < 0 ? [] : reports.steps(ofList: row.stepList))
            #expect(steps == report.steps, "\(report.key)")
        }
        // Reports that took the same steps share one list number.
        let lists = Self.reports.indices.filter { Self.reports[$0].steps == [1, 2, 3] }.map { reports.row(at: $0) }
        #expect(lists.count >= 2 && Set(lists.map(\.stepList)).count == 1 && lists[0].stepList >= 0)
        reports.setState(.migrated, at: 0)
        reports.update(4) { $0.state = .outdated }
        #expect(reports[0].state == .migrated && reports[0].steps == [1, 2, 3])
        #expect(reports[4].state == .outdated && reports[4].error?.key == "e")
        #expect(reports.count(of: .unmanaged) == 2)
        #expect(reports.firstError?.key == "e")
    }

    @Test("a batch over several blocks gives back each write's key, bytes and expectation")
    func batchAcrossBlocks() {
        #expect(MemoryLayout<WriteBatch.Entry>.stride == 24)
        var reports = RecordReports()
        var batch = WriteBatch()
        var expected: [(key: String, value: Data, original: Data)] = []
        // Three blocks of unequal sizes, one of them empty, and a record written as zero bytes.
        for (block, size) in [5, 0, 1, 7].enumerated() {
            for index in 0..<size {
                let key = "k\(block)-\(index)"
                let value = Data((0...(index * 3 % 11)).map { UInt8(truncatingIfNeeded: $0 + block) })
                let original = Data("old \(key)".utf8)
                batch.append(index == 3 ? Data() : value, over: original, report: reports.count)
                reports.append(RecordReport(key: key, state: .outdated))
                expected.append((key, index == 3 ? Data() : value, original))
            }
            batch.endBlock()
        }
        Self.expectWrites(of: batch, keyedBy: reports, expected)

        // Keep every other write: the kept ones still give back their own bytes.
        batch.filter { $0 % 2 == 0 }
        let kept = Array(batch.writes(keyedBy: reports))
        #expect(kept.map(\.key) == expected.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.key))
        #expect(kept.map(\.value) == expected.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.value))

        // Emptied, the batch is reused for the next block from its start.
        batch.removeAll()
        #expect(batch.isEmpty)
        batch.append(Data("new".utf8), over: Data("old".utf8), report: 0)
        batch.endBlock()
        #expect(Array(batch.writes(keyedBy: reports)).map(\.value) == [Data("new".utf8)])

        // A batch of nothing but an empty value has no block at all, and still reads back.
        batch.removeAll()
        batch.append(Data(), over: Data("old".utf8), report: 1)
        batch.endBlock()
        #expect(Array(batch.writes(keyedBy: reports)).map(\.value) == [Data()])
    }

    @Test("the step lists a report names are the versions passed through, shared for small versions")
    func stepLists() {
        for from in -2..<20 {
            for to in (from + 1)..<22 {
                #expect(StepLists.steps(from: from, to: to) == Array((from + 1)...to), "\(from) → \(to)")
            }
        }
        // Shared: the same buffer every time, so a run's reports compare them by identity.
        let first = StepLists.steps(from: 0, to: 3)
        let second = StepLists.steps(from: 0, to: 3)
        first.withUnsafeBufferPointer { a in
            second.withUnsafeBufferPointer { b in #expect(a.baseAddress == b.baseAddress) }
        }
    }

    /// Expects `batch`'s writes to be `expected`, in order: each key, value and expectation, and
    /// each marked verified.
    static func expectWrites(
        of batch: WriteBatch, keyedBy reports: RecordReports,
        _ expected: [(key: String, value: Data, original: Data)], _ context: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let writes = batch.writes(keyedBy: reports)
        #expect(writes.count == expected.count, sourceLocation: sourceLocation)
        for (write, want) in zip(writes, expected) {
            #expect(write.key == want.key, sourceLocation: sourceLocation)
            #expect(write.value == want.value, "\(want.key) \(context)", sourceLocation: sourceLocation)
            #expect(write.expectation == .unchanged(want.original), sourceLocation: sourceLocation)
            #expect(write.valueIsVerified, sourceLocation: sourceLocation)
        }
    }

    /// A stream that keeps what it is given in memory and stops taking writes after `limit`.
    final class MemoryStream: RunStream {
        var bytes = Data("{header}".utf8)
        var appended: [(key: String, original: Data)] = []
        let limit: Int
        init(limit: Int) { self.limit = limit }
        func append(key: String, value: UnsafeRawBufferPointer, over original: Data) -> Range<Int>? {
            guard appended.count < limit else { return nil }
            appended.append((key, original))
            bytes.append(contentsOf: Array("\"\(key)\": ".utf8))
            let start = bytes.count
            bytes.append(contentsOf: value)
            return start..<bytes.count
        }
        func commit() throws(KeepsakeError) -> Bool { false }
        /// Hands the bytes back in chunks of `chunk`, so that writes span chunks.
        var chunk = 7
        func readBack(_ body: (_ chunk: UnsafeRawBufferPointer, _ offset: Int) -> Void) throws(KeepsakeError) {
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let end = min(raw.count, offset + chunk)
                    body(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), offset)
                    offset = end
                }
            }
        }
        func original(forKey key: String) -> Data? { appended.first { $0.key == key }?.original }
        func discard() {}
    }

    @Test(
        "writes streamed block by block, the stream stopping anywhere, give back each write's bytes once restored",
        arguments: [0, 1, 5, 9, 13, 100])
    func streamedBlocks(limit: Int) throws {
        var reports = RecordReports()
        var batch = WriteBatch()
        let stream = MemoryStream(limit: limit)
        var streaming = true
        var expected: [(key: String, value: Data, original: Data)] = []
        // Blocks of unequal sizes, one empty, one write of zero bytes; each block streamed when
        // it closes, while the stream takes writes.
        for (block, size) in [5, 0, 1, 7, 3].enumerated() {
            for index in 0..<size {
                let key = "k\(block)-\(index)"
                let value = index == 2 ? Data() : Data("new \(key) \(String(repeating: "x", count: index))".utf8)
                let original = Data("old \(key)".utf8)
                batch.append(value, over: original, report: reports.count)
                reports.append(RecordReport(key: key, state: .outdated))
                expected.append((key, value, original))
            }
            batch.endBlock()
            if streaming { streaming = batch.stream(into: stream, keyedBy: reports) }
        }
        #expect(streaming == (limit >= expected.count))
        #expect(stream.appended.map(\.key) == expected.prefix(limit).map(\.key))
        #expect(stream.appended.map(\.original) == expected.prefix(limit).map(\.original))
        try batch.restoreStreamed(from: stream, keyedBy: reports, store: "memory:test")
        Self.expectWrites(of: batch, keyedBy: reports, expected, "the stream stopping after \(limit)")
    }
    @Test("a stream that reads back short gives a typed error naming the store, and the batch is as it was")
    func shortReadBack() throws {
        var reports = RecordReports()
        var batch = WriteBatch()
        let stream = MemoryStream(limit: 100)
        for index in 0..<4 {
            batch.append(Data("new \(index)".utf8), over: Data("old \(index)".utf8), report: reports.count)
            reports.append(RecordReport(key: "k\(index)", state: .outdated))
        }
        batch.endBlock()
        let took = batch.stream(into: stream, keyedBy: reports)
        #expect(took)
        stream.bytes.removeLast(3)  // the last write's bytes cut short
        do {
            try batch.restoreStreamed(from: stream, keyedBy: reports, store: "memory:test")
            Issue.record("a short read-back was taken")
        } catch {
            #expect(error.code == .io && error.store == "memory:test")
        }
        stream.bytes.append(contentsOf: Array("w 3".utf8))
        try batch.restoreStreamed(from: stream, keyedBy: reports, store: "memory:test")
        #expect(batch.writes(keyedBy: reports).map(\.value) == (0..<4).map { Data("new \($0)".utf8) })
    }
}
