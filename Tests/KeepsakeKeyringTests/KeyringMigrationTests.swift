import Foundation
import Keepsake
import KeepsakeKeyring
import Migrations
import Testing

extension KeyringTests {
    /// Old records kept in the keyring, migrated through the engine's Migrator.
    @Suite("Migrating records kept in the keyring")
    struct Migration {
        let context = MigrationContext.fixed(
            now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "device-1")

        @Test("Migrator migrates old Person and TrialInfo records in the keyring once, and leaves other items alone")
        func migrator() throws {
            let store = try PrivateKeyring.freshStore("migrator")
            // The Person record as its first release stored it, through another client.
            try PrivateKeyring.secretToolStore(
                label: "person", attributes: [("service", store.service), ("username", "person")],
                secret: #"{"name":"Ada","age":"36"}"#)
            try store.setData(Data(#"{"version":0,"startDate":700000000}"#.utf8), forKey: "trialInfo")
            try store.setData(Data("plain token".utf8), forKey: "apiToken")

            let migrator = Migrator(store: store, chains: SampleModels.all, context: context)
            let plan = try migrator.plan()
            #expect(plan.map(\.key) == ["apiToken", "person", "trialInfo"])
            #expect(plan.map(\.state) == [.unmanaged, .outdated, .outdated])
            #expect(try store.data(forKey: "person") == Data(#"{"name":"Ada","age":"36"}"#.utf8), "plan writes nothing")

            let reports = try migrator.run()
            #expect(reports.map(\.key) == ["apiToken", "person", "trialInfo"])
            #expect(reports.map(\.state) == [.unmanaged, .migrated, .migrated])
            #expect(reports.map(\.storedVersion) == [nil, 0, 0])
            #expect(reports.map(\.latestVersion) == [nil, 3, 2])
            #expect(reports.allSatisfy { $0.error == nil })

            #expect(
                try store.data(forKey: "person")
                    == Data(#"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#.utf8))
            #expect(
                try store.data(forKey: "trialInfo")
                    == Data(
                        #"{"data":{"deviceId":"device-1","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
                            .utf8))
            #expect(try store.data(forKey: "apiToken") == Data("plain token".utf8))
            // One item per key, the Person one still secret-tool's.
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            #expect(items.count == 3)
            #expect(items.first { $0.attributes["username"] == "person" }?.label == "person")

            #expect(
                try Vault(store: store, context: context).load(Person.chain).map { $0.value }
                    == PersonV3(alias: "Ada", email: "---"))
            #expect(
                try Vault(store: store, context: context).load(TrialInfo.chain).map { $0.value }
                    == (TrialInfoV2(startDate: Date(timeIntervalSinceReferenceDate: 700_000_000), deviceId: "device-1"))
            )

            let again = try migrator.run()
            #expect(again.map(\.state) == [.unmanaged, .current, .current])
        }

        @Test("a record from a newer release in the keyring is reported and left untouched")
        func newer() throws {
            let store = try PrivateKeyring.freshStore("newer")
            let newer = Data(#"{"data":{"alias":"A","email":"e","phone":"1"},"schema":"Person","version":9}"#.utf8)
            try store.setData(newer, forKey: "person")
            let reports = try Migrator(store: store, chains: SampleModels.all, context: context).run()
            #expect(reports.map(\.state) == [.newer])
            #expect(reports.first?.error?.code == .newerVersion)
            #expect(try store.data(forKey: "person") == newer)
        }
    }
}
