import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeSodium
import KeepsakeStores
import Testing

extension KeyringTests {
    /// A `file:` store whose master key is kept in the private keyring.
    @Suite("A file store's master key in the keyring")
    struct MasterKeyInKeyring {
        func newDirectory() throws -> String {
            let directory = PrivateKeyring.scratch.appendingPathComponent("mk-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return directory
        }

        /// The error `body` threw, or `nil` (recorded as an issue) when it did not throw.
        func thrown(_ what: String, _ body: () throws(KeepsakeError) -> Void) -> KeepsakeError? {
            do throws(KeepsakeError) {
                try body()
                Issue.record("\(what) did not fail")
                return nil
            } catch {
                return error
            }
        }

        /// `secret-tool lookup` of the store's key item: its secret text, or nil.
        func lookupKeyItem(_ storeID: String) throws -> String? {
            let result = try PrivateKeyring.secretTool([
                "secret-tool", "lookup", "xdg:schema", "org.keepsake.MasterKey", "keepsake-purpose",
                "file-store-master-key", "keepsake-store-id", storeID
            ])
            return result.status == 0 ? result.stdout : nil
        }

        @Test(
            "create makes one random key item naming the store id; the store reopens with it and rekeys to and from a key file"
        )
        func createOpenRekey() throws {
            let directory = try newDirectory()
            let store = try SodiumFileStore.create(directory: directory + "/s", key: .keyring())
            let secret = try #require(try lookupKeyItem(store.identifier), "no keyring item for \(store.identifier)")
            #expect(secret.count == 64)
            #expect(secret.allSatisfy { $0.isHexDigit })
            let items = try PrivateKeyring.secretTool([
                "/bin/sh", "-c", #"exec stdbuf -oL secret-tool search --all "$@" 2>&1"#, "sh",
                "keepsake-store-id", store.identifier
            ])
            #expect(items.stdout.contains("schema = org.keepsake.MasterKey"))
            #expect(items.stdout.contains("label = Keepsake master key for file store \(store.identifier)"))
            #expect(items.stdout.components(separatedBy: "attribute.keepsake-store-id").count == 2, "exactly one item")

            try store.setData(Data("kept".utf8), forKey: "token")
            let reopened = try SodiumFileStore(directory: directory + "/s", key: .keyring())
            #expect(try reopened.data(forKey: "token") == Data("kept".utf8))

            // To a key file: the keyring item is left, but no longer opens the store.
            try reopened.changeMasterKey(to: .keyFile(path: directory + "/k.key"))
            #expect(try lookupKeyItem(store.identifier) == secret)
            #expect(
                thrown("opening with the old keyring key") { () throws(KeepsakeError) in
                    _ = try SodiumFileStore(directory: directory + "/s", key: .keyring())
                }?.code == .wrongKey)
            let byFile = try SodiumFileStore(directory: directory + "/s", key: .keyFile(path: directory + "/k.key"))
            #expect(try byFile.data(forKey: "token") == Data("kept".utf8))

            // Back to the keyring: a new key goes first in the item, the earlier one kept after it.
            try byFile.changeMasterKey(to: .keyring())
            let rotated = try #require(try lookupKeyItem(store.identifier))
            let parts = rotated.split(separator: " ").map(String.init)
            #expect(parts.count == 2 && parts[1] == secret && parts[0] != secret, "\(rotated.count) characters")
            #expect(
                try SodiumFileStore(directory: directory + "/s", key: .keyring()).data(forKey: "token")
                    == Data("kept".utf8))
        }

