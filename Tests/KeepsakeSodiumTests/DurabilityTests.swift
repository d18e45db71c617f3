import FileKit
import Foundation
import Keepsake
import Migrations
import Testing

@testable import KeepsakeSodium

#if canImport(Glibc)
import Glibc
#endif

@Suite("Durable writes under injected faults")
struct FaultInjectionTests {
    @Test(
        "A write that fails at any step keeps the previous record and leaves no temporary file",
        arguments: [FileStep.create, .write, .fsync, .link, .rename, .syncDirectory])
    func failingReplace(_ step: FileStep) throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("old".utf8), forKey: "k")
            let fault = FileSystem { $0 == step ? EIO : nil }
            let faulty = try reopen(directory, fileSystem: fault)
            let results = try faulty.commit([
                StoreWrite(key: "k", value: Data("new".utf8)),
                StoreWrite(key: "fresh", value: Data("x".utf8))
            ])
            guard case let .failed(error) = results[0] else {
                Issue.record("the write did not fail: \(results)")
                return
            }
            #expect(error.code == .io)
            #expect(error.errno == EIO)
            #expect(error.key == "k")
            #expect(error.store == store.uri)
            // The new record fails at the same step and is not created.
            guard case .failed = results[1] else {
                Issue.record("the second write did not fail: \(results)")
                return
            }
            #expect(try store.keys() == ["k"])
            #expect(try store.data(forKey: "k") == Data("old".utf8))
            #expect(try listing(directory + "/store").allSatisfy { !$0.hasPrefix(".tmp-") })
        }
    }

    @Test("A delete that fails at any step keeps the record", arguments: [FileStep.rename, .syncDirectory])
    func failingRemove(_ step: FileStep) throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("old".utf8), forKey: "k")
            let faulty = try reopen(directory, fileSystem: FileSystem { $0 == step ? EIO : nil })
            let results = try faulty.commit([StoreWrite(key: "k", value: nil)])
            guard case let .failed(error) = results[0] else {
                Issue.record("the delete did not fail: \(results)")
                return
            }
            #expect(error.errno == EIO)
            #expect(try store.data(forKey: "k") == Data("old".utf8))
            #expect(try listing(directory + "/store").allSatisfy { !$0.hasPrefix(".tmp-") })
        }
    }

    @Test("A write steps through create, write, fsync, link, rename and directory sync in order")
    func stepOrder() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            let plan = FaultPlan(failAt: nil)
            let store = try reopen(directory, fileSystem: plan.fileSystem)
            try store.setData(Data("1".utf8), forKey: "k")
            try store.setData(Data("2".utf8), forKey: "k")
            try store.removeData(forKey: "k")
            #expect(
                plan.steps == [
                    .create, .write, .fsync, .link, .rename, .syncDirectory,
                    .create, .write, .fsync, .link, .rename, .syncDirectory,
                    .rename, .syncDirectory
                ])
        }
    }

    @Test("Temporary files left by a crash are removed when the store is opened")
    func leftoversAreCleaned() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data("1".utf8), forKey: "k")
            try writeBytes([1, 2, 3], to: directory + "/store/.tmp-0123456789abcdef")
            _ = try reopen(directory)
            #expect(try listing(directory + "/store").count == 3)
            #expect(try reopen(directory).data(forKey: "k") == Data("1".utf8))
        }
    }

    @Test("A create killed before its header was named leaves a temporary file that the next create removes")
    func createCleansLeftovers() throws {
        try withTemporaryDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory + "/store", withIntermediateDirectories: true)
            try writeBytes([1, 2, 3], to: directory + "/store/.tmp-0123456789abcdef")
            try writeBytes([4], to: directory + "/store/.tmp-notours")  // not a name Keepsake makes: kept
            let store = try SodiumFileStore.create(
                directory: directory + "/store", key: .keyFile(path: directory + "/store.key"))
            #expect(try listing(directory + "/store").sorted() == [".tmp-notours", "keepsake.header", "keepsake.lock"])
            try store.setData(Data("1".utf8), forKey: "k")
            #expect(try reopen(directory).data(forKey: "k") == Data("1".utf8))
        }
    }

    @Test("A writer waits for the lock and gives up with lockTimeout, writing nothing")
    func lockTimeout() throws {
        try withTemporaryDirectory { directory in
            _ = try makeKeyFileStore(in: directory)
            let store = try SodiumFileStore(
                directory: directory + "/store", key: .keyFile(path: directory + "/store.key"),
                lockTimeout: .milliseconds(50))
            let held = try #require(try StoreLock.acquire(directory + "/store/keepsake.lock", timeout: .zero))
            let error = try #require(throws: KeepsakeError.self) { try store.setData(Data("1".utf8), forKey: "k") }
            #expect(error.code == .lockTimeout)
            held.unlock()
            #expect(try store.keys().isEmpty)
            try store.setData(Data("1".utf8), forKey: "k")
            #expect(try store.keys() == ["k"])
        }
    }

    @Test("A store whose directory was removed reports unavailable, never absent")
    func directoryGone() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try FileManager.default.removeItem(atPath: directory + "/store")
            let error = try #require(throws: KeepsakeError.self) { _ = try store.data(forKey: "k") }
            #expect(error.code == .unavailable)
            #expect(throws: KeepsakeError.self) { _ = try store.keys() }
        }
    }
}

