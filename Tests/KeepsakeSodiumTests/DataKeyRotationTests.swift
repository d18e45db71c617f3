import Foundation
import Keepsake
import Synchronization
import Testing

@testable import KeepsakeSodium

/// The file store's data key rotation (`docs/FORMAT.md` §6.1) on real files: a new data key
/// while other instances of the store keep reading and writing, every record sealed again, the
/// old key dropped from the header.
@Suite("Data key rotation")
struct DataKeyRotationTests {
    private func value(_ index: Int) -> Data { Data("value-\(index)".utf8) }

    private func seed(_ store: SodiumFileStore, count: Int) throws {
        let writes = (0..<count).map { StoreWrite(key: "r\($0)", value: value($0), expectation: .anything) }
        #expect(try store.commit(writes).allSatisfy { $0 == .applied })
    }

    /// Format version and generation a record file says it was sealed with.
    private func label(_ path: String) throws -> (version: UInt16, generation: UInt32?) {
        let bytes = try readBytes(path)
        let version = UInt16(bytes[8]) | UInt16(bytes[9]) << 8
        return (version, RecordFile.generation(of: bytes))
    }

    private func code(_ body: () throws -> Void) -> (KeepsakeError.Code, String)? {
        do {
            try body()
            return nil
        } catch let error as KeepsakeError {
            return (error.code, error.message)
        } catch {
            return nil
        }
    }

    @Test("A rotation while another instance writes and reads: every record exact, one data key left")
    func rotation() throws {
        try withTemporaryDirectory { directory in
            let rotator = try makeKeyFileStore(in: directory)
            try seed(rotator, count: 40)
            let other = try reopen(directory)  // opened before the rotation: holds generation 1 only
            let path = directory + "/store"
            let oldHeader = try readBytes(path + "/keepsake.header")
            #expect(oldHeader.count == 200)
            let r0File = path + "/" + rotator.subkeys.fileName(of: "r0")
            let r0Before = try readBytes(r0File)
            #expect(try label(r0File) == (1, 1))

            #expect(try rotator.beginDataKeyRotation() == 2)
            #expect(try readBytes(path + "/keepsake.header").count == 208 + 2 * 36)
            #expect(try rotator.beginDataKeyRotation() == 2)  // under way: resumed, no third key
            #expect(try readBytes(path + "/keepsake.header").count == 208 + 2 * 36)

            // The other instance's next write reads the new header under the lock.
            #expect(
                try other.commit([StoreWrite(key: "new", value: Data("n".utf8), expectation: .anything)]) == [.applied])
            #expect(try label(path + "/" + other.subkeys.fileName(of: "new")) == (2, 2))
            let census = try rotator.keyCensus()
            #expect(
                census.entries == [
                    KeyCensus.Entry(keyID: "generation 1", count: 40, role: .previous),
                    KeyCensus.Entry(keyID: "generation 2", count: 1, role: .primary)
                ])

            let progress = Mutex([ResealProgress]())
            let report = try rotator.reseal(batchSize: 7) { step in progress.withLock { $0.append(step) } }
            #expect(report.resealed == 40)
            #expect(report.unreadable == 0)
            #expect(report.retired == ["generation 1"])
            #expect(report.census.entries == [KeyCensus.Entry(keyID: "generation 2", count: 41, role: .primary)])
            #expect(progress.withLock { $0.map(\.done) } == [7, 14, 21, 28, 35, 41])
            #expect(try readBytes(path + "/keepsake.header").count == 208 + 36)
            #expect(try label(r0File) == (2, 2))
            #expect(try readBytes(r0File) != r0Before)

