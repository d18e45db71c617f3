import Foundation
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Testing

@testable import Keepsake

/// A store larger than two of the migrator's blocks: on more than one core its records are
/// evaluated in parallel, block by block, and must still be reported, and written, each as its
/// own record in key order.
@Suite("Migrator over a large store")
struct MigratorLargeStoreTests {
    let context = MigrationContext.fixed(
        now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")
    static let count = 3 * 2_048 + 17

    /// Record `index`: a Person V0 envelope, except every 7th current (V3), every 97th newer,
    /// every 89th a plain value (unmanaged) and every 101st a V0 whose name is a number
    /// (unreadable).
    static func record(_ index: Int) -> (key: String, bytes: Data, plan: RecordReport.State) {
        let key = String(format: "p-%05d", index)
        let json: String
        let state: RecordReport.State
        if index % 101 == 0 {
            json = #"{"data":{"age":"1","name":\#(index)},"schema":"Person","version":0}"#
            state = .unreadable
        } else if index % 97 == 0 {
            json = #"{"data":{"x":1},"schema":"Person","version":9}"#
            state = .newer
        } else if index % 89 == 0 {
            json = #""plain \#(index)""#
            state = .unmanaged
        } else if index % 7 == 0 {
            json = #"{"data":{"alias":"P\#(index)","email":"p\#(index)@x"},"schema":"Person","version":3}"#
            state = .current
        } else {
            json = #"{"data":{"age":"\#(index % 90)","name":"P\#(index)"},"schema":"Person","version":0}"#
            state = .outdated
        }
        return (key, Data(json.utf8), state)
    }

    @Test(
        "plan and run report every record in key order, and write each migrated record as itself",
        arguments: ["memory", "defaults"])
    func everyRecordInOrder(kind: String) throws {
        let records = (0..<Self.count).map(Self.record)
        let store: any RecordStore
        var directory: URL?
        if kind == "memory" {
            store = InMemoryStore(
                name: "large", contents: Dictionary(uniqueKeysWithValues: records.map { ($0.key, $0.bytes) }))
        } else {
            let made = FileManager.default.temporaryDirectory.appendingPathComponent("large-\(UUID().uuidString)")
            directory = made
            let suite = DefaultsStore(path: made.appendingPathComponent("suite.json").path)
            _ = try suite.commit(records.map { StoreWrite(key: $0.key, value: $0.bytes) })
            store = suite
        }
        defer { if let directory { try? FileManager.default.removeItem(at: directory) } }
        #expect(Migrator.workers(for: Self.count) == min(ProcessInfo.processInfo.activeProcessorCount, 8))

        let migrator = Migrator(store: store, chains: [Person.chain.erased], context: context)
        let planned = try migrator.plan()
        #expect(planned.map(\.key) == records.map(\.key))
        #expect(planned.map(\.state) == records.map(\.plan))
        #expect(planned.filter { $0.state == .outdated }.allSatisfy { $0.steps == [1, 2, 3] && $0.storedVersion == 0 })

        let ran = try migrator.run()
        #expect(ran.map(\.key) == records.map(\.key))
        #expect(ran.map(\.state) == records.map { $0.plan == .outdated ? .migrated : $0.plan })
        #expect(ran.filter { $0.state == .unreadable }.allSatisfy { $0.error?.key == $0.key })
        for (index, record) in records.enumerated() {
            let stored = try store.data(forKey: record.key)
            if record.plan == .outdated {
                let expected = try Person.chain.encode(PersonV3(alias: "P\(index)", email: "---"))
                #expect(stored == expected, "\(record.key)")
            } else {
                #expect(stored == record.bytes, "\(record.key) must keep its bytes")
            }
        }
        #expect(try migrator.plan().allSatisfy { $0.state != .outdated }, "a second pass finds nothing to do")
    }
}

extension MigratorLargeStoreTests {
    /// What another writer does to record `index` of a large store of Person V0 records while a
    /// run migrates them: every 10th brought to the latest version, every 15th (not 10th) stored
    /// again at V0 with another name, every 25th (neither) removed; the others left alone.
    enum OtherWrite: Equatable {
        case current, outdated, removed, none