@Suite("Permissions of every file the store creates")
struct PermissionTests {
    @Test("Directories are 0700 and the header, lock, records and key file 0600")
    func modes() throws {
        try withTemporaryDirectory { directory in
            let store = try SodiumFileStore.create(
                directory: directory + "/a/b/store",
                key: .keyFile(path: directory + "/store.key"))
            try store.setData(Data("1".utf8), forKey: "k")
            try store.changeMasterKey(to: .keyFile(path: directory + "/new.key"))
            #expect(try mode(directory + "/a") == 0o700)
            #expect(try mode(directory + "/a/b") == 0o700)
            #expect(try mode(directory + "/a/b/store") == 0o700)
            let names = try listing(directory + "/a/b/store")
            #expect(names.count == 3)
            for name in names { #expect(try mode(directory + "/a/b/store/" + name) == 0o600, "\(name)") }
            #expect(try mode(directory + "/store.key") == 0o600)
            #expect(try mode(directory + "/new.key") == 0o600)
        }
    }
}

@Suite("Migrating old records on an encrypted store")
struct EncryptedMigrationTests {
    @Test("Old Person and TrialInfo records migrate through the Migrator and read back current after reopening")
    func migrateSampleModels() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            try store.setData(Data(#"{"name":"Ada","age":"36"}"#.utf8), forKey: "person")
            try store.setData(Data(#"{"version":0,"startDate":700000000}"#.utf8), forKey: "trialInfo")
            try store.setData(Data(#""dark""#.utf8), forKey: "theme")
            let context = MigrationContext.fixed(
                now: Date(timeIntervalSince1970: 1_800_000_000), deviceIdentity: "device-1")
            let migrator = Migrator(store: store, chains: SampleModels.all, context: context)
            let reports = try migrator.run()
            #expect(reports.map(\.key) == ["person", "theme", "trialInfo"])
            #expect(reports.map(\.state) == [.migrated, .unmanaged, .migrated])
            #expect(reports[0].storedVersion == 0 && reports[0].latestVersion == 3)
            #expect(reports[2].storedVersion == 0 && reports[2].latestVersion == 2)
            #expect(reports.allSatisfy { $0.error == nil })

            let reopened = try reopen(directory)
            #expect(
                try reopened.data(forKey: "person")
                    == Data(
                        #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#.utf8))
            #expect(
                try reopened.data(forKey: "trialInfo")
                    == Data(
                        #"{"data":{"deviceId":"device-1","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
                            .utf8))
            #expect(
                try Vault(store: reopened, context: context).load(Person.chain).map { $0.value }
                    == PersonV3(alias: "Ada", email: "---"))
            let trial = try Vault(store: reopened, context: context).load(TrialInfo.chain)
            #expect(
                trial?.value
                    == (TrialInfoV2(
                        startDate: Date(timeIntervalSinceReferenceDate: 700_000_000),
                        deviceId: "device-1")))
            #expect(try reopened.data(forKey: "theme") == Data(#""dark""#.utf8))
            #expect(
                try Migrator(store: reopened, chains: SampleModels.all, context: context).run().map(\.state)
                    == [.current, .unmanaged, .current])
        }
    }
}
