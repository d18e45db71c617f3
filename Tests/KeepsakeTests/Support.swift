import Foundation
import Keepsake

/// The committed fixtures folder.
let fixturesURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

/// The context every fixture was generated with.
let fixtureContext = MigrationContext.fixed(
    now: Date(timeIntervalSince1970: 1_763_700_000), deviceIdentity: "fixture-device", identifierPrefix: "fixture-id")

/// 700000000.123 seconds after 2001-01-01, the start date in every TrialInfo fixture.
let fixtureStartDate = Date(timeIntervalSinceReferenceDate: 700_000_000.123)

func bytes(_ text: String) -> Data { Data(text.utf8) }

/// A new empty directory under the system's temporary directory.
func temporaryDirectory(_ function: String = #function) throws -> String {
    let base = FileManager.default.temporaryDirectory.path + "/keepsake-tests"
    try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
    let template = base + "/" + function.filter { $0.isLetter || $0.isNumber } + ".XXXXXX"
    var buffer = Array(template.utf8CString)
    guard mkdtemp(&buffer) != nil else { throw CocoaError(.fileWriteUnknown) }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The file mode bits of `path`.
func mode(of path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? Int) ?? -1
}

/// Another process holding `lockPath` with `flock(1)` until ``release()``: how a second writer
/// of a defaults suite looks to this one.
final class LockHolder {
    private let process = Process()
    private let signals: String

    /// Starts the holder and waits until it has the lock.
    init(lockPath: String, signals directory: String) throws {
        signals = directory
        process.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        process.arguments = [
            lockPath, "-c",
            "touch '\(directory)/held'; while [ ! -e '\(directory)/release' ]; do sleep 0.02; done"
        ]
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: directory + "/held") && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Whether the other process took the lock.
    var holds: Bool { FileManager.default.fileExists(atPath: signals + "/held") }

    /// Lets the holder go and waits for it to exit.
    func release() {
        _ = FileManager.default.createFile(atPath: signals + "/release", contents: nil)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { release() } }
}

/// Makes a FIFO at `path` (mode 0600). Five seconds later a writer opens it and closes it at
/// once, so that code wrongly blocked reading it is released — and then fails the test's
/// expectations — instead of hanging the test run.
func makeFIFO(_ path: String) throws {
    guard mkfifo(path, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown) }
    Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 5)
        let fd = open(path, O_WRONLY | O_NONBLOCK)  // ENXIO when nobody reads: nothing to release
        if fd >= 0 { close(fd) }
    }
}
