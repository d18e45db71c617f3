import Foundation
import Keepsake
import KeepsakeKeyring
import Migrations
import Testing

extension KeyringTests {
    /// Item identity, and interoperation with `secret-tool` (libsecret-tools), an independent client.
    @Suite("Items and secret-tool")
    struct Items {
        let context = MigrationContext.fixed(
            now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "device-1")

        @Test("an item Keepsake writes carries service, username, xdg:schema and the label 'service: key'")
        func itemIdentity() throws {
            let store = try PrivateKeyring.freshStore("identity")
            try Vault(store: store).save(PersonV3(alias: "Ada", email: "ada@example.com"), in: Person.chain)
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            try #require(items.count == 1)
            #expect(items[0].label == "\(store.service): person")
            #expect(
                items[0].attributes.filter { !PrivateKeyring.providerAttributes.contains($0.key) } == [
                    "service": store.service, "username": "person", "xdg:schema": "org.keepsake.Record"
                ])
            #expect(
                items[0].secret == #"{"data":{"alias":"Ada","email":"ada@example.com"},"schema":"Person","version":3}"#)
        }

        @Test("secret-tool reads exactly the bytes Keepsake stored")
        func secretToolReadsKeepsake() throws {
            let store = try PrivateKeyring.freshStore("read-by-secret-tool")
            let text =
                #"{"data":{"deviceId":"d","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
            try store.setData(Data(text.utf8), forKey: "trialInfo")
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "trialInfo") == text)
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "other") == nil)
        }

        @Test("a record secret-tool stored is read, migrated, and written back into the same item")
        func migratesSecretToolItem() throws {
            let store = try PrivateKeyring.freshStore("secret-tool-item")
            try PrivateKeyring.secretToolStore(
                label: "legacy person", attributes: [("service", store.service), ("username", "person")],
                secret: #"{"name":"Ada","age":"36"}"#)
            #expect(try store.keys() == ["person"])
            #expect(try store.data(forKey: "person") == Data(#"{"name":"Ada","age":"36"}"#.utf8))

            let state = try Vault(store: store, context: context).load(Person.chain)
            #expect(state?.value == PersonV3(alias: "Ada", email: "---") && state?.storedVersion == 0)

            let envelope = #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            try #require(items.count == 1, "the write-back must update the existing item, not add one: \(items)")
            // The same item: secret-tool's label and attributes are kept, and it did not get
            // Keepsake's schema (gnome-keyring shows secret-tool's items with no xdg:schema, or
            // org.freedesktop.Secret.Generic after a restart).
            #expect(items[0].label == "legacy person")
            #expect(items[0].attributes["service"] == store.service)
            #expect(items[0].attributes["username"] == "person")
            #expect(items[0].attributes["xdg:schema"] != KeyringStore.schemaName)
            #expect(items[0].secret == envelope)
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "person") == envelope)
            #expect(
                try Vault(store: store, context: context).load(Person.chain).map { $0.value }
                    == PersonV3(alias: "Ada", email: "---"))
        }

        @Test(
            "secret-tool storing over a Keepsake item replaces it in place, and Keepsake reads the new record",
            PrivateKeyring.notAgainst(.keePassXC, PrivateKeyring.keePassXCReplaceDialog))
        func secretToolOverwritesKeepsake() throws {
            let store = try PrivateKeyring.freshStore("overwritten-by-secret-tool")
            try store.setData(Data(#"{"name":"Ada","age":"36"}"#.utf8), forKey: "person")
            try PrivateKeyring.secretToolStore(
                label: "edited", attributes: [("service", store.service), ("username", "person")],
                secret: #"{"name":"Bea","age":"41"}"#)
            #expect(try store.data(forKey: "person") == Data(#"{"name":"Bea","age":"41"}"#.utf8))
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            #expect(items.count == 1)
            // KWallet keeps the item's label when its secret is replaced.
            #expect(
                items.first?.label
                    == (PrivateKeyring.runningProvider == .kWallet ? "\(store.service): person" : "edited"))
        }

        @Test("an item of another schema with extra attributes is found and replaced in place")
        func otherSchemaItem() throws {
            let store = try PrivateKeyring.freshStore("other-schema")
            try PrivateKeyring.secretToolStore(
                label: "Password for 'trialInfo'",
                attributes: [
                    ("xdg:schema", "org.example.Other"), ("application", "Python keyring library"),
                    ("service", store.service), ("username", "trialInfo")
                ],
                secret: #"{"version":0,"startDate":700000000}"#)
            let state = try Vault(store: store, context: context).load(TrialInfo.chain)
            let expected = TrialInfoV2(
                startDate: Date(timeIntervalSinceReferenceDate: 700_000_000), deviceId: "device-1")
            #expect(state?.value == expected && state?.storedVersion == 0)
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            try #require(items.count == 1)
            #expect(items[0].attributes["xdg:schema"] == "org.example.Other")
            #expect(items[0].attributes["application"] == "Python keyring library")
            #expect(
                items[0].secret
                    == #"{"data":{"deviceId":"device-1","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
            )
        }

        @Test("when two clients stored the same key, reads use the newest and a write leaves exactly one item")
        func duplicates() throws {
            let store = try PrivateKeyring.freshStore("duplicates")
            try store.setData(Data(#""from keepsake""#.utf8), forKey: "k")
            Thread.sleep(forTimeInterval: 1.1)  // item times have a resolution of one second
            // gnome-keyring replaces an item whose attributes include all the new item's ones;
            // with an attribute Keepsake's item lacks (as Python keyring's `application`), it
            // adds a second item for the same service and key.
            try PrivateKeyring.secretToolStore(
                label: "other client",
                attributes: [("service", store.service), ("username", "k"), ("application", "other client")],
                secret: #""from secret-tool""#)
            #expect(try PrivateKeyring.secretToolSearch(service: store.service).count == 2)
            #expect(try store.data(forKey: "k") == Data(#""from secret-tool""#.utf8))
            #expect(try store.keys() == ["k"])

            try store.setData(Data(#""replaced""#.utf8), forKey: "k")
            let items = try PrivateKeyring.secretToolSearch(service: store.service)
            #expect(items.map(\.secret) == [#""replaced""#])
            #expect(items.map(\.label) == ["other client"], "the newest item is the one updated")
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "k") == #""replaced""#)
        }

        @Test(
            "remove deletes every item of that key and nothing else, even of the same service",
            PrivateKeyring.notAgainst(.keePassXC, PrivateKeyring.keePassXCReplaceDialog))
        func removeIsExact() throws {
            let store = try PrivateKeyring.freshStore("remove")
            let neighbour = try KeyringStore(service: store.service + ".neighbour")
            try store.setData(Data("1".utf8), forKey: "a")
            try store.setData(Data("2".utf8), forKey: "b")
            try neighbour.setData(Data("3".utf8), forKey: "a")
            try PrivateKeyring.secretToolStore(
                label: "dup", attributes: [("service", store.service), ("username", "a")], secret: "4")

            try store.removeData(forKey: "a")
            #expect(try store.data(forKey: "a") == nil)
            #expect(try PrivateKeyring.secretToolSearch(service: store.service, key: "a").isEmpty)
            #expect(try store.data(forKey: "b") == Data("2".utf8))
            #expect(try neighbour.data(forKey: "a") == Data("3".utf8))
            #expect(try neighbour.keys() == ["a"])
        }

        @Test("keys lists other clients' items of the service and skips those without a username")
        func keysOfOtherClients() throws {
            let store = try PrivateKeyring.freshStore("keys")
            try PrivateKeyring.secretToolStore(
                label: "x", attributes: [("service", store.service), ("username", "fromTool")], secret: "1")
            try PrivateKeyring.secretToolStore(
                label: "y", attributes: [("service", store.service), ("account", "no-username")], secret: "2")
            try store.setData(Data("3".utf8), forKey: "mine")
            #expect(try store.keys() == ["fromTool", "mine"])
            #expect(try store.allData().map(\.key) == ["fromTool", "mine"])
            #expect(try store.allData().map(\.data) == [Data("1".utf8), Data("3".utf8)])
        }

        @Test("calls from several threads at once each get their own answer")
        func concurrentCalls() async throws {
            let store = try PrivateKeyring.freshStore("concurrent")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        let key = "key-\(index)"
                        try store.setData(Data("value \(index)".utf8), forKey: key)
                        #expect(try store.data(forKey: key) == Data("value \(index)".utf8))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try store.keys() == (0..<8).map { "key-\($0)" })
        }

        @Test("a write expecting absence is a conflict when another client stored the key meanwhile")
        func conflictWithOtherClient() throws {
            let store = try PrivateKeyring.freshStore("conflict")
            try PrivateKeyring.secretToolStore(
                label: "x", attributes: [("service", store.service), ("username", "k")], secret: "theirs")
            let results = try store.commit([
                StoreWrite(key: "k", value: Data("mine".utf8), expectation: .unchanged(nil))
            ])
            #expect(results == [.conflict])
            #expect(try PrivateKeyring.secretToolLookup(service: store.service, key: "k") == "theirs")
        }
    }
}
