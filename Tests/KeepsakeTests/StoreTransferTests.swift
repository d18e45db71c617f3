import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Synchronization
import Testing

/// A store over a real one that injects the faults a real store cannot be made to produce on
/// demand: a write that fails, a read-back that differs, a removal that fails, a restore that
/// fails. Every call not named by the fault goes to the real store unchanged.
final class FaultyStore: RecordStore {
    enum Fault: Sendable, Equatable {
        /// The first batch (a transfer's writes) applies its first write and fails the others.
        case writeFails
        /// The first batch throws, applying nothing.
        case writeThrows
        /// Reads of this key return other bytes once the transfer has written it.
        case readBackDiffers(String)
        /// The first batch (on a source, a move's removals) removes its first key and fails the others.
        case removalFails
        /// The first batch throws, removing nothing.
        case removalThrows
        /// The first batch applies; every later batch throws (the restore).
        case restoreThrows
        /// Another writer changes this key just before the first batch (on a source, the removals).
        case changedBeforeFirstBatch(String)
    }

    let base: any RecordStore
    let fault: Fault
    private let state = Mutex<(batches: Int, written: Set<String>)>((0, []))

    init(_ base: any RecordStore, fault: Fault) {
        self.base = base
        self.fault = fault
    }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }

    func data(forKey key: String) throws(KeepsakeError) -> Data? {
        let data = try base.data(forKey: key)
        if case let .readBackDiffers(target) = fault, key == target, state.withLock({ $0.written.contains(key) }),
            let data
        {
            return data + Data("!".utf8)
        }
        return data
    }

    func keys() throws(KeepsakeError) -> [String] { try base.keys() }

    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        let injected = KeepsakeError(.io, store: uri, "injected failure", cause: .posix(call: "write", errno: EIO))
        let batch = state.withLock { state -> Int in
            state.batches += 1
            return state.batches
        }
        switch fault {
        case .writeFails where batch == 1, .removalFails where batch == 1:
            var results = try base.commit(Array(writes.prefix(1)))
            results += writes.dropFirst().map { _ in .failed(injected) }
            record(writes.prefix(1))
            return results
        case .writeThrows where batch == 1, .removalThrows where batch == 1, .restoreThrows where batch > 1:
            throw injected
        case let .changedBeforeFirstBatch(key) where batch == 1:
            try base.setData(Data(#""changed by another writer""#.utf8), forKey: key)
            return try base.commit(writes)
        default:
            let results = try base.commit(writes)
            record(writes[...])
            return results
        }
    }

    private func record(_ writes: ArraySlice<StoreWrite>) {
        state.withLock { state in
            for write in writes where write.value != nil { state.written.insert(write.key) }
        }
    }
}

