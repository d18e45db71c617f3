import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeSodium
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

/// A directory with two 32-byte key files, `a.key` and `b.key`, mode 0600, and their
/// fingerprints as a store reports them.
private struct Keys {
    let directory: String
    var a: String { directory + "/a.key" }
    var b: String { directory + "/b.key" }

    init() throws {
        directory = FileManager.default.temporaryDirectory.path + "/keepsake-pg-keys-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for path in [directory + "/a.key", directory + "/b.key"] {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
            else { throw TestFailure("cannot write \(path)") }
        }
    }

    func remove() { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
}

/// A Person v3 record's bytes.
private func person(_ alias: String) -> Data {
    Data(#"{"data":{"alias":"\#(alias)","email":"\#(alias)@example.com"},"schema":"Person","version":3}"#.utf8)
}

private func open(_ uri: String) throws -> PostgresStore {
    let configuration = try PostgresConfiguration(parsing: uri)
    return try PostgresStore(configuration: configuration, masterKey: configuration.sealingKey)
}

/// How many rows of `table` are not sealed in format 2 under the key `fingerprint`.
private func rowsNotUnder(_ fingerprint: String, table: String) throws -> Int {
    Int(
        try SQL.run(
            "SELECT count(*) FROM \(table) WHERE substr(record, 1, 21) <> decode('4b53504702\(fingerprint)', 'hex')"))
        ?? -1
}

/// The table's marker as psql prints it: `true` or `false`, a bar, the fingerprints (`{a,b}`).
private func marker(_ table: String) throws -> String {
    try SQL.run(
        "SELECT sealed || '|' || key_fingerprints::text FROM keepsake_tables WHERE table_name = 'public.\(table)'")
}

extension PostgresServerTests {
    @Suite("Keys that rotate while the app serves: key sets, rekey, seal")
    struct KeyRotationTests {
        @Test("a store holding the new key and the old reads both, writes under the new; rekey retires the old")
        func rotation() throws {
            let keys = try Keys()
            defer { keys.remove() }
            let table = newTable("rot")
            let base = storeURI(table: table)
            let old = try open(base + "&sealkey_file=" + keys.a)
            let count = 300
            _ = try old.commit((0..<count).map { StoreWrite(key: "p-\($0)", value: person("p\($0)")) })
            let fingerprintA = try #require(old.keyCensus().entries.first?.keyID)
            #expect(try old.keyCensus().entries == [KeyCensus.Entry(keyID: fingerprintA, count: count, role: .primary)])

            let rotated = try open(base + "&sealkey_file=" + keys.b + "&sealkey_previous_file=" + keys.a)
            let fingerprintB = rotated.writtenKeyID
            #expect(fingerprintB != fingerprintA)
            #expect(try rotated.data(forKey: "p-7") == person("p7"), "an old value reads with the previous key")
            try rotated.setData(person("new"), forKey: "p-0")
            #expect(try marker(table) == "true|{\(fingerprintA),\(fingerprintB)}", "the new key was added to the seal")
            // The old key still writes until the rotation is done (its instances are being replaced).
            try old.setData(person("old-writer"), forKey: "p-1")
            let census = try rotated.keyCensus()
            #expect(
                census.entries.first { $0.keyID == fingerprintA }
                    == .init(keyID: fingerprintA, count: count - 1, role: .previous))
            #expect(
                census.entries.first { $0.keyID == fingerprintB }
                    == .init(keyID: fingerprintB, count: 1, role: .primary))
            // A store with only the old key cannot read a value under the new one, and says which key it needs.
            do {
                _ = try old.data(forKey: "p-0")
                Issue.record("a value under a key the store does not hold opened")
            } catch {
                #expect(error.code == .wrongKey)
                #expect(error.message.contains(fingerprintB))
            }

            let progress = Mutex<[ResealProgress]>([])
            let report = try rotated.reseal(batchSize: 64) { step in progress.withLock { $0.append(step) } }
            #expect(report.resealed == count - 1)
            #expect(report.changedMeanwhile == 0 && report.unreadable == 0)
            #expect(report.retired == [fingerprintA])
            #expect(report.isComplete)
            #expect(report.census.entries == [.init(keyID: fingerprintB, count: count, role: .primary)])
            #expect(progress.withLock { $0.last } == ResealProgress(done: count - 1, total: count - 1))
            #expect(progress.withLock { $0.count } >= 5, "progress after each batch of 64")
            #expect(try rowsNotUnder(fingerprintB, table: table) == 0)
            #expect(try marker(table) == "true|{\(fingerprintB)}")
            for index in [1, 2, 150, 299] {
                #expect(
                    try rotated.data(forKey: "p-\(index)") == person(index == 1 ? "old-writer" : "p\(index)"))
            }
            // The old key is retired: a writer that holds only it is refused, and nothing is written.
            let before = try SQL.run("SELECT encode(record, 'hex') FROM \(table) WHERE key = 'p-5'")
            do {
                try old.setData(person("too late"), forKey: "p-5")
                Issue.record("a writer with a retired key wrote")
            } catch {
                #expect(error.code == .wrongKey)
                #expect(error.message.contains("sealed by another key"))
            }
            #expect(try SQL.run("SELECT encode(record, 'hex') FROM \(table) WHERE key = 'p-5'") == before)
            // Run again: nothing to do.
            let again = try rotated.reseal(batchSize: 64, progress: nil)
            #expect(again.resealed == 0 && again.retired.isEmpty && again.isComplete)
        }

        @Test("one key file naming the new key and the old (a key set) is the same as sealkey_previous_file")
        func keySetFile() throws {
            let keys = try Keys()
            defer { keys.remove() }
            let table = newTable("set")
            let base = storeURI(table: table)
            let old = try open(base + "&sealkey_file=" + keys.a)
            try old.setData(person("before"), forKey: "p-1")
            let set = keys.directory + "/set.keys"
            let bytes =
                try Data(contentsOf: URL(fileURLWithPath: keys.b)) + Data(contentsOf: URL(fileURLWithPath: keys.a))
            #expect(
                FileManager.default.createFile(atPath: set, contents: bytes, attributes: [.posixPermissions: 0o600]))
            let rotated = try open(base + "&sealkey_file=" + set)
            let separate = try open(base + "&sealkey_file=" + keys.b + "&sealkey_previous_file=" + keys.a)
            #expect(rotated.writtenKeyID == separate.writtenKeyID, "the first key of the set writes")
            #expect(rotated.writtenKeyID != old.writtenKeyID)
            #expect(try rotated.data(forKey: "p-1") == person("before"), "the second key opens what it sealed")
            try rotated.setData(person("after"), forKey: "p-2")
            #expect(try rowsNotUnder(rotated.writtenKeyID, table: table) == 1, "p-2 is under the new key")
            #expect(try separate.data(forKey: "p-2") == person("after"))
            let report = try rotated.reseal(batchSize: 64, progress: nil)
            #expect(report.resealed == 1 && report.retired == [old.writtenKeyID] && report.isComplete)
            #expect(try rowsNotUnder(rotated.writtenKeyID, table: table) == 0)
        }

        @Test("seal a plain table in place while a plain writer and a sealing writer both write; then unseal it")
        func sealAndUnseal() throws {
            let keys = try Keys()
            defer { keys.remove() }
            let table = newTable("seal")
            let base = storeURI(table: table)
            let plain = try open(base)
            _ = try plain.commit((0..<200).map { StoreWrite(key: "p-\($0)", value: person("p\($0)")) })
            #expect(try marker(table) == "false|{}")

            // Without sealkey_previous=plain a sealed store refuses the plain table, naming the way.
            let strict = try open(base + "&sealkey_file=" + keys.a)
            do {
                try strict.setData(person("x"), forKey: "p-0")
                Issue.record("a sealed store wrote into a plain table")
            } catch {
                #expect(error.code == .wrongKey)
                #expect(error.message.contains("sealkey_previous=plain"))
                #expect(error.message.contains("migrate seal"))
            }

            let sealing = try open(base + "&sealkey_file=" + keys.a + "&sealkey_previous=plain")
            let fingerprint = sealing.writtenKeyID
            #expect(try sealing.data(forKey: "p-3") == person("p3"))
            try sealing.setData(person("sealed-writer"), forKey: "p-0")
            #expect(try marker(table) == "true|{plain,\(fingerprint)}")
            try plain.setData(person("plain-writer"), forKey: "p-1")  // still allowed while sealing

            let report = try sealing.reseal(batchSize: 50, progress: nil)
            #expect(report.resealed == 199 && report.retired == ["plain"] && report.isComplete)
            #expect(try rowsNotUnder(fingerprint, table: table) == 0)
            #expect(try marker(table) == "true|{\(fingerprint)}")
            #expect(try strict.data(forKey: "p-1") == person("plain-writer"))
            #expect(try strict.data(forKey: "p-0") == person("sealed-writer"))
            do {
                try plain.setData(person("after"), forKey: "p-2")
                Issue.record("a plain writer wrote into a sealed table")
            } catch {
                #expect(error.code == .wrongKey)
            }

            // migrate seal unseals only with --allow-plaintext.
            let unsealURI = base + "&sealkey_previous_file=" + keys.a
            let refused = try migrateBinary.run(["seal", "--store", unsealURI])
            #expect(refused.status == 64, "\(refused.stderr)")
            #expect(refused.stderr.contains("--allow-plaintext"))
            #expect(try rowsNotUnder(fingerprint, table: table) == 0, "nothing was unsealed")
            let unsealed = try migrateBinary.run(["seal", "--store", unsealURI, "--allow-plaintext", "--json"])
            #expect(unsealed.status == 0, "\(unsealed.stdout)\(unsealed.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(unsealed.stdout.utf8)) as? [String: Any])
            #expect(object["resealed"] as? Int == 200)
            #expect(object["retired"] as? [String] == [fingerprint])
            #expect(object["complete"] as? Bool == true)
            #expect(try SQL.run("SELECT count(*) FROM \(table) WHERE substr(record, 1, 4) = 'KSPG'::bytea") == "0")
            #expect(try marker(table) == "false|{}")
            #expect(try plain.data(forKey: "p-9") == person("p9"))
        }

        @Test(
            "3 writer processes and a reader while migrate rekey rotates the key: 0 lost writes, 0 unreadable reads",
            .timeLimit(.minutes(5)))
        func rotateWhileServing() throws {
            let keys = try Keys()
            defer { keys.remove() }
            let table = newTable("rotlive")
            let base = storeURI(table: table)
            let shared = 6
            let seeded = 3000
            let old = try open(base + "&sealkey_file=" + keys.a)
            _ = try old.commit(
                (0..<seeded).map { StoreWrite(key: "seed-\($0)", value: person("s\($0)")) }
                    + (1...shared).map { StoreWrite(key: "shared-\($0)", value: person("")) })
            let fingerprintA = old.writtenKeyID
            let newURI = base + "&sealkey_file=" + keys.b + "&sealkey_previous_file=" + keys.a
            let reader = try open(newURI)
            let fingerprintB = reader.writtenKeyID

            // The reader: scans every record, again and again, until the writers and rekey are done.
            let stop = Atomic<Bool>(false)
            let reads = Mutex((scans: 0, reads: 0, unreadable: 0, mixed: 0, failures: [String]()))
            let readerThread = Thread {
                while !stop.load(ordering: .relaxed) {
                    do {
                        let records = try reader.allRecords()
                        var failed = 0
                        var first: String?
                        for record in records {
                            if case let .failure(error) = record.result {
                                failed += 1
                                first = first ?? "\(record.key): \(error)"
                            }
                        }
                        let census = try reader.keyCensus()
                        let mixed =
                            census.entries.contains { $0.keyID == fingerprintA && $0.count > 0 }
                            && census.entries.contains { $0.keyID == fingerprintB && $0.count > 0 }
                        reads.withLock {
                            $0.scans += 1
                            $0.reads += records.count
                            $0.unreadable += failed
                            if mixed { $0.mixed += 1 }
                            if let first, $0.failures.count < 5 { $0.failures.append(first) }
                        }
                    } catch {
                        reads.withLock { $0.failures.append("scan: \(error)") }
                    }
                    usleep(20_000)  // leave the two cores to the writers and rekey between scans
                }
            }
            readerThread.start()

            let directory = keys.directory
            var writers: [Child] = []
            for index in 0..<3 {
                writers.append(
                    try Child(
                        writerBinary,
                        [
                            "--store", newURI, "--process", "w\(index)", "--tasks", "3", "--operations", "60",
                            "--shared", "\(shared)"
                        ],
                        output: "\(directory)/writer-\(index)"))
            }
            usleep(200_000)
            let rekey = try Child(
                migrateBinary, ["rekey", "--store", newURI, "--batch-size", "50", "--json"],
                output: "\(directory)/rekey")
            let (rekeyStatus, rekeyOutput) = try rekey.wait()
            var tally = WriterTally()
            for writer in writers {
                let (status, output) = try writer.wait()
                #expect(status == 0, "writer: \(output.suffix(600))")
                tally.add(output)
            }
            stop.store(true, ordering: .relaxed)
            while !readerThread.isFinished { usleep(10_000) }

            #expect(rekeyStatus == 0, "migrate rekey: \(rekeyOutput.suffix(800))")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(rekeyOutput.utf8)) as? [String: Any], "\(rekeyOutput)")
            #expect(report["retired"] as? [String] == [fingerprintA])
            #expect(report["complete"] as? Bool == true)
            #expect(tally.failures.isEmpty, "\(tally.failures)")
            #expect(tally.saved.count == 3 * 3 * 30 && tally.updates == 3 * 3 * 30)
            let lost = try tally.lost(in: Vault(store: reader))
            let seen = reads.withLock { $0 }
            #expect(lost == 0, "lost successful writes: \(lost)")
            #expect(seen.unreadable == 0, "unreadable reads: \(seen.failures)")
            #expect(seen.failures.isEmpty, "\(seen.failures)")
            #expect(seen.scans > 0)
            #expect(seen.mixed > 0, "the reader never saw the table mid-rotation: the test did not overlap")
            #expect(try rowsNotUnder(fingerprintB, table: table) == 0)
            #expect(try marker(table) == "true|{\(fingerprintB)}")
            print(
                "rotation while serving: \(seeded + shared) records, 3 writers × 3 tasks (\(tally.saved.count) saves, \(tally.updates) updates), reader \(seen.scans) scans (\(seen.mixed) mid-rotation, \(seen.reads) reads, \(seen.unreadable) unreadable), rekey changed-meanwhile \(report["changedMeanwhile"] ?? "-"); lost \(lost)"
            )
        }

        @Test(
            "kill -9 of migrate rekey, again and again: it resumes, and every value ends under the new key",
            .timeLimit(.minutes(5)))
        func rekeyKillLoop() throws {
            let keys = try Keys()
            defer { keys.remove() }
            let table = newTable("rotkill")
            let base = storeURI(table: table)
            let count = 4000
            let old = try open(base + "&sealkey_file=" + keys.a)
            _ = try old.commit((0..<count).map { StoreWrite(key: "k-\($0)", value: person("v\($0)")) })
            let newURI = base + "&sealkey_file=" + keys.b + "&sealkey_previous_file=" + keys.a
            let store = try open(newURI)
            var kills = 0
            var midway = 0
            for round in 0..<8 {
                let child = try Child(
                    migrateBinary, ["rekey", "--store", newURI, "--batch-size", "40"],
                    output: "\(keys.directory)/rekey-\(round)")
                usleep(UInt32(250_000 + round * 50_000))
                if child.process.isRunning {
                    kill(child.process.processIdentifier, SIGKILL)
                    kills += 1
                }
                _ = try child.wait()
                let left = try rowsNotUnder(store.writtenKeyID, table: table)
                if left > 0 && left < count { midway += 1 }
                // Every value reads, whichever key it is under at this moment.
                let unreadable = try store.allRecords().filter {
                    if case .failure = $0.result { return true } else { return false }
                }
                #expect(unreadable.isEmpty, "\(unreadable.prefix(3).map(\.key))")
                if left == 0 { break }
            }
            let final = try migrateBinary.run(["rekey", "--store", newURI, "--json"])
            #expect(final.status == 0, "\(final.stdout)\(final.stderr)")
            #expect(try rowsNotUnder(store.writtenKeyID, table: table) == 0)
            #expect(try marker(table) == "true|{\(store.writtenKeyID)}")
            for index in stride(from: 0, to: count, by: 397) {
                #expect(try store.data(forKey: "k-\(index)") == person("v\(index)"))
            }
            #expect(try SQL.run("SELECT count(*) FROM \(table)") == "\(count)")
            print("rekey kill loop: \(kills) kills on \(count) records; \(midway) left the table mid-rotation")
            #expect(kills > 0)
        }

        @Test("migrate status shows how many values each key holds")
        func statusCensus() throws {
            let keys = try Keys()
            defer { keys.remove() }
            let table = newTable("rotstat")
            let base = storeURI(table: table)
            let old = try open(base + "&sealkey_file=" + keys.a)
            _ = try old.commit((0..<5).map { StoreWrite(key: "p-\($0)", value: person("p\($0)")) })
            let newURI = base + "&sealkey_file=" + keys.b + "&sealkey_previous_file=" + keys.a
            let rotated = try open(newURI)
            try rotated.setData(person("n"), forKey: "p-0")
            let status = try migrateBinary.run(["status", "--store", newURI])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("Values by key"))
            let lines = status.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(lines.contains([old.writtenKeyID, "previous", "4"]), "\(status.stdout)")
            #expect(lines.contains([rotated.writtenKeyID, "primary", "1"]), "\(status.stdout)")
            let json = try migrateBinary.run(["status", "--store", newURI, "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let census = try #require(object["keys"] as? [[String: Any]])
            #expect(census.map { $0["count"] as? Int } == [4, 1])
        }
    }
}

/// The KeepsakePostgres article's rotation example, verbatim (the article quotes it; it is
/// compiled here, and `rotation()` above runs the same calls on real key files).
func articleRotationExample(databaseURL: String) throws {
    var configuration = try PostgresConfiguration(parsing: databaseURL)
    configuration.previousSealingKeys = [.keyFile(path: "/run/secrets/records-2025.key")]
    let store = try PostgresStore(
        configuration: configuration, masterKey: .keyFile(path: "/run/secrets/records-2026.key"))
    let report = try store.reseal(batchSize: 512, progress: nil)
    print(report.resealed, report.retired, report.isComplete)
}
