// libFuzzer target: arbitrary bytes as a defaults suite file. Reading it (keys, allData, one
// key's data) must end in values or a KeepsakeError; one write to it must either throw — leaving
// the file's bytes as they were — or succeed and re-read consistently: the written key holds the
// written bytes and every other key keeps its exact bytes. Any other behaviour traps.
import Foundation
import FuzzSupport
import Keepsake
import KeepsakeDefaults

private let directory: String = {
    let path = fuzzScratchPath("defaults")
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()
private let suite = directory + "/suite.json"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    writeWholeFile(suite, UnsafeRawBufferPointer(start: data, count: size))
    let written = Data(#"{"schema":"Person","version":3,"data":{"name":"fuzz"}}"#.utf8)
    let store = DefaultsStore(path: suite)

    let keys = try? store.keys()
    let before = try? store.allData()
    if let keys, let before {
        precondition(keys == before.map(\.key), "keys() and allData() disagree")
    }
    if let first = keys?.first {
        // A key the store refuses (empty, or holding NUL) may be in a suite; any other reads back.
        if let value = try? store.data(forKey: first) {
            precondition(value == before?.first?.data, "data(forKey:) and allData() disagree")
        } else {
            precondition(first.isEmpty || first.utf8.contains(0), "a listed key does not read")
        }
    }
    _ = try? store.data(forKey: "fuzz")

    // One write: to a key the suite has (replacing) or to a new one.
    let key = keys.flatMap { $0.count % 2 == 1 ? $0.first : nil } ?? "fuzz"
    do {
        let results = try store.commit([StoreWrite(key: key, value: written)])
        precondition(results == [.applied], "an unconditional write was not applied: \(results)")
        guard let before else { preconditionFailure("a write succeeded on a suite that could not be read") }
        let after: [(key: String, data: Data)]
        do { after = try store.allData() } catch { preconditionFailure("a written suite does not re-read: \(error)") }
        var expected = Dictionary(before.map { ($0.key, $0.data) }, uniquingKeysWith: { first, _ in first })
        expected[key] = written
        let actual = Dictionary(after.map { ($0.key, $0.data) }, uniquingKeysWith: { first, _ in first })
        precondition(after.count == actual.count, "the written suite holds a key twice")
        precondition(actual == expected, "the written suite does not hold what was there plus the write")
        precondition((try? store.data(forKey: key)) == written, "the written key does not read back")
    } catch {
        precondition(
            (readWholeFile(suite) ?? []).elementsEqual(UnsafeBufferPointer(start: data, count: size)),
            "a failed write changed the suite file")
    }
    return 0
}

runLibFuzzer(fuzz)