@Suite("StoreTransfer: copy and move between stores")
struct StoreTransferTests {
    let context = MigrationContext.fixed(
        now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")
    let person = bytes(#"{"name":"Ada","age":"36"}"#)
    let personV3 = bytes(#"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#)
    let token = bytes(#""s3cr3t-token""#)

    /// A real defaults suite holding an old Person, a plain token and a theme.
    func legacySuite() throws -> DefaultsStore {
        let suite = DefaultsStore(path: try temporaryDirectory() + "/legacy.json")
        let results = try suite.commit([
            StoreWrite(key: "person", value: person), StoreWrite(key: "apiToken", value: token),
            StoreWrite(key: "theme", value: bytes(#""dark""#))
        ])
        #expect(results == [.applied, .applied, .applied])
        return suite
    }

    func transfer(_ source: any RecordStore, _ destination: any RecordStore) -> StoreTransfer {
        StoreTransfer(from: source, to: destination, chains: SampleModels.all, context: context)
    }

    func contents(_ store: any RecordStore) throws -> [String: Data] {
        Dictionary(uniqueKeysWithValues: try store.allData().map { ($0.key, $0.data) })
    }

    @Test(
        "a move of named keys migrates the managed record, copies the plain value as its bytes, and empties the source of them"
    )
    func moveNamedKeys() throws {
        let suite = try legacySuite()
        let destination = InMemoryStore(name: "vault")
        let report = try transfer(suite, destination).run(
            .keys(["person", "apiToken"]),
            options: .init(move: true, migrate: true))
        #expect(report.outcome == .completed)
        #expect(report.records.map(\.state) == [.moved, .moved])
        #expect(
            report.records[0]
                == TransferRecord(
                    key: "person", schema: "Person", storedVersion: 0, writtenVersion: 3,
                    migrated: true, state: .moved))
        #expect(report.records[1] == TransferRecord(key: "apiToken", unmanaged: true, state: .moved))
        #expect(try contents(destination) == ["person": personV3, "apiToken": token])
        #expect(try suite.keys() == ["theme"])
    }

    @Test("a copy without migrating writes the exact stored bytes and leaves the source as it was")
    func copyKeepsBytes() throws {
        let suite = try legacySuite()
        let before = try contents(suite)
        let destination = InMemoryStore(name: "copy")
        let report = try transfer(suite, destination).run(.managed)
        #expect(report.outcome == .completed)
        #expect(
            report.records == [
                TransferRecord(
                    key: "person", schema: "Person", storedVersion: 0, writtenVersion: 0,
                    state: .copied)
            ])
        #expect(try contents(destination) == ["person": person])
        #expect(try contents(suite) == before)
        let all = try transfer(suite, InMemoryStore(name: "all")).run(.all)
        #expect(all.records.map(\.key) == ["apiToken", "person", "theme"])
        #expect(all.records.map(\.unmanaged) == [true, false, true])
    }

    @Test("a key the destination holds is refused unless overwriting; nothing is written; overwrite replaces it")
    func existingKeyRefused() throws {
        let suite = try legacySuite()
        let destination = InMemoryStore(name: "d", contents: ["apiToken": bytes(#""other""#)])
        let refused = try transfer(suite, destination).run(.keys(["person", "apiToken"]), options: .init(move: true))
        #expect(refused.outcome == .refused)
        #expect(refused.records.map(\.state) == [.notCopied, .exists])
        #expect(refused.records[1].error?.code == .conflict)
        #expect(!refused.records[1].replaced)
        #expect(try contents(destination) == ["apiToken": bytes(#""other""#)])
        #expect(try suite.keys() == ["apiToken", "person", "theme"])

        let replaced = try transfer(suite, destination).run(
            .keys(["person", "apiToken"]),
            options: .init(move: true, overwrite: true))
        #expect(replaced.outcome == .completed)
        #expect(replaced.records[1].replaced)
        #expect(try contents(destination) == ["person": person, "apiToken": token])
        #expect(try suite.keys() == ["theme"])
    }

    @Test("a record that cannot be migrated does not stop the others: reported failed, left in the source")
    func badRecordSkipped() throws {
        let bad = bytes(#"{"schema":"Person","version":1,"data":{"x":1}}"#)
        for move in [false, true] {
            let source = InMemoryStore(name: "s", contents: ["person": person, "other": bad, "theme": bytes("1")])
            let destination = InMemoryStore(name: "d")
            let plan = try transfer(source, destination).plan(.all, options: .init(move: move, migrate: true))
            #expect(plan.outcome == .planned)
            #expect(plan.records.map(\.state) == [.failed, .planned, .planned])
            let report = try transfer(source, destination).run(.all, options: .init(move: move, migrate: true))
            #expect(report.outcome == .partial && !report.succeeded)
            #expect(report.records.map(\.key) == ["other", "person", "theme"])
            #expect(report.records.map(\.state) == [.failed, move ? .moved : .copied, move ? .moved : .copied])
            #expect(report.records[0].error?.key == "other")
            #expect(try contents(destination) == ["person": personV3, "theme": bytes("1")])
            #expect(try source.data(forKey: "other") == bad, "the bad record stays in the source as it was")
            #expect(try source.keys() == (move ? ["other"] : ["other", "person", "theme"]))
        }
    }

    @Test("a newer record in the destination is never replaced by an older one, not even with overwrite")
    func newerDestinationKept() throws {
        let suite = try legacySuite()
        let newer = bytes(#"{"data":{"alias":"a","email":"b","x":{"k":1,"k":2}},"schema":"Person","version":5}"#)
        let destination = InMemoryStore(name: "d", contents: ["person": newer])
        for migrate in [false, true] {
            let report = try transfer(suite, destination).run(
                .keys(["person"]), options: .init(move: true, migrate: migrate, overwrite: true))
            #expect(report.outcome == .refused)
            #expect(report.records.first?.error?.code == .newerVersion)
            #expect(report.records.first?.error?.store == destination.uri)
            #expect(try contents(destination) == ["person": newer])
            #expect(try suite.keys() == ["apiToken", "person", "theme"])
        }
    }

    @Test("the same bytes already in the destination are not a conflict: a rerun finishes a move")
    func rerunFinishesMove() throws {
        let suite = try legacySuite()
        let destination = InMemoryStore(name: "d", contents: ["apiToken": token])
        let report = try transfer(suite, destination).run(.keys(["apiToken"]), options: .init(move: true))
        #expect(report.outcome == .completed)
        #expect(report.records.first?.alreadyPresent == true)
        #expect(report.records.first?.state == .moved)
        #expect(try suite.data(forKey: "apiToken") == nil)
    }

    @Test("a plan writes nothing and says what would happen")
    func planWritesNothing() throws {
        let suite = try legacySuite()
        let destination = InMemoryStore(name: "d")
        let plan = try transfer(suite, destination).plan(.keys(["person", "missing"]), options: .init(move: true))
        #expect(plan.outcome == .refused)
        #expect(plan.records.map(\.state) == [.notCopied, .failed])
        #expect(plan.records[1].error?.code == .notFound)
        let ok = try transfer(suite, destination).plan(.keys(["person"]), options: .init(move: true, migrate: true))
        #expect(ok.outcome == .planned)
        #expect(ok.records.map(\.state) == [.planned])
        #expect(ok.records.first?.writtenVersion == 3)
        #expect(try destination.keys().isEmpty)
        #expect(try suite.keys() == ["apiToken", "person", "theme"])
    }

    @Test("a value the destination cannot hold is a typed error before anything is written")
    func destinationCannotHold() throws {
        let source = InMemoryStore(name: "s", contents: ["raw": Data([0xFF, 0x00, 0x41]), "person": person])
        let suite = DefaultsStore(path: try temporaryDirectory() + "/d.json")
        let report = try transfer(source, suite).run(.all, options: .init(move: true))
        #expect(report.outcome == .refused)
        let raw = try #require(report.records.first { $0.key == "raw" })
        #expect(raw.state == .failed)
        #expect(raw.error?.code == .valueRefused)
        #expect(raw.error?.store == suite.uri)
        #expect(raw.error?.key == "raw")
        #expect(try suite.keys().isEmpty)
        #expect(try source.keys() == ["person", "raw"])
    }

    @Test(
        "an unreadable record does not stop a migrating transfer, and stays; without migrating it is copied as its bytes"
    )
    func unreadableRecord() throws {
        let future = bytes(#"{"schema":"Person","version":9,"data":{}}"#)
        let broken = bytes(#"{"name":1}"#)
        let source = InMemoryStore(name: "s", contents: ["person": broken, "future": future])
        let destination = InMemoryStore(name: "d")
        let migrating = try transfer(source, destination).run(.managed, options: .init(migrate: true))
        #expect(migrating.outcome == .partial)
        #expect(migrating.records.first { $0.key == "person" }?.state == .failed)
        #expect(migrating.records.first { $0.key == "person" }?.error?.code == .unrecognisedRecord)
        #expect(migrating.records.first { $0.key == "future" }?.state == .copied, "a newer record is copied as it is")
        #expect(try contents(destination) == ["future": future])
        let verbatim = try transfer(source, destination).run(.managed)
        #expect(verbatim.outcome == .completed)
        #expect(try contents(destination) == ["person": broken, "future": future])
    }

    @Test("many keys are read with one listing: an existing key is still found, an invalid key is still its error")
    func manyKeys() throws {
        let source = DefaultsStore(path: try temporaryDirectory() + "/many.json")
        let keys = (0..<20).map { "key\($0)" }
        _ = try source.commit(keys.map { StoreWrite(key: $0, value: bytes("\"\($0)\"")) })
        let destination = DefaultsStore(path: try temporaryDirectory() + "/dest.json")
        try destination.setData(bytes("1"), forKey: "key7")
        let refused = try transfer(source, destination).run(.keys(keys + [""]), options: .init(move: true))
        #expect(refused.outcome == .refused)
        #expect(refused.records.filter { $0.state == .exists }.map(\.key) == ["key7"])
        #expect(refused.records.last?.error?.code == .invalidArgument)
        #expect(try destination.keys() == ["key7"])
        let moved = try transfer(source, destination).run(.all, options: .init(move: true, overwrite: true))
        #expect(moved.outcome == .completed)
        #expect(moved.records.count == 20)
        #expect(try destination.keys().count == 20)
        #expect(try destination.data(forKey: "key7") == bytes("\"key7\""))
        #expect(try source.keys().isEmpty)
    }

    @Test("one store as both ends is refused, also through a link")
    func sameStore() throws {
        let suite = try legacySuite()
        #expect(throws: KeepsakeError.self) { try transfer(suite, DefaultsStore(path: suite.path)).run(.all) }
        // The same suite through a symbolic link: moving would remove what it copied.
        let link = (suite.path as NSString).deletingLastPathComponent + "/link.json"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: suite.path)
        #expect(throws: KeepsakeError.self) {
            try transfer(suite, DefaultsStore(path: link)).run(.all, options: .init(move: true))
        }
        #expect(try suite.keys() == ["apiToken", "person", "theme"])
    }

    // MARK: Injected failures: each record ends in the source, the destination or both

    /// The destination held `apiToken` = "old" and `other`; the source holds person, apiToken, theme.
    func faultyRun(_ fault: FaultyStore.Fault, move: Bool = true)
        throws -> (report: TransferReport, source: [String: Data], destination: [String: Data], before: [String: Data])
    {
        let suite = try legacySuite()
        let sourceBefore = try contents(suite)
        let real = DefaultsStore(path: try temporaryDirectory() + "/dest.json")
        try real.setData(bytes(#""old""#), forKey: "apiToken")
        try real.setData(bytes("1"), forKey: "other")
        let before = try contents(real)
        let source: any RecordStore =
            [.removalFails, .removalThrows].contains(fault) ? FaultyStore(suite, fault: fault) : suite
        let destination: any RecordStore =
            [.removalFails, .removalThrows].contains(fault) ? real : FaultyStore(real, fault: fault)
        let report = try transfer(source, destination).run(
            .all, options: .init(move: move, migrate: true, overwrite: true))
        // Never in neither: every source record is in the source or the destination.
        let after = try contents(suite), destinationAfter = try contents(real)
        for key in sourceBefore.keys {
            #expect(after[key] == sourceBefore[key] || destinationAfter[key] != nil, "\(key) is in neither store")
        }
        return (report, after, destinationAfter, before)
    }

    @Test("a destination write that fails: the destination gets back exactly what it held, the source is untouched")
    func destinationWriteFails() throws {
        for fault in [FaultyStore.Fault.writeFails, .writeThrows] {
            let run = try faultyRun(fault)
            #expect(run.report.outcome == .reverted, "\(fault)")
            #expect(run.destination == run.before, "\(fault)")
            #expect(run.source.keys.sorted() == ["apiToken", "person", "theme"], "\(fault)")
            #expect(run.report.records.contains { $0.state == .failed && $0.error?.code == .io }, "\(fault)")
            #expect(!run.report.records.contains { $0.state == .moved || $0.state == .copied })
        }
        let partial = try faultyRun(.writeFails)
        #expect(partial.report.records.map(\.state) == [.reverted, .failed, .failed])
    }

    @Test(
        "a read-back that differs: the destination is restored, the source untouched, the record says verificationFailed"
    )
    func readBackDiffers() throws {
        let run = try faultyRun(.readBackDiffers("person"))
        #expect(run.report.outcome == .reverted)
        #expect(run.destination == run.before)
        #expect(run.source.keys.sorted() == ["apiToken", "person", "theme"])
        let person = try #require(run.report.records.first { $0.key == "person" })
        #expect(person.state == .failed)
        #expect(person.error?.code == .verificationFailed)
        #expect(run.report.records.filter { $0.key != "person" }.map(\.state) == [.reverted, .reverted])
    }

    @Test("a source removal that fails: the records not removed are in both stores, reported so")
    func removalFails() throws {
        let partial = try faultyRun(.removalFails)
        #expect(partial.report.outcome == .incomplete)
        #expect(partial.report.records.map(\.state) == [.moved, .inBoth, .inBoth])
        #expect(partial.source.keys.sorted() == ["person", "theme"])
        #expect(partial.destination["apiToken"] == token)
        #expect(partial.destination["person"] == personV3)
        #expect(partial.report.records[1].error?.message.contains("both stores hold it") == true)
        let none = try faultyRun(.removalThrows)
        #expect(none.report.outcome == .incomplete)
        #expect(none.report.records.allSatisfy { $0.state == .inBoth })
        #expect(none.source.keys.sorted() == ["apiToken", "person", "theme"])
    }

    @Test("a source record changed after it was copied is not removed: it is in both, the other writer's value kept")
    func sourceChangedMeanwhile() throws {
        let suite = try legacySuite()
        let destination = InMemoryStore(name: "d")
        let report = try transfer(FaultyStore(suite, fault: .changedBeforeFirstBatch("apiToken")), destination)
            .run(.keys(["apiToken", "person"]), options: .init(move: true))
        #expect(report.outcome == .incomplete)
        #expect(report.records.map(\.state) == [.inBoth, .moved])
        #expect(report.records[0].error?.code == .conflict)
        #expect(try suite.data(forKey: "apiToken") == bytes(#""changed by another writer""#))
        #expect(try destination.data(forKey: "apiToken") == token)
        #expect(try suite.data(forKey: "person") == nil)
    }

    @Test("a restore that fails after a failed read-back leaves the record in the source and says so")
    func restoreFails() throws {
        let suite = try legacySuite()
        let real = InMemoryStore(name: "dest")
        let destination = FaultyStore(FaultyStore(real, fault: .readBackDiffers("person")), fault: .restoreThrows)
        let report = try transfer(suite, destination).run(.keys(["person", "apiToken"]), options: .init(move: true))
        #expect(report.outcome == .incomplete)
        #expect(report.records.map(\.state) == [.failed, .inBoth])
        #expect(report.records[1].error?.message.contains("could not be restored") == true)
        #expect(try suite.keys() == ["apiToken", "person", "theme"])  // the source was not touched
    }

    @Test("checkpoints come after each completed step, in order")
    func checkpoints() throws {
        let steps = Mutex<[StoreTransfer.Step]>([])
        let suite = try legacySuite()
        _ = try transfer(suite, InMemoryStore(name: "d")).run(.managed, options: .init(move: true)) { step in
            steps.withLock { $0.append(step) }
        }
        #expect(steps.withLock { $0 } == [.prepared, .written, .verified, .removed])
    }
}
