// libFuzzer target: arbitrary bytes as a defaults suite file. Reading it (keys, allData, one
// key's data) must end in values or a KeepsakeError; one write to it must either throw — leaving
// the file's bytes as they were — or succeed and re-read consistently: the written key holds the
// written bytes and every other key keeps its exact bytes. Any other behaviour traps.
import Foundation
import Keepsake

/// One private directory per process, under KEEPSAKE_FUZZ_TMP (scripts/fuzz makes one and removes it)
/// or else on tmpfs when there is one (every commit fsyncs).
private let directory: String = {
    let base = ProcessInfo.processInfo.environment["KEEPSAKE_FUZZ_TMP"]
        ?? (FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory())
    let path = "\(base)/keepsake-fuzz-defaults-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()
private let suite = directory + "/suite.json"

/// The suite file's bytes, read with plain system calls (Foundation's file reading leaks a
/// buffer on an empty file, which LeakSanitizer would report as the store's).
private func readSuite() -> [UInt8] {
    let fd = open(suite, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return bytes }
        bytes += buffer[0..<count]
    }
}

private func writeSuite(_ data: UnsafePointer<UInt8>, _ size: Int) {
    let fd = open(suite, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0, "cannot create the suite file")
    var done = 0
    while done < size {
        let count = write(fd, data + done, size - done)
        precondition(count > 0, "cannot write the suite file")
        done += count
    }
    close(fd)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    writeSuite(data, size)
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
        precondition(readSuite().elementsEqual(UnsafeBufferPointer(start: data, count: size)),
                     "a failed write changed the suite file")
    }
    return 0
}

// SwiftPM links an executable target's top-level code as `main`, which shadows libFuzzer's own
// `main`; so the top-level code hands over to libFuzzer's driver itself.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runDriver(&argc, &argv, fuzz))
