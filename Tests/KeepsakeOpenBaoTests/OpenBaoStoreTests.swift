import Foundation
import Keepsake
import KeepsakeOpenBao
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

/// One in-memory server for the suites that do not stop, seal or restart theirs: each test
/// works in a folder of its own. A static is never deinitialised, so the server is killed when
/// the test process exits (and by scripts/openbao, should the process crash).
enum SharedServer {
    private static let server = Mutex<OpenBaoTestServer?>(nil)

    static func get() throws -> OpenBaoTestServer {
        try server.withLock { server in
            if let server { return server }
            let started = try OpenBaoTestServer()
            server = started
            atexit { SharedServer.server.withLock { $0?.kill() } }
            return started
        }
    }
}

/// The error `body` throws, which must be a `KeepsakeError`.
func keepsakeError(_ body: () throws -> Void) throws -> KeepsakeError {
    do {
        try body()
    } catch let error as KeepsakeError {
        return error
    }
    throw TestFailure("no error was thrown")
}

extension OpenBaoServerTests {
    @Suite("The OpenBao KV store")
    struct Store {
        @Test("keeps the store contract", arguments: StoreContract.checks)
        func contract(_ check: StoreContract.Check) throws {
            try check.run(on: try SharedServer.get().store())
        }

        @Test("keeps the store contract logged in with AppRole", arguments: StoreContract.checks.prefix(4))
        func contractWithAppRole(_ check: StoreContract.Check) throws {
            try check.run(on: try SharedServer.get().store(appRole: true))
        }

