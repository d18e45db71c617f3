import Foundation
import Keepsake
import KeepsakeKeyring
import Migrations
import Testing

extension KeyringTests {
    /// Interoperation with Python's `keyring` package, which adds an `application` attribute.
    @Suite(
        "Python keyring", .enabled(if: PythonKeyring.isAvailable, Comment(rawValue: PythonKeyring.unavailableReason)))
    struct Python {
        let context = MigrationContext.fixed(
            now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "device-1")

        @Test("a record keyring.set_password stored is migrated in its item, and keyring.get_password reads the result")
        func migratesPythonItem() throws {
            let store = try PrivateKeyring.freshStore("python-item")
            try PythonKeyring.setPassword(
                service: store.service, username: "trialInfo", #"{"version":0,"startDate":700000000}"#)
            let state = try Vault(store: store, context: context).load(TrialInfo.chain)
            let expected = TrialInfoV2(
                startDate: Date(timeIntervalSinceReferenceDate: 700_000_000), deviceId: "device-1")
            #expect(state?.value == expected && state?.storedVersion == 0)

            let envelope =
                #"{"data":{"deviceId":"device-1","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
            #expect(try PythonKeyring.getPassword(service: store.service, username: "trialInfo") == envelope)
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            try #require(items.count == 1)
            #expect(items[0].attributes["application"] == "Python keyring library")
            #expect(items[0].label == "Password for 'trialInfo' on '\(store.service)'")
        }

        @Test(
            "keyring.get_password reads what Keepsake stored; its set_password beside it leaves one item after Keepsake's next write"
        )
        func pythonAndKeepsake() throws {
            let store = try PrivateKeyring.freshStore("python-both")
            try Vault(store: store).save(PersonV3(alias: "Ada", email: "ada@example.com"), in: Person.chain)
            let envelope = #"{"data":{"alias":"Ada","email":"ada@example.com"},"schema":"Person","version":3}"#
            #expect(try PythonKeyring.getPassword(service: store.service, username: "person") == envelope)
            #expect(try PythonKeyring.getPassword(service: store.service, username: "nobody") == nil)

            Thread.sleep(forTimeInterval: 1.1)  // item times have a resolution of one second
            // Python's item has an `application` attribute Keepsake's lacks: gnome-keyring adds it beside.
            try PythonKeyring.setPassword(service: store.service, username: "person", #"{"name":"Bea","age":"41"}"#)
            #expect(try PrivateKeyring.secretToolSearch(service: store.service).count == 2)
            #expect(try Vault(store: store, context: context).load(Person.chain).map { [$0.storedVersion] } == [0])

            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            try #require(items.count == 1, "the write-back must leave exactly one item: \(items)")
            #expect(items[0].attributes["application"] == "Python keyring library")
            #expect(
                try PythonKeyring.getPassword(service: store.service, username: "person")
                    == #"{"data":{"alias":"Bea","email":"---"},"schema":"Person","version":3}"#)
        }
    }
}
