import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeTrial
import Migrations
import Synchronization
import Testing

/// Runs `body(0..<count)` on `count` threads of their own, started together, and waits for all.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        group.enter()
        Thread {
            start.wait()
            body(index)
            group.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
}

/// The built `migrate` binary beside this test bundle.
private let migrateExecutable: String = {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        directory = URL(fileURLWithPath: resolved).deletingLastPathComponent()
    }
    for _ in 0..<3 {
        let candidate = directory.appendingPathComponent("migrate").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory.deleteLastPathComponent()
    }
    return "migrate-binary-not-found"
}()

/// A store that throws `error` from its first `failures` commits, then behaves as `base`.
private final class FlakyStore: RecordStore, Sendable {
    let base = InMemoryStore()
    let error: KeepsakeError.Code
    private let left: Mutex<Int>
    let commits = Mutex(0)
    init(failing failures: Int, with error: KeepsakeError.Code) {
        self.error = error
        left = Mutex(failures)
    }
    var uri: String { "memory:flaky" }
    var capabilities: StoreCapabilities { [.survivesReinstall] }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        commits.withLock { $0 += 1 }
        let fails = left.withLock {
            guard $0 > 0 else { return false }
            $0 -= 1
            return true
        }
        if fails { throw KeepsakeError(error, store: uri, key: writes.first?.key, "failed on purpose") }
        return try base.commit(writes)
    }
}

@Suite("Trial guard: many launches start one trial")
struct TrialConcurrencyTests {
    /// The `startDate` text of the TrialInfo V2 record stored under `trialInfo`.
    static func storedStart(_ store: any RecordStore) throws -> String? {
        guard let bytes = try store.data(forKey: "trialInfo") else { return nil }
        let record = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
        let data = try #require(record["data"] as? [String: Any])
        return data["startDate"] as? String
    }

    /// `2026-01-31T12:00:00.123456Z` (UTC, any number of fraction digits) as a date.
    static func date(_ text: String) -> Date? {
        let parts = text.dropLast().split(separator: ".", maxSplits: 1)
        guard text.hasSuffix("Z"), let whole = ISO8601DateFormatter().date(from: String(parts[0]) + "Z") else {
            return nil
        }
        let fraction = parts.count == 2 ? Double("0." + parts[1]) : 0
        return fraction.map { whole.addingTimeInterval($0) }
    }

    func workspace() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keepsake-trial-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    /// 8 threads start a trial on `store`, each with its own clock a millisecond apart: all
    /// report the same start, and that is the start stored.
    func startOnThreads(_ store: any RecordStore) throws {
        let statuses = Mutex<[TrialStatus]>([])
        onThreads(8) { launch in
            let trial = TrialGuard(
                store: store, length: .days(14), deviceIdentity: "device-\(launch)",
                clock: { Date().addingTimeInterval(Double(launch) / 1000) })
            let status = trial.start()
            statuses.withLock { $0.append(status) }
        }
        let starts = statuses.withLock { $0 }.map { status -> Date? in
            guard case let .active(active) = status else { return nil }
            return active.start
        }
        #expect(starts.count == 8 && starts.allSatisfy { $0 != nil }, "\(statuses.withLock { $0 })")
        #expect(Set(starts).count == 1, "\(starts)")
        let stored = try #require(try Self.storedStart(store))
        let storedDate = try #require(Self.date(stored))
        let reported = try #require(starts.first ?? nil)
        #expect(abs(reported.timeIntervalSince(storedDate)) < 1e-5, "reported \(reported), stored \(stored)")
    }

    @Test("8 threads on an in-memory store")
    func threadsInMemory() throws {
        for _ in 0..<5 { try startOnThreads(InMemoryStore()) }
    }

    @Test("8 threads on a defaults store")
    func threadsDefaults() throws {
        let directory = try workspace()
        defer { try? FileManager.default.removeItem(atPath: directory) }  // scratch files only
        for round in 0..<5 { try startOnThreads(DefaultsStore(path: directory + "/suite-\(round).json")) }
    }

