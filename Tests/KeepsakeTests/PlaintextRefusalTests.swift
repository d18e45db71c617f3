import Foundation
import Keepsake
import KeepsakeMemory
import Migrations
import Testing

/// A real in-memory store that says it encrypts its records, as the keyring, a file store, a
/// sealed table and OpenBao do: only its capabilities differ from the store it wraps.
struct SecureLabelledStore: RecordStore {
    let base: InMemoryStore
    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities.union(.encryptedAtRest) }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { try base.commit(writes) }
}

@Suite("Secrets never leave secure storage silently")
struct PlaintextRefusalTests {
    let person = Data(#"{"name":"Ada","age":"36"}"#.utf8)
    let token = Data(#""s3cr3t-token""#.utf8)
    let context = MigrationContext.fixed(
        now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")

    func secureStore() -> SecureLabelledStore {
        SecureLabelledStore(base: InMemoryStore(name: "secure", contents: ["person": person, "apiToken": token]))
    }

    func transfer(_ source: any RecordStore, _ destination: any RecordStore) -> StoreTransfer {
        StoreTransfer(
            from: source, to: destination, chains: SampleModels.all,
            context: context)
    }

    @Test("a copy or move from an encrypting store to a plain one is refused whole, naming both; nothing moves")
    func refused() throws {
        let source = secureStore()
        let plain = InMemoryStore(name: "plain")
        for options in [StoreTransfer.Options(), StoreTransfer.Options(move: true, migrate: true)] {
            for selection in [StoreTransfer.Selection.managed, .all, .keys(["apiToken"])] {
                let error = #expect(throws: KeepsakeError.self) {
                    try transfer(source, plain).run(selection, options: options)
                }
                #expect(error?.code == .invalidArgument)
                #expect(error?.store == source.uri)
                #expect(error?.message.contains("\(plain.uri) does not") == true)
                #expect(error?.message.contains("plain text") == true)
                #expect(throws: KeepsakeError.self) { try transfer(source, plain).plan(selection, options: options) }
            }
        }
        let named = #expect(throws: KeepsakeError.self) {
            try transfer(source, plain).run(.keys(["apiToken", "person"]))
        }
        #expect(named?.message.contains("the records 'apiToken', 'person' would be written there") == true)
        #expect(try plain.keys().isEmpty)
        #expect(try source.data(forKey: "apiToken") == token)
        #expect(try source.data(forKey: "person") == person)
    }

    @Test("allowPlaintext lets it through; secure to secure and plain to secure never ask")
    func allowed() throws {
        let plain = InMemoryStore(name: "plain")
        let report = try transfer(secureStore(), plain).run(.all, options: .init(allowPlaintext: true))
        #expect(report.outcome == .completed)
        #expect(try plain.data(forKey: "apiToken") == token)

        let otherSecure = SecureLabelledStore(base: InMemoryStore(name: "other-secure"))
        #expect(try transfer(secureStore(), otherSecure).run(.all).outcome == .completed)
        #expect(try otherSecure.data(forKey: "person") == person)

        let back = SecureLabelledStore(base: InMemoryStore(name: "back"))
        #expect(try transfer(plain, back).run(.all).outcome == .completed)
        #expect(try back.data(forKey: "apiToken") == token)
    }

    @Test("a migration run with a backup of an encrypting store is refused before it reads or writes")
    func backupRefused() throws {
        let store = secureStore()
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("plaintext-backup-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let backup = BackupDirectory(path: parent + "/run")
        let error = #expect(throws: KeepsakeError.self) {
            try Migrator(store: store, chains: SampleModels.all, context: context)
                .run(backup: backup)
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("plain text") == true)
        #expect(!FileManager.default.fileExists(atPath: backup.path))
        #expect(try store.data(forKey: "person") == person, "the v0 record was not migrated")
        // Without a backup the same run migrates it.
        let reports = try Migrator(store: store, chains: SampleModels.all, context: context)
            .run()
        #expect(reports.contains { $0.key == "person" && $0.state == .migrated })
    }
}
