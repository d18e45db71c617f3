import Foundation
import KeepsakeTesting
import Testing

/// A hundred thousand records of one model, under keys an older release chose (`tenant-…`),
/// reached by one pattern: `status` and `run` stream them, and what they cost in memory is
/// printed beside the records' size.
@Suite("migrate over a hundred thousand records of one model")
struct ManyRecordsCLITests {
    static let count = 100_000

    @Test("status and run --model 'tenant-*=Person' migrate 100,000 bare V0 records of a defaults suite")
    func hundredThousandTenants() throws {
        var text = "{"
        text.reserveCapacity(Self.count * 48)
        for index in 0..<Self.count {
            if index > 0 { text += ",\n" }
            let key = "tenant-" + String(100_000 + index).dropFirst()
            text += #""\#(key)":{"name":"T\#(index)","age":"\#(index % 90)"}"#
        }
        text += "}"
        let suite = try Suite(text)
        let dataSize = text.utf8.count
        let migrate = BuiltExecutable(path: migrateBinary)
        let empty = try Suite(#"{"tenant-0":{"name":"T","age":"1"}}"#)
        let base = try migrate.runMeasuringPeakMemory(
            ["status", "--store", empty.store, "--device-id", "test-device", "--model", "tenant-*=Person"])
        #expect(base.result.status == 0, "\(base.result.stderr)")

        let status = try migrate.runMeasuringPeakMemory(
            ["status", "--store", suite.store, "--device-id", "test-device", "--model", "tenant-*=Person"])
        #expect(status.result.status == 0, "\(status.result.stderr)")
        #expect(status.result.stdout.hasSuffix("\(Self.count) outdated\n"))
        #expect(!status.result.stdout.contains("no model"))
        #expect(status.result.stdout.split(separator: "\n").count == Self.count + 3)  // store, header, summary
        // The table is measured and built on every core, a window of rows at a time: every record
        // has its row, in key order, each column where the header puts it.
        let lines = status.result.stdout.split(separator: "\n").map { Array($0.utf8) }
        let header = lines[1]
        let modelColumn = (0..<header.count).first { Array(header[$0...].prefix(5)) == Array("MODEL".utf8) }
        let stateColumn = (0..<header.count).first { Array(header[$0...].prefix(5)) == Array("STATE".utf8) }
        var misplaced: [Int] = []
        for index in 0..<Self.count {
            let line = lines[index + 2]
            let key = Array(("tenant-" + String(100_000 + index).dropFirst()).utf8)
            guard let modelColumn, let stateColumn, line.starts(with: key),
                line.count > stateColumn,
                Array(line[modelColumn...].prefix(6)) == Array("Person".utf8),
                Array(line[stateColumn...].prefix(8)) == Array("outdated".utf8)
            else {
                misplaced.append(index)
                continue
            }
        }
        #expect(misplaced.isEmpty, "rows out of place: \(misplaced.prefix(5))")

        let run = try migrate.runMeasuringPeakMemory(
            ["run", "--store", suite.store, "--device-id", "test-device", "--model", "tenant-*=Person"])
        #expect(run.result.status == 0, "\(run.result.stderr)")
        #expect(run.result.stdout.hasSuffix("\(Self.count) migrated\n"), "\(run.result.stdout.suffix(300))")
        let stored = suite.contents
        let migratedSize = stored.utf8.count
        #expect(stored.components(separatedBy: #""schema":"Person","version":3}"#).count - 1 == Self.count)
        #expect(
            stored.contains(#""tenant-54321": {"data":{"alias":"T54321","email":"---"},"schema":"Person","version":3}"#)
        )

        let mib = { (kib: Int) in String(format: "%.1f MiB", Double(kib) / 1024) }
        print(
            """
            \(Self.count) records, \(mib(dataSize / 1024)) of JSON (\(mib(migratedSize / 1024)) migrated); \
            migrate's own base \(mib(base.peakKiB)); \
            status peak \(mib(status.peakKiB)) (\(mib(status.peakKiB - base.peakKiB)) above base), \
            run peak \(mib(run.peakKiB)) (\(mib(run.peakKiB - base.peakKiB)) above base)
            """)
        // Status holds the suite as read, its sorted index and a compact report per record (about
        // 3× the suite in a debug build); run also the migrated records and the suite as written:
        // each within 3× what those records take, give or take a MiB of the allocator's.
        #expect(status.peakKiB - base.peakKiB <= 3 * dataSize / 1024 + 1024, "status held more than 3× the records")
        #expect(
            run.peakKiB - base.peakKiB <= 3 * (dataSize + migratedSize) / 1024 + 1024,
            "run held more than 3× the records read and written")
    }
}
