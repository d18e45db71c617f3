import Foundation
import Keepsake
import KeepsakeMemory
import Migrations
import Testing

@Suite("Backups written as one batch")
struct BackupBatchTests {
    @Test("saveAll writes one document holding each record's exact bytes, never over an earlier backup")
    func saveAll() throws {
        let directory = BackupDirectory(path: try temporaryDirectory() + "/backups")
        let first = try directory.save(Data("earlier".utf8), forKey: "a", store: "memory:test")
        let binary = Data([0x7B, 0xFF, 0x00, 0x0A, 0xC3])  // not UTF-8
        let records: [(key: String, bytes: Data)] = [
            (key: "a", bytes: Data(#"{"version":0}"#.utf8)),
            (key: "b/c \n\"é", bytes: Data("[1, 2]\n\t\u{0}\"\\ caf\u{E9}".utf8)),
            (key: "bin", bytes: binary),
            (key: "empty", bytes: Data())
        ]
        let results = directory.saveAll(records, store: "memory:test")
        let paths = try results.map { try $0.get() }
        #expect(paths == Array(repeating: directory.path + "/records.jsonl", count: 4))
        let again = try directory.saveAll([(key: "a", bytes: Data("again".utf8))], store: "memory:test").map {
            try $0.get()
        }
        #expect(again == [directory.path + "/records~2.jsonl"], "a second batch never replaces the first")
        #expect(try Data(contentsOf: URL(fileURLWithPath: first)) == Data("earlier".utf8))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
                == ["a.json", "records.jsonl", "records~2.jsonl"], "one file per batch, no temporary left")
        let mode = try FileManager.default.attributesOfItem(atPath: paths[0])[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Read back from the directory: the per-record file and both documents, exact bytes.
        let originals = try BackupDirectory.originals(at: directory.path)
        #expect(originals.map(\.key) == ["a", "a", "b/c \n\"é", "bin", "empty", "a"])
        #expect(
            originals.map(\.bytes) == [Data("earlier".utf8)] + records.map(\.bytes) + [Data("again".utf8)])
        for record in records.dropFirst() {
            let original = try BackupDirectory.original(forKey: record.key, at: directory.path)
            #expect(original.bytes == record.bytes)
            #expect(original.file == paths[0])
        }
        #expect(throws: KeepsakeError.self) { try BackupDirectory.original(forKey: "a", at: directory.path) }
        #expect(try BackupDirectory.original(forKey: "a", at: first).bytes == Data("earlier".utf8))
        #expect(try BackupDirectory.original(forKey: "a", at: paths[0]).bytes == Data(#"{"version":0}"#.utf8))
        do throws(KeepsakeError) {
            _ = try BackupDirectory.original(forKey: "missing", at: directory.path)
            Issue.record("a key the backup does not hold was found")
        } catch {
            #expect(error.code == .notFound)
        }
    }

    @Test("a backup folder of an earlier release, one file per record, is read key by key")
    func perRecordFolders() throws {
        let directory = try temporaryDirectory() + "/old"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files: [(String, Data)] = [
            ("person.json", Data(#"{"name":"Ada","age":"36"}"#.utf8)),
            ("person~2.json", Data("second".utf8)),
            ("a%2Fb%20c.json", Data([0xFF, 0x01])),
            ("%2E..json", Data("dots".utf8)),
            ("notes.txt", Data("not a backup".utf8)),
            ("bad%zz.json", Data("not a backup name".utf8))
        ]
        for (name, bytes) in files { try bytes.write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let originals = try BackupDirectory.originals(at: directory)
        #expect(Set(originals.map(\.key)) == ["person", "a/b c", ".."])
        #expect(originals.count == 4)
        #expect(try BackupDirectory.original(forKey: "a/b c", at: directory).bytes == Data([0xFF, 0x01]))
        #expect(try BackupDirectory.original(forKey: "..", at: directory).bytes == Data("dots".utf8))
        #expect(
            try BackupDirectory.original(forKey: "person", at: directory + "/person~2.json").bytes
                == Data("second".utf8))
        #expect(throws: KeepsakeError.self) { try BackupDirectory.original(forKey: "person", at: directory) }
    }

    @Test("a damaged backup document is an error naming the file, never a partial restore")
    func damagedDocument() throws {
        let directory = BackupDirectory(path: try temporaryDirectory() + "/backups")
        let path = try directory.saveAll(
            [(key: "a", bytes: Data("1".utf8)), (key: "b", bytes: Data("2".utf8))], store: "s"
        )
        .first!.get()
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        for damaged in [whole.dropLast(), whole.dropLast(4), Data("{}\n".utf8), Data(), whole + Data("x\n".utf8)] {
            try Data(damaged).write(to: URL(fileURLWithPath: path))
            do throws(KeepsakeError) {
                _ = try BackupDirectory.original(forKey: "a", at: directory.path)
                Issue.record("a damaged document was read")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(path))
            }
        }
    }

    @Test("a migrate run with a backup directory backs up every migrated record's original bytes")
    func runBacksUp() throws {
        let store = InMemoryStore(
            name: "backup",
            contents: [
                "p1": Data(#"{"schema":"Person","version":0,"data":{"name":"Ada","age":"36"}}"#.utf8),
                "p2": Data(#"{"schema":"Person","version":0,"data":{"name":"Bob","age":"40"}}"#.utf8)
            ])
        let backup = BackupDirectory(path: try temporaryDirectory() + "/backups")
        let migrator = Migrator(
            store: store, chains: SampleModels.all, context: .fixed(now: Date(timeIntervalSince1970: 0)))
        let reports = try migrator.run(backup: backup)
        #expect(reports.map(\.state) == [.migrated, .migrated])
        #expect(reports.map(\.backupPath) == [backup.path + "/records.jsonl", backup.path + "/records.jsonl"])
        #expect(
            try BackupDirectory.original(forKey: "p2", at: backup.path).bytes
                == Data(#"{"schema":"Person","version":0,"data":{"name":"Bob","age":"40"}}"#.utf8))
    }
}