            // Every instance reads every record exactly: the other one learns generation 2 from
            // the header when it first meets it.
            for store in [rotator, other, try reopen(directory)] {
                for index in 0..<40 { #expect(try store.data(forKey: "r\(index)") == value(index)) }
                #expect(try store.data(forKey: "new") == Data("n".utf8))
            }
            let again = try reopen(directory).reseal(batchSize: 7, progress: nil)
            #expect(again.resealed == 0 && again.retired.isEmpty && again.isComplete)

            // A copy of the old header opens the store, but not what was sealed since.
            let newHeader = try readBytes(path + "/keepsake.header")
            try writeBytes(oldHeader, to: path + "/keepsake.header")
            let stale = try reopen(directory)
            let failure = code { _ = try stale.data(forKey: "r0") }
            #expect(failure?.0 == .corruptRecord)
            #expect(failure?.1.contains("generation 2") == true)
            try writeBytes(newHeader, to: path + "/keepsake.header")

            // A file sealed by the retired key is refused by name, left as it is, and blocks nothing.
            try writeBytes(r0Before, to: r0File)
            let fresh = try reopen(directory)
            let retired = code { _ = try fresh.data(forKey: "r0") }
            #expect(retired?.0 == .wrongKey)
            #expect(retired?.1.contains("generation 1") == true)
            let blocked = try fresh.reseal(batchSize: 100, progress: nil)
            #expect(blocked.unreadable == 1)
            #expect(blocked.unreadableKeys == [rotator.subkeys.fileName(of: "r0")])
            #expect(
                blocked.census.entries.contains(KeyCensus.Entry(keyID: "generation 1", count: 1, role: .unknown)))
            #expect(try readBytes(r0File) == r0Before)
        }
    }

    @Test(
        "A master key change in the middle of a rotation keeps both data keys; the rotation ends under the new master key"
    )
    func masterKeyChangeMidway() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try seed(store, count: 12)
            try store.beginDataKeyRotation()
            try store.changeMasterKey(to: .keyFile(path: directory + "/new.key"))
            #expect(try readBytes(directory + "/store/keepsake.header").count == 208 + 2 * 36)
            let report = try store.reseal(batchSize: 5, progress: nil)
            #expect(report.resealed == 12 && report.isComplete && report.retired == ["generation 1"])
            let reopened = try SodiumFileStore(
                directory: directory + "/store", key: .keyFile(path: directory + "/new.key"))
            for index in 0..<12 { #expect(try reopened.data(forKey: "r\(index)") == value(index)) }
            #expect(code { _ = try reopen(directory) }?.0 == .wrongKey)
        }
    }

    @Test("A passphrase store rotates and reopens with its passphrase")
    func passphraseStore() throws {
        try withTemporaryDirectory { directory in
            let store = try SodiumFileStore.create(
                directory: directory + "/store", key: passphrase("correct horse"), passphraseLimits: fastLimits)
            try seed(store, count: 3)
            try store.beginDataKeyRotation()
            #expect(try store.reseal(batchSize: 2, progress: nil).isComplete)
            let reopened = try SodiumFileStore(directory: directory + "/store", key: passphrase("correct horse"))
            for index in 0..<3 { #expect(try reopened.data(forKey: "r\(index)") == value(index)) }
            #expect(
                code { _ = try SodiumFileStore(directory: directory + "/store", key: passphrase("wrong")) }?.0
                    == .wrongKey)
        }
    }

    /// What the concurrent run saw, checked once it is over.
    private struct Run: Sendable {
        var failures: [String] = []
        var reads = 0
        var report: ResealReport?
        var counts: [Data?] = []
        /// Updates each writer made; each writer goes on until the rotation is over.
        var made = [0, 0, 0]
        var seededExact = false
        var rerun: ResealReport?
    }

    /// Runs `body` on a thread of its own and awaits it: the test's waits block that thread,
    /// never one of the few threads Swift concurrency shares among the tests that run meanwhile.
    @Test("Three writer instances and a reader while a fourth rotates: no write lost, no read fails")
    func concurrentWritersAndReader() async throws {
        let records = 200
        let updates = 25
        let run = try await onThread {
            try withTemporaryDirectory { directory in
                let seeder = try makeKeyFileStore(in: directory)
                let writes = (0..<records).map {
                    StoreWrite(key: "r\($0)", value: value($0), expectation: .anything)
                }
                _ = try seeder.commit(writes)
                let writers = try (0..<3).map { _ in try reopen(directory) }
                let reader = try reopen(directory)
                let rotator = try reopen(directory)
                let stop = Atomic<Bool>(false)
                let rotated = Atomic<Bool>(false)
                let state = Mutex(Run())
                let writing = DispatchGroup()
                let reading = DispatchGroup()
                for (index, writer) in writers.enumerated() {
                    writing.enter()
                    Thread {
                        defer { writing.leave() }
                        // Each writer counts its own record up, one exclusive update at a time, at
                        // least `updates` times and until the rotation is over.
                        var made = 0
                        defer { state.withLock { $0.made[index] = made } }
                        while made < updates || !rotated.load(ordering: .relaxed) {
                            do {
                                try writer.exclusiveUpdate(forKey: "count-\(index)") { current in
                                    let count = current.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                                    return Data(String(count + 1).utf8)
                                }
                                made += 1
                                usleep(2_000)  // an app's pace, not a tight loop: the lock is not fair
                            } catch {
                                state.withLock { $0.failures.append("writer \(index): \(error)") }
                                return
                            }
                        }
                    }.start()
                }
                reading.enter()
                Thread {
                    defer { reading.leave() }
                    var index = 0
                    while !stop.load(ordering: .relaxed) {
                        let key = index % records
                        do {
                            if try reader.data(forKey: "r\(key)") != value(key) {
                                state.withLock { $0.failures.append("r\(key) read wrong") }
                            }
                            state.withLock { $0.reads += 1 }
                        } catch {
                            state.withLock { $0.failures.append("reader: \(error)") }
                        }
                        index += 1
                        usleep(200)
                    }
                }.start()
                let report = Result { try rotator.beginDataKeyRotation() }.flatMap { _ in
                    Result { try rotator.reseal(batchSize: 10, progress: nil) }
                }
                rotated.store(true, ordering: .relaxed)
                writing.wait()
                stop.store(true, ordering: .relaxed)
                reading.wait()
                var run = state.withLock { $0 }
                run.report = try report.get()
                let final = try reopen(directory)
                run.counts = try (0..<3).map { try final.data(forKey: "count-\($0)") }
                run.seededExact = try (0..<records).allSatisfy { try final.data(forKey: "r\($0)") == value($0) }
                // A writer's update made after the listing is under generation 2 already; a
                // rerun retires generation 1 if the first pass met none left but could not.
                run.rerun = try final.reseal(batchSize: 50, progress: nil)
                return run
            }
        }
        #expect(run.failures == [])
        #expect(run.reads > 0)
        #expect(run.report?.unreadable == 0)
        #expect(run.made.allSatisfy { $0 >= updates })
        #expect(run.counts == run.made.map { Data(String($0).utf8) })
        #expect(run.seededExact)
        #expect(run.rerun?.isComplete == true)
        #expect(
            run.rerun?.census.entries == [KeyCensus.Entry(keyID: "generation 2", count: records + 3, role: .primary)])
        #expect(run.report?.resealed ?? 0 >= records)
    }

    @Test("A format-2 header that names no key, too many, or more bytes than its keys take is refused")
    func hostileHeaders() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.beginDataKeyRotation()
            let good = try readBytes(directory + "/store/keepsake.header")
            #expect(try StoreHeader.parse(good).keyCount == 2)
            func resummed(_ bytes: [UInt8]) -> [UInt8] {
                Array(bytes.dropLast(32)) + blake2b256(Array(bytes.dropLast(32)))
            }
            var cases: [[UInt8]] = []
            for count: UInt16 in [0, 17, 3] {
                var bytes = good
                bytes[68] = UInt8(count & 0xff)
                bytes[69] = UInt8(count >> 8)
                cases.append(resummed(bytes))
            }
            cases.append(resummed(Array(good.dropLast(32)) + [0] + Array(good.suffix(32))))
            var version3 = good
            version3[8] = 3
            cases.append(resummed(version3))
            for bytes in cases {
                #expect(throws: FormatFailure.self) { _ = try StoreHeader.parse(bytes) }
            }
        }
    }
}