        @Test(
            "keeps the observable store contract, written by another instance",
            arguments: ObservableStoreContract.checks)
        func observableContract(_ check: ObservableStoreContract.Check) async throws {
            let uri = try SharedServer.get().uri()
            try await check.run(
                on: try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri)),
                writer: try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri)))
        }

        @Test("stores the record in the entry's data as {\"record\": TEXT} with cas_required, and nothing else")
        func entryLayout() throws {
            let server = try SharedServer.get()
            let folder = "layout\(UUID().uuidString.prefix(6).lowercased())"
            let store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: server.uri(folder: folder)))
            let record = Data(#"{"data":{"age":"36","name":"Ada"},"schema":"Person","version":0}"#.utf8)
            try store.setData(record, forKey: "person")
            let entry = try server.bao(["kv", "get", "-format=json", "secret/apps/\(folder)/person"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(entry.utf8)) as? [String: Any])
            let data = try #require((object["data"] as? [String: Any])?["data"] as? [String: String])
            #expect(data == ["record": String(decoding: record, as: UTF8.self)])
            let metadata = try server.bao(["kv", "metadata", "get", "-format=json", "secret/apps/\(folder)/person"])
            #expect(metadata.contains(#""cas_required": true"#))
            // A second write is the entry's version 2.
            try store.setData(Data(#""x""#.utf8), forKey: "person")
            #expect(try server.bao(["kv", "get", "-field=record", "secret/apps/\(folder)/person"]) == #""x""#)
            #expect(metadata.contains(#""current_version": 1"#))
        }

        @Test("hostile keys each stay one entry of the folder, and read back exactly")
        func hostileKeys() throws {
            let server = try SharedServer.get()
            let folder = "hostile\(UUID().uuidString.prefix(6).lowercased())"
            let store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: server.uri(folder: folder)))
            let keys = [
                "..", ".", "%2F", "/leading", "trailing/", "a/../../b", "a=2Fb", "sp ace", "ü", "x?y#z", ".hidden",
                String(repeating: "k", count: OpenBaoStore.maximumKeyLength)
            ]
            for (index, key) in keys.enumerated() {
                try store.setData(Data("\(index)".utf8), forKey: key)
            }
            for (index, key) in keys.enumerated() {
                #expect(try store.data(forKey: key) == Data("\(index)".utf8), "\(key)")
            }
            #expect(try store.keys() == keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            // On the server: one entry per key, all in the folder, none a sub-folder.
            let listed = try server.bao(["kv", "list", "-format=json", "secret/apps/\(folder)"])
            let names = try #require(try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [String])
            #expect(names.count == keys.count)
            #expect(names.allSatisfy { !$0.contains("/") && $0 != "." && $0 != ".." }, "\(names)")
            // Nothing escaped the folder.
            let apps = try server.bao(["kv", "list", "-format=json", "secret/apps"])
            #expect(!apps.contains("\"b\""), "\(apps)")

            for bad in ["", "nul\u{0}byte", String(repeating: "k", count: OpenBaoStore.maximumKeyLength + 1)] {
                let error = try keepsakeError { try store.setData(Data("1".utf8), forKey: bad) }
                #expect(error.code == .invalidArgument)
                #expect(error.store == store.uri)
            }
            #expect(try store.keys().count == keys.count)
        }

        @Test("a record over 1 MiB is refused naming the store and key, and the stored one stays")
        func tooLarge() throws {
            let store = try SharedServer.get().store()
            let kept = Data(#""small""#.utf8)
            try store.setData(kept, forKey: "big")
            let huge = Data(("\"" + String(repeating: "a", count: 1_048_576 - 1) + "\"").utf8)  // 1 MiB + 1 byte
            #expect(huge.count == 1_048_577)
            let error = try keepsakeError { try store.setData(huge, forKey: "big") }
            #expect(error.code == .valueRefused)
            #expect(error.store == store.uri)
            #expect(error.key == "big")
            #expect(try store.data(forKey: "big") == kept)
            // Just under the limit is written.
            let fits = Data(("\"" + String(repeating: "b", count: OpenBaoStore.maximumRecordLength - 64) + "\"").utf8)
            try store.setData(fits, forKey: "big")
            #expect(try store.data(forKey: "big") == fits)
        }

        @Test("bytes that are not UTF-8 are refused; nothing is written")
        func notText() throws {
            let store = try SharedServer.get().store()
            let error = try keepsakeError { try store.setData(Data([0xFF, 0xFE]), forKey: "k") }
            #expect(error.code == .valueRefused)
            #expect(error.key == "k")
            #expect(try store.keys() == [])
        }

        @Test("an entry deleted or destroyed by an operator reads as absent, and the next write replaces it")
        func softDeleted() throws {
            let server = try SharedServer.get()
            let folder = "deleted\(UUID().uuidString.prefix(6).lowercased())"
            let store = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: server.uri(folder: folder)))
            try store.setData(Data(#""one""#.utf8), forKey: "a")
            try store.setData(Data(#""one""#.utf8), forKey: "b")
            try server.bao(["kv", "delete", "secret/apps/\(folder)/a"])
            try server.bao(["kv", "destroy", "-versions=1", "secret/apps/\(folder)/b"])
            #expect(try store.data(forKey: "a") == nil)
            #expect(try store.data(forKey: "b") == nil)
            #expect(try store.keys() == [])
            // A write expecting absence applies over either (cas = the deleted version).
            let results = try store.commit([
                StoreWrite(key: "a", value: Data(#""two""#.utf8), expectation: .unchanged(nil)),
                StoreWrite(key: "b", value: Data(#""two""#.utf8), expectation: .unchanged(nil))
            ])
            #expect(results == [.applied, .applied])
            #expect(try store.data(forKey: "a") == Data(#""two""#.utf8))
            #expect(try store.keys() == ["a", "b"])
            #expect(try server.bao(["kv", "get", "-field=record", "secret/apps/\(folder)/b"]) == #""two""#)
        }

        @Test("a removal is a checked version: a writer that read the record before it gets a conflict")
        func removalIsChecked() throws {
            let server = try SharedServer.get()
            let uri = server.uri()
            let first = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri))
            let second = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: uri))
            let old = Data(#""old""#.utf8)
            try first.setData(old, forKey: "k")
            try second.removeData(forKey: "k")
            let results = try first.commit([
                StoreWrite(key: "k", value: Data(#""new""#.utf8), expectation: .unchanged(old))
            ])
            #expect(results == [.conflict])
            #expect(try first.data(forKey: "k") == nil)
            #expect(try first.keys() == [])
        }

        @Test("a policy that denies writes is permissionDenied naming the store and key; nothing changes")
        func deniedWrite() throws {
            let server = try SharedServer.get()
            try server.bao(["kv", "put", "secret/readonly/app/k", #"record="kept""#])
            let store = try OpenBaoStore(
                configuration: OpenBaoConfiguration(
                    parsing:
                        "openbao://127.0.0.1:\(server.port)/secret/readonly/app?cacert=\(server.caFile)&token_file=\(server.appTokenFile)"
                ))
            #expect(try store.data(forKey: "k") == Data(#""kept""#.utf8))
            let error = try keepsakeError { try store.setData(Data(#""changed""#.utf8), forKey: "k") }
            #expect(error.code == .permissionDenied)
            #expect(error.store == store.uri)
            #expect(error.key == "k")
            #expect(error.message.contains("403"))
            #expect(try store.data(forKey: "k") == Data(#""kept""#.utf8))
        }

        @Test("no token, a wrong token file, or a wrong AppRole secret is permissionDenied, and no secret is shown")
        func badCredentials() throws {
            let server = try SharedServer.get()
            let wrong = server.directory + "/wrong-token"
            try "s.notAToken1234567890".write(toFile: wrong, atomically: true, encoding: .utf8)
            let store = try OpenBaoStore(
                configuration: OpenBaoConfiguration(
                    parsing:
                        "openbao://127.0.0.1:\(server.port)/secret/apps/x?cacert=\(server.caFile)&token_file=\(wrong)"))
            let error = try keepsakeError { _ = try store.data(forKey: "k") }
            #expect(error.code == .permissionDenied)
            #expect(!"\(error)".contains("notAToken"))
            let badSecret = server.directory + "/wrong-secret"
            try "00000000-0000-0000-0000-000000000000".write(toFile: badSecret, atomically: true, encoding: .utf8)
            let approle = try OpenBaoStore(
                configuration: OpenBaoConfiguration(
                    parsing:
                        "openbao://127.0.0.1:\(server.port)/secret/apps/x?cacert=\(server.caFile)&role_id_file=\(server.roleIDFile)&secret_id_file=\(badSecret)"
                ))
            let refused = try keepsakeError { _ = try approle.keys() }
            #expect(refused.code == .permissionDenied)
            #expect(refused.message.contains("AppRole"))
            #expect(!"\(refused)".contains("00000000-0000"))
        }

        @Test("a server whose CA is not given is refused as untrusted, never read")
        func untrustedCertificate() throws {
            let server = try SharedServer.get()
            let store = try OpenBaoStore(
                configuration: OpenBaoConfiguration(
                    parsing:
                        "openbao://127.0.0.1:\(server.port)/secret/apps/x?token_file=\(server.appTokenFile)&connect_timeout=1"
                ))
            let error = try keepsakeError { _ = try store.data(forKey: "k") }
            #expect(error.code == .unavailable)
            #expect(error.message.contains("cacert="), "\(error.message)")
        }

        @Test("doctor's diagnosis names the server version, the mount and the token's policies")
        func diagnosis() throws {
            let store = try SharedServer.get().store()
            let text = try store.diagnosis()
            #expect(text.hasPrefix("OpenBao 2."), "\(text)")
            #expect(text.contains("unsealed"))
            #expect(text.contains("mount secret: KV version 2"))
            #expect(text.contains("keepsake-app"), "\(text)")
        }
    }
}