        init(_ index: Int) {
            if index % 10 == 0 {
                self = .current
            } else if index % 15 == 0 {
                self = .outdated
            } else if index % 25 == 0 {
                self = .removed
            } else {
                self = .none
            }
        }
    }

    static func key(_ index: Int) -> String { String(format: "p-%05d", index) }

    /// Record `index` at V0, named `name`.
    static func v0(_ index: Int, _ name: String) -> Data {
        Data(#"{"data":{"age":"\#(index % 90)","name":"\#(name)"},"schema":"Person","version":0}"#.utf8)
    }

    /// Record `index` as the other writer stores it at the latest version.
    static func theirs(_ index: Int) throws -> Data {
        try Person.chain.encode(PersonV3(alias: "T\(index)", email: "t@x"))
    }

    @Test(
        "records another writer changed while a large store was migrated in parallel blocks are reported as they now stand",
        arguments: ["memory", "defaults"])
    func otherWriter(kind: String) throws {
        let count = Self.count
        let (key, v0, theirs) = (Self.key, Self.v0, Self.theirs)
        let records = (0..<count).map { (key: key($0), bytes: v0($0, "P\($0)")) }
        let base: any RecordStore
        let instance: any RecordStore  // the other writer's own instance of the store
        var directory: URL?
        if kind == "memory" {
            let memory = InMemoryStore(
                name: "large", contents: Dictionary(uniqueKeysWithValues: records.map { ($0.key, $0.bytes) }))
            (base, instance) = (memory, memory)
        } else {
            let made = FileManager.default.temporaryDirectory.appendingPathComponent("large-\(UUID().uuidString)")
            directory = made
            let path = made.appendingPathComponent("suite.json").path
            let suite = DefaultsStore(path: path)
            _ = try suite.commit(records.map { StoreWrite(key: $0.key, value: $0.bytes) })
            (base, instance) = (suite, DefaultsStore(path: path))
        }
        defer { if let directory { try? FileManager.default.removeItem(at: directory) } }
        #expect(Migrator.workers(for: count) == min(ProcessInfo.processInfo.activeProcessorCount, 8))

        let store = OtherWriterStore(base: base) { batch in
            guard batch == 1 else { return }
            var writes: [StoreWrite] = []
            for index in 0..<count {
                switch OtherWrite(index) {
                case .current: writes.append(StoreWrite(key: Self.key(index), value: try Self.theirs(index)))
                case .outdated: writes.append(StoreWrite(key: Self.key(index), value: Self.v0(index, "O\(index)")))
                case .removed: writes.append(StoreWrite(key: Self.key(index), value: nil))
                case .none: break
                }
            }
            #expect(try instance.commit(writes).allSatisfy { $0 == .applied })
        }
        let reports = try Migrator(store: store, chains: [Person.chain.erased], context: context).run()
        #expect(store.committed == 2, "the run's batch, then the records left outdated, migrated again")
        #expect(reports.map(\.key) == records.map(\.key))
        for (index, report) in reports.enumerated() {
            let stored = try base.data(forKey: key(index))
            switch OtherWrite(index) {
            case .current:
                #expect(report.state == .current && report.storedVersion == 3, "\(report.key)")
                #expect(report.note == "brought to the latest version by another writer while it was being migrated")
                #expect(stored == (try theirs(index)), "\(report.key)")
            case .outdated:
                #expect(report.state == .migrated, "\(report.key)")
                #expect(
                    report.note
                        == "changed by another writer while it was being migrated; migrated again from what that writer stored"
                )
                #expect(
                    stored == (try Person.chain.encode(PersonV3(alias: "O\(index)", email: "---"))), "\(report.key)")
            case .removed:
                #expect(
                    report.state == .removed && report.note == "removed by another writer while it was being migrated")
                #expect(stored == nil, "\(report.key)")
            case .none:
                #expect(report.state == .migrated && report.note == nil, "\(report.key)")
                #expect(
                    stored == (try Person.chain.encode(PersonV3(alias: "P\(index)", email: "---"))), "\(report.key)")
            }
            #expect(report.error == nil, "\(report.key)")
        }
    }
}