    /// 4 `migrate trial start` processes at once on `store`: all exit 0 with one start, the
    /// start stored (printed to the millisecond).
    func startInProcesses(_ store: String, _ options: [String] = []) throws -> [String] {
        let outputs = Mutex<[Int: (Int32, String, String)]>([:])
        onThreads(4) { launch in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: migrateExecutable)
            process.arguments =
                ["trial", "start", "--store", store, "--json", "--device-id", "device-\(launch)"] + options
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            process.standardInput = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                outputs.withLock { $0[launch] = (-1, "", "\(error)") }
                return
            }
            let out = output.fileHandleForReading.readDataToEndOfFile()
            let err = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            outputs.withLock {
                $0[launch] = (
                    process.terminationStatus, String(decoding: out, as: UTF8.self),
                    String(decoding: err, as: UTF8.self)
                )
            }
        }
        var starts: [String] = []
        for (launch, (status, stdout, stderr)) in outputs.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            #expect(status == 0, "launch \(launch): \(stdout) \(stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any]
            #expect(json?["state"] as? String == "active", "launch \(launch): \(stdout)")
            if let start = json?["startDate"] as? String { starts.append(start) }
        }
        #expect(starts.count == 4 && Set(starts).count == 1, "\(starts)")
        return starts
    }

    @Test("4 migrate processes on a defaults store")
    func processesDefaults() throws {
        let directory = try workspace()
        defer { try? FileManager.default.removeItem(atPath: directory) }  // scratch files only
        for round in 0..<3 {
            let path = directory + "/suite-\(round).json"
            let starts = try startInProcesses("defaults:" + path)
            let stored = try #require(try Self.storedStart(DefaultsStore(path: path)))
            #expect(starts.first == String(stored.prefix(23)) + "Z", "stored \(stored)")
        }
    }

    @Test("4 migrate processes on an encrypted file store")
    func processesFileStore() throws {
        let directory = try workspace()
        defer { try? FileManager.default.removeItem(atPath: directory) }  // scratch files only
        let key = ["--key-file", directory + "/records.key"]
        let store = "file:\(directory)/records"
        let created = Process()
        created.executableURL = URL(fileURLWithPath: migrateExecutable)
        created.arguments = ["init", "--store", store] + key
        created.standardInput = FileHandle.nullDevice
        created.standardOutput = FileHandle.nullDevice
        try created.run()
        created.waitUntilExit()
        try #require(created.terminationStatus == 0)
        let starts = try startInProcesses(store, key)
        // What is stored, read back by a fifth process.
        let status = Process()
        status.executableURL = URL(fileURLWithPath: migrateExecutable)
        status.arguments = ["trial", "status", "--store", store, "--json"] + key
        let output = Pipe()
        status.standardOutput = output
        status.standardInput = FileHandle.nullDevice
        try status.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        status.waitUntilExit()
        let json = try JSONSerialization.jsonObject(with: text) as? [String: Any]
        #expect(json?["startDate"] as? String == starts.first, "\(String(decoding: text, as: UTF8.self))")
    }

    @Test("a start that times out, or finds the lock held, is tried again and starts the trial")
    func transientFailuresRetried() throws {
        for code in [KeepsakeError.Code.timeout, .lockTimeout, .io] {
            let store = FlakyStore(failing: TrialGuard.startAttempts - 1, with: code)
            let now = Date(timeIntervalSince1970: 1_763_700_000)
            let trial = TrialGuard(store: store, length: .days(14), deviceIdentity: "d", clock: { now })
            guard case let .active(active) = trial.start() else {
                Issue.record("\(code.rawValue): not active")
                continue
            }
            #expect(active.start == now)
            #expect(try Self.storedStart(store) == "2025-11-21T04:40:00.000Z")
        }
    }

    @Test("a failure that persists is unknown after a bounded number of tries, and nothing is stored")
    func persistentFailureUnknown() throws {
        let store = FlakyStore(failing: 100, with: .timeout)
        let trial = TrialGuard(store: store, length: .days(14), deviceIdentity: "d")
        guard case let .unknown(error) = trial.start() else {
            Issue.record("not unknown")
            return
        }
        #expect(error.code == .timeout)
        #expect(store.commits.withLock { $0 } == TrialGuard.startAttempts)
        #expect(try store.keys() == [])

        // A locked store is not retried: it will not pass on its own.
        let locked = FlakyStore(failing: 100, with: .locked)
        guard case .unknown = TrialGuard(store: locked, length: .days(14), deviceIdentity: "d").start() else {
            Issue.record("not unknown")
            return
        }
        #expect(locked.commits.withLock { $0 } == 1)
    }
}
