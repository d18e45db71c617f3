import FileKit
import Foundation
import Keepsake
import Synchronization

@testable import KeepsakeSodium

#if canImport(Glibc)
import Glibc
#endif

/// A new empty private directory under the system temporary directory; the caller removes it.
func makeTemporaryDirectory() throws -> String {
    var template = Array(
        ((NSTemporaryDirectory() as NSString).appendingPathComponent("keepsake-sodium-XXXXXX")).utf8CString)
    guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed, errno \(errno)") }
    return String(cString: made)
}

/// A fresh private directory under the system temporary directory, removed afterwards.
func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let path = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }  // cleanup only: not a value under test
    return try body(path)
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Argon2id limits for tests: libsodium's minimum passes and a small but valid memory size,
/// so that a derivation takes about a millisecond. Never use these for real data.
let fastLimits = try! PassphraseLimits(opsLimit: 1, memLimit: 64 * 1024)

func passphrase(_ text: String) -> MasterKeySource {
    .passphrase(SecureBytes(copying: Array(text.utf8)), origin: "test")
}

/// A new key-file store in `directory/store`, its key file at `directory/store.key`.
func makeKeyFileStore(in directory: String, fileSystem: FileSystem = .live) throws -> SodiumFileStore {
    try SodiumFileStore.create(
        directory: directory + "/store", key: .keyFile(path: directory + "/store.key"),
        passphraseLimits: fastLimits, lockTimeout: .seconds(10),
        fileSystem: fileSystem, random: .system)
}

func reopen(_ directory: String, fileSystem: FileSystem = .live) throws -> SodiumFileStore {
    try SodiumFileStore(
        directory: directory + "/store", key: .keyFile(path: directory + "/store.key"),
        lockTimeout: .seconds(10), fileSystem: fileSystem, random: .system)
}

func readBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func listing(_ directory: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
}

/// The record file names in a store directory.
func recordFiles(_ directory: String) throws -> [String] {
    try listing(directory).filter { $0.hasSuffix(".ksr") }
}

/// The permission bits of `path` (`st_mode & 0o7777`).
func mode(_ path: String) throws -> mode_t {
    var info = stat()
    guard stat(path, &info) == 0 else { throw TestFailure("stat \(path): errno \(errno)") }
    return info.st_mode & 0o7777
}

/// Makes the `failAt`-th file step (counting from 1) fail with EIO, and records every step.
final class FaultPlan: Sendable {
    private let state = Mutex((count: 0, steps: [FileStep]()))
    let failAt: Int?

    init(failAt: Int?) { self.failAt = failAt }

    var fileSystem: FileSystem {
        FileSystem { [self] step in
            state.withLock { state -> Int32? in
                state.count += 1
                state.steps.append(step)
                return state.count == failAt ? EIO : nil
            }
        }
    }

    var steps: [FileStep] { state.withLock { $0.steps } }
    var fired: Bool { failAt.map { at in state.withLock { $0.count >= at } } ?? false }
}

/// Hands out fixed bytes in order: the deterministic hook the test vectors are made with.
final class ScriptedRandom: Sendable {
    private let queue: Mutex<[[UInt8]]>

    init(_ values: [[UInt8]]) { queue = Mutex(values) }

    var source: RandomSource {
        RandomSource(
            bytes: { [self] count in next(count) },
            secret: { [self] count in SecureBytes(copying: next(count)) })
    }

    var isEmpty: Bool { queue.withLock { $0.isEmpty } }

    private func next(_ count: Int) -> [UInt8] {
        queue.withLock { queue in
            precondition(!queue.isEmpty, "ScriptedRandom ran out of values")
            let value = queue.removeFirst()
            precondition(
                value.count == count, "ScriptedRandom: asked for \(count) bytes, next value has \(value.count)")
            return value
        }
    }
}

/// `count` bytes `start, start+1, …` (mod 256).
func counting(from start: UInt8, count: Int) -> [UInt8] {
    (0..<count).map { start &+ UInt8(truncatingIfNeeded: $0) }
}

extension KeepsakeError.Cause {
    var isLibrary: Bool {
        if case .library = self { return true }
        return false
    }
}

/// Makes a FIFO at `path` (mode 0600). Five seconds later a writer opens it and closes it at
/// once, so that code wrongly blocked reading it is released — and then fails the test's
/// expectations — instead of hanging the test run.
func makeFIFO(_ path: String) throws {
    guard mkfifo(path, 0o600) == 0 else { throw TestFailure("mkfifo \(path): errno \(errno)") }
    Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 5)
        let fd = open(path, O_WRONLY | O_NONBLOCK)  // ENXIO when nobody reads: nothing to release
        if fd >= 0 { close(fd) }
    }
}

/// Writes a key file as a careful user would: `bytes`, mode 0600 (a key file others may read is refused).
func writeKeyFile(_ bytes: [UInt8], to path: String) throws {
    try writeBytes(bytes, to: path)
    guard chmod(path, 0o600) == 0 else { throw TestFailure("chmod \(path): errno \(errno)") }
}

/// Runs `body` on a thread of its own and waits for it without blocking a cooperative thread:
/// for tests whose threads block (locks, waits), so that Swift Testing's pool is not starved.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
