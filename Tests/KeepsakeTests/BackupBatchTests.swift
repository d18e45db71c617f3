import Foundation
import Keepsake
import Migrations
import Testing

@Suite("Backups written as one batch")
struct BackupBatchTests {
    @Test("saveAll writes each record's exact bytes, never over an earlier backup, and leaves no temporary file")
    func saveAll() throws {
        let directory = BackupDirectory(path: try temporaryDirectory() + "/backups")
        let first = try directory.save(Data("earlier".utf8), forKey: "a", store: "memory:test")
        let results = directory.saveAll(
            [
                (key: "a", bytes: Data(#"{"version":0}"#.utf8)),
                (key: "b/c", bytes: Data("[1, 2]".utf8)),
                (key: "a", bytes: Data("again".utf8))
            ], store: "memory:test")
        let paths = try results.map { try $0.get() }
        #expect(paths == [directory.path + "/a~2.json", directory.path + "/b%2Fc.json", directory.path + "/a~3.json"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: first)) == Data("earlier".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: paths[0])) == Data(#"{"version":0}"#.utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: paths[1])) == Data("[1, 2]".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: paths[2])) == Data("again".utf8))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
                == ["a.json", "a~2.json", "a~3.json", "b%2Fc.json"])
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
        #expect(reports.map(\.backupPath) == [backup.path + "/p1.json", backup.path + "/p2.json"])
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: backup.path + "/p2.json"))
                == Data(#"{"schema":"Person","version":0,"data":{"name":"Bob","age":"40"}}"#.utf8))
    }
}
