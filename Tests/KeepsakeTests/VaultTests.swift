import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Testing

extension RecordKeys {
    fileprivate static let person = RecordKey(chain: Person.chain)
    fileprivate static let profile = RecordKey(
        "profile", chain: Person.chain,
        default: PersonV3(alias: "guest", email: "-"))
    fileprivate static let trial = RecordKey(chain: TrialInfo.chain)
}

/// A step that refuses some records with an error of the app's own type.
private enum TokenMigrationError: Error, Equatable { case revoked(String) }

private struct TokenV0: ModelVersion {
    static let version = 0
    let token: String
}

private struct TokenV1: ModelVersion, Equatable {
    typealias Predecessor = TokenV0
    static let version = 1
    let token: String
    let scheme: String
    init(token: String, scheme: String) {
        self.token = token
        self.scheme = scheme
    }
    init(migrating previous: TokenV0, context: MigrationContext) throws {
        guard !previous.token.hasPrefix("revoked-") else { throw TokenMigrationError.revoked(previous.token) }
        self.init(token: previous.token, scheme: "bearer")
    }
}

private enum Token {
    static let chain = ModelChain<TokenV1>(name: "Token", defaultKeys: ["token"])
}

@Suite("Vault: the front door an app holds")
struct VaultTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "device-1")

    @Test("typed keys load, default, save, list and remove")
    func typedKeys() throws {
        let store = InMemoryStore(name: "vault")
        let vault = Vault(store: store, context: context)
        #expect(try vault.load(.person) == nil)
        #expect(
            try vault.value(.profile) == PersonV3(alias: "guest", email: "-"), "the default while nothing is stored")
        #expect(try store.keys().isEmpty, "a default is never written")
        #expect { try vault.value(.person) } throws: { error in
            (error as? KeepsakeError)?.code == .notFound && (error as? KeepsakeError)?.key == "person"
        }

        try vault.save(PersonV3(alias: "Ada", email: "ada@example.com"), for: .profile)
        #expect(
            try store.data(forKey: "profile")
                == bytes(
                    #"{"data":{"alias":"Ada","email":"ada@example.com"},"schema":"Person","version":3}"#))
        #expect(try vault.value(.profile) == PersonV3(alias: "Ada", email: "ada@example.com"))
        #expect(try vault.keys() == ["profile"])
        try vault.remove(.profile)
        #expect(try vault.keys().isEmpty)
    }

    @Test("a load migrates an old record, writes it back once, and says so")
    func migratesAndWritesBack() throws {
        let store = InMemoryStore(contents: ["person": bytes(#"{"name":"Ada","age":"36"}"#)])
        let vault = Vault(store: store, context: context)
        let first = try #require(try vault.load(.person))
        #expect(first.value == PersonV3(alias: "Ada", email: "---"))
        #expect(first.storedVersion == 0 && first.wasMigrated && first.record.steps == [1, 2, 3])
        #expect(first.record.form == .bare)
        #expect(first.writeBack == .written)
        let second = try #require(try vault.load(.person))
        #expect(second.value == first.value)
        #expect(second.writeBack == .notNeeded && !second.wasMigrated)
    }

    @Test("a load whose write-back fails still returns the migrated value and says why; the bytes stay")
    func writeBackFails() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/suite.json"
        let old = #"{"person":{"name":"Ada","age":"36"}}"#
        try bytes(old).write(to: URL(fileURLWithPath: path))
        let store = DefaultsStore(path: path, lockTimeout: .milliseconds(200))
        let holder = try LockHolder(lockPath: path + ".lock", signals: directory)
        defer { holder.release() }
        #expect(holder.holds, "the other process took the lock")

        let loaded = try #require(try Vault(store: store, context: context).load(.person))
        #expect(loaded.value == PersonV3(alias: "Ada", email: "---"))
        #expect(loaded.storedVersion == 0)
        guard case let .failed(error) = loaded.writeBack else {
            Issue.record("expected a failed write-back, got \(loaded.writeBack)")
            return
        }
        #expect(error.code == .lockTimeout)
        #expect(error.store == "defaults:" + path && error.key == "person")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == old, "nothing was written")

        holder.release()
        #expect(
            try Vault(store: store, context: context).load(.person)?.writeBack == .written, "the next load writes it")
    }

    @Test("write-back can be turned off: the record migrates in memory and stays as stored")
    func writeBackOff() throws {
        let stored = bytes(#"{"name":"Ada","age":"36"}"#)
        let store = InMemoryStore(contents: ["person": stored])
        let loaded = try Vault(store: store, context: context, options: .init(writeBack: false)).load(.person)
        #expect(loaded?.value == PersonV3(alias: "Ada", email: "---"))
        #expect(loaded?.writeBack == .skipped)
        #expect(try store.data(forKey: "person") == stored)
    }

    @Test("a load with a backup directory keeps the original bytes before replacing them")
    func backup() throws {
        let directory = try temporaryDirectory()
        let stored = bytes(#"{"name":"Ada","age":"36"}"#)
        let store = InMemoryStore(contents: ["person": stored])
        let vault = Vault(
            store: store, context: context, options: .init(backup: BackupDirectory(path: directory + "/b")))
        #expect(try vault.load(.person)?.writeBack == .written)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/b/person.json")) == stored)
    }

    @Test("an app's own step error stays catchable as the app's own type")
    func appErrorKept() throws {
        let store = InMemoryStore(contents: ["token": bytes(#"{"token":"revoked-123"}"#)])
        do {
            _ = try Vault(store: store, context: context).load(Token.chain)
            Issue.record("expected the step to fail")
        } catch {
            #expect(error.code == .migrationFailed)
            #expect(error.underlying(as: TokenMigrationError.self) == .revoked("revoked-123"))
            #expect(error.key == "token")
        }
        #expect(try store.data(forKey: "token") == bytes(#"{"token":"revoked-123"}"#))
    }

    @Test("without a device identity, only a record whose step asks for one fails, with a typed error")
    func noDeviceIdentity() throws {
        let store = InMemoryStore(contents: [
            "person": bytes(#"{"name":"Ada","age":"36"}"#),
            "trialInfo": bytes(#"{"version":0,"startDate":700000000}"#)
        ])
        let vault = Vault(store: store, context: .fixed(now: Date()))  // no device identity
        #expect(try vault.load(.person)?.writeBack == .written, "Person's steps need no identity")
        #expect { try vault.load(.trial) } throws: { error in
            let error = error as? KeepsakeError
            return error?.code == .deviceIdentityUnavailable && error?.key == "trialInfo"
                && error?.message.contains("version 0 to 1") == true
        }
        #expect(try store.data(forKey: "trialInfo") == bytes(#"{"version":0,"startDate":700000000}"#))

        let reports = try Migrator(store: store, chains: SampleModels.all, context: .fixed(now: Date())).run()
        #expect(reports.first { $0.key == "trialInfo" }?.error?.code == .deviceIdentityUnavailable)
        #expect(reports.first { $0.key == "trialInfo" }?.state == .unreadable)
    }

    @Test("a device identity derived from a missing machine id fails only when a step asks for it")
    func missingMachineID() throws {
        let context = MigrationContext.live(appID: "com.example.test", machineIDPath: "/nonexistent/machine-id")
        #expect(throws: KeepsakeError.self) { try context.requireDeviceIdentity() }
        let store = InMemoryStore(contents: ["trialInfo": bytes(#"{"version":0,"startDate":700000000}"#)])
        #expect { try Vault(store: store, context: context).load(.trial) } throws: { error in
            (error as? KeepsakeError)?.code == .deviceIdentityUnavailable
        }
        let withID = MigrationContext.live(
            appID: "com.example.test", machineIDPath: try machineIDFile("0123456789abcdef"))
        #expect(
            try withID.requireDeviceIdentity()
                == DeviceIdentity.derived(appID: "com.example.test", machineID: "0123456789abcdef"))
    }

    private func machineIDFile(_ id: String) throws -> String {
        let path = try temporaryDirectory() + "/machine-id"
        try bytes(id + "\n").write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a newer record is thrown with its store and key, and a save over it is refused")
    func newerRecord() throws {
        let newer = bytes(#"{"schema":"Person","version":9,"data":{"alias":"x"}}"#)
        let store = InMemoryStore(name: "v", contents: ["person": newer])
        let vault = Vault(store: store, context: context)
        #expect { try vault.load(.person) } throws: { error in
            let error = error as? KeepsakeError
            return error?.code == .newerVersion && error?.store == "memory:v" && error?.key == "person"
        }
        #expect { try vault.save(PersonV3(alias: "a", email: "b"), for: .person) } throws: { error in
            (error as? KeepsakeError)?.code == .newerVersion
        }
        #expect(try store.data(forKey: "person") == newer)
    }

    @Test("the async calls run the store's blocking work off the cooperative pool")
    func asyncDoesNotBlockThePool() async throws {
        let directory = try temporaryDirectory()
        let path = directory + "/suite.json"
        try bytes(#"{"person":{"name":"Ada","age":"36"}}"#).write(to: URL(fileURLWithPath: path))
        // Long enough that only a save stuck behind a blocked pool times out.
        let store = DefaultsStore(path: path, lockTimeout: .seconds(20))
        let holder = try LockHolder(lockPath: path + ".lock", signals: directory)
        defer { holder.release() }
        #expect(holder.holds)

        // More blocked saves than the pool has threads: each waits for the other process's lock.
        let vault = Vault(store: store, context: context)
        let width = ProcessInfo.processInfo.activeProcessorCount + 2
        let saves = (0..<width).map { index in
            Task {
                try await vault.save(PersonV3(alias: "n\(index)", email: "e"), in: Person.chain, forKey: "k\(index)")
            }
        }
        // Another task runs while every save waits. Had the saves taken the pool's threads, it
        // could run only once they gave up (lockTimeout), since the lock is released after it.
        await Task { await Task.yield() }.value
        #expect(holder.holds, "the other process still holds the lock")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == #"{"person":{"name":"Ada","age":"36"}}"#)

        holder.release()
        for save in saves { try await save.value }
        #expect(try await vault.keys().count == width + 1)
        #expect(try await vault.load(.person)?.writeBack == .written)
    }
}