        @Test(
            "a rekey from the keyring to the keyring makes a new key and keeps the old: an older header still opens, a 17th key drops the oldest"
        )
        func keyHistory() throws {
            let directory = try newDirectory()
            let store = try SodiumFileStore.create(directory: directory + "/s", key: .keyring())
            try store.setData(Data("kept".utf8), forKey: "token")
            let first = try #require(try lookupKeyItem(store.identifier))
            let oldHeader = try Data(contentsOf: URL(fileURLWithPath: directory + "/s/keepsake.header"))

            try store.changeMasterKey(to: .keyring())
            let item = try KeyringMasterKeyItem(storeID: store.identifier)
            let keys = try #require(try item.readAll())
            #expect(keys.count == 2)
            #expect(try lookupKeyItem(store.identifier)?.hasSuffix(" " + first) == true)
            #expect(try store.keyGeneration() == 2)
            // The new key alone opens the new header: the header was rewrapped, not left as it was.
            let newHeader = try Data(contentsOf: URL(fileURLWithPath: directory + "/s/keepsake.header"))
            #expect(newHeader != oldHeader)
            #expect(
                try SodiumFileStore(directory: directory + "/s", key: .keyring()).data(forKey: "token")
                    == Data("kept".utf8))
            // A rekey killed after the item changed and before the header did: the old header
            // still opens, with the second key of the item.
            try oldHeader.write(to: URL(fileURLWithPath: directory + "/s/keepsake.header"))
            #expect(
                try SodiumFileStore(directory: directory + "/s", key: .keyring()).data(forKey: "token")
                    == Data("kept".utf8))

            // The item keeps 16 keys: the first is dropped after 15 more rekeys.
            let reopened = try SodiumFileStore(directory: directory + "/s", key: .keyring())
            for _ in 0..<15 { try reopened.changeMasterKey(to: .keyring()) }
            let history = try #require(try item.readAll())
            #expect(history.count == KeyringMasterKeyItem.maximumKeys)
            #expect(try lookupKeyItem(store.identifier)?.contains(first) == false)
            try oldHeader.write(to: URL(fileURLWithPath: directory + "/s/keepsake.header"))
            #expect(
                thrown("opening the first header once its key was dropped") { () throws(KeepsakeError) in
                    _ = try SodiumFileStore(directory: directory + "/s", key: .keyring())
                }?.code == .wrongKey)
        }

        @Test("a missing item is notFound and a locked keyring is locked: no key is made, the store is not opened")
        func missingAndLocked() throws {
            let directory = try newDirectory()
            let store = try SodiumFileStore.create(directory: directory + "/s", key: .keyring())
            try PrivateKeyring.whileLocked {
                let opening = thrown("opening while locked") { () throws(KeepsakeError) in
                    _ = try SodiumFileStore(directory: directory + "/s", key: .keyring())
                }
                #expect(opening?.code == .locked)
                #expect(opening?.store == store.uri)
                #expect(
                    thrown("creating while locked") { () throws(KeepsakeError) in
                        _ = try SodiumFileStore.create(directory: directory + "/t", key: .keyring())
                    }?.code == .locked)
                #expect(!FileManager.default.fileExists(atPath: directory + "/t/keepsake.header"))
            }
            let cleared = try PrivateKeyring.secretTool([
                "secret-tool", "clear", "keepsake-purpose", "file-store-master-key",
                "keepsake-store-id", store.identifier
            ])
            #expect(cleared.status == 0)
            let missing = thrown("opening without the key item") { () throws(KeepsakeError) in
                _ = try SodiumFileStore(directory: directory + "/s", key: .keyring())
            }
            #expect(missing?.code == .notFound)
            #expect(missing?.message.contains(store.identifier) == true)
            #expect(try lookupKeyItem(store.identifier) == nil, "opening made no key")
        }

        @Test(
            "an item that does not hold a key is refused, and left as it is",
            PrivateKeyring.notAgainst(.keePassXC, PrivateKeyring.keePassXCReplaceDialog))
        func damagedItem() throws {
            let directory = try newDirectory()
            let store = try SodiumFileStore.create(directory: directory + "/s", key: .keyring())
            Thread.sleep(forTimeInterval: 1.1)  // the keyring's times are in seconds: make this item the newest
            try PrivateKeyring.secretToolStore(
                label: "x",
                attributes: [
                    ("xdg:schema", "org.keepsake.MasterKey"), ("keepsake-purpose", "file-store-master-key"),
                    ("keepsake-store-id", store.identifier)
                ], secret: "not a key")
            #expect(
                thrown("opening with a damaged key item") { () throws(KeepsakeError) in
                    _ = try SodiumFileStore(directory: directory + "/s", key: .keyring())
                }?.code == .invalidArgument)
        }

        @Test("migrate init --keyring-key, put and get with it, rekey to a key file and back")
        func cli() throws {
            let directory = try newDirectory()
            let uri = "file:" + directory + "/s"
            let created = try runMigrate(["init", "--store", uri, "--keyring-key", "--json"])
            #expect(created.status == 0, "\(created.stderr)")
            let id = try #require(try jsonObject(created.stdout)["id"] as? String)
            #expect(try lookupKeyItem(id)?.count == 64)
            let put = try Shell.run(
                [migrateExecutable, "put", "token", "--string", "--store", uri, "--keyring-key"],
                stdin: Data("abc".utf8))
            #expect(put.status == 0, "\(put.stderr)")
            #expect(try runMigrate(["get", "token", "--store", uri, "--keyring-key"]).stdout.contains("abc"))
            let rekey = try runMigrate([
                "rekey", "--store", uri, "--keyring-key", "--new-key-file", directory + "/k.key"
            ])
            #expect(rekey.status == 0, "\(rekey.stderr)")
            #expect(try runMigrate(["get", "token", "--store", uri, "--keyring-key"]).status == 71)
            let back = try runMigrate(["rekey", "--store", uri, "--key-file", directory + "/k.key", "--new-keyring-key"]
            )
            #expect(back.status == 0, "\(back.stderr)")
            let reopened = try runMigrate(["get", "token", "--store", uri, "--keyring-key"])
            #expect(reopened.status == 0, "\(reopened.stderr)")
            let both = try runMigrate([
                "get", "token", "--store", uri, "--keyring-key", "--key-file", directory + "/k.key"
            ])
            #expect(both.status == 64)
        }

        @Test("keyring → file store keyed by the keyring, through migrate copy")
        func copyIntoKeyringKeyedStore() throws {
            let directory = try newDirectory()
            let uri = "file:" + directory + "/s"
            #expect(try runMigrate(["init", "--store", uri, "--keyring-key"]).status == 0)
            let service = PrivateKeyring.uniqueService("to-file")
            try PrivateKeyring.secretToolStore(
                label: "t", attributes: [("service", service), ("username", "token")],
                secret: "hunter2")
            let moved = try runMigrate([
                "copy", "--from", "keyring:" + service, "--to", uri, "--to-keyring-key",
                "token", "--move"
            ])
            #expect(moved.status == 0, "\(moved.stdout)\(moved.stderr)")
            #expect(moved.stdout.contains("moved"))
            #expect(try PrivateKeyring.secretToolLookup(service: service, key: "token") == nil)
            let store = try SodiumFileStore(directory: directory + "/s", key: .keyring())
            #expect(try store.data(forKey: "token") == Data("hunter2".utf8))
        }
    }
}
