import Foundation
import Keepsake
import KeepsakeOpenBao
import KeepsakeSodium
import KeepsakeTesting
import Testing

extension OpenBaoServerTests {
    @Suite("A master key held by OpenBao Transit (envelope encryption)")
    struct TransitKeyTests {
        /// A scratch directory and a Transit key source on the shared server's `records` key,
        /// logging in with AppRole (role and secret ids from files).
        func setUp(_ server: OpenBaoTestServer) throws -> (directory: String, transit: OpenBaoTransitKey) {
            let directory = server.directory + "/transit-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let transit = try OpenBaoTransitKey(
                parsing:
                    "openbao://127.0.0.1:\(server.port)/transit/records?cacert=\(server.caFile)&role_id_file=\(server.roleIDFile)&secret_id_file=\(server.secretIDFile)",
                wrappedKeyFile: directory + "/records.key.wrapped")
            return (directory, transit)
        }

        @Test("a file store keyed by Transit opens, reads and writes; only the wrapped key is on disk")
        func fileStore() throws {
            let server = try SharedServer.get()
            let (directory, transit) = try setUp(server)
            let store = try SodiumFileStore.create(directory: directory + "/records", key: .provider(transit))
            try store.setData(Data(#""s3cr3t""#.utf8), forKey: "apiToken")

            let wrapped = try String(contentsOfFile: transit.wrappedKeyFile, encoding: .utf8)
            #expect(wrapped.hasPrefix("vault:v1:"), "\(wrapped)")
            let mode =
                try FileManager.default.attributesOfItem(atPath: transit.wrappedKeyFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            // The data key Transit unwraps is the same every time, and is not the file's bytes.
            let first = try transit.masterKey(createIfAbsent: false)
            let second = try transit.masterKey(createIfAbsent: false)
            #expect(first.count == 32)
            #expect(first.withUnsafeBytes { Data($0) } == second.withUnsafeBytes { Data($0) })
            #expect(!wrapped.contains(first.withUnsafeBytes { Data($0) }.base64EncodedString()))

            let reopened = try SodiumFileStore(directory: directory + "/records", key: .provider(transit))
            #expect(try reopened.data(forKey: "apiToken") == Data(#""s3cr3t""#.utf8))
            try reopened.setData(Data(#""second""#.utf8), forKey: "other")
            #expect(try store.data(forKey: "other") == Data(#""second""#.utf8))
        }

        @Test("a Transit key rotation and rewrap re-seal no record; min_decryption_version then refuses the old wrap")
        func rotationAndRewrap() throws {
            let server = try SharedServer.get()
            let (directory, transit) = try setUp(server)
            let store = try SodiumFileStore.create(directory: directory + "/records", key: .provider(transit))
            for index in 0..<20 { try store.setData(Data("\"value \(index)\"".utf8), forKey: "k\(index)") }
            let recordFiles = try FileManager.default.contentsOfDirectory(atPath: directory + "/records").sorted()
            let recordBytes = try recordFiles.map {
                try Data(contentsOf: URL(fileURLWithPath: directory + "/records/" + $0))
            }
            let oldWrapped = try String(contentsOfFile: transit.wrappedKeyFile, encoding: .utf8)
            let version = Int(try server.bao(["read", "-field=latest_version", "transit/keys/records"])) ?? 0
            #expect(oldWrapped.hasPrefix("vault:v\(version):"))

            _ = try server.bao(["write", "-f", "transit/keys/records/rotate"])
            let (from, to) = try transit.rewrap()
            #expect(from == version && to == version + 1)
            let newWrapped = try String(contentsOfFile: transit.wrappedKeyFile, encoding: .utf8)
            #expect(newWrapped.hasPrefix("vault:v\(version + 1):"))
            #expect(newWrapped != oldWrapped)
            // Not one record was re-sealed: the data key is the same.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/records").sorted() == recordFiles)
            #expect(
                try recordFiles.map { try Data(contentsOf: URL(fileURLWithPath: directory + "/records/" + $0)) }
                    == recordBytes)
            let reopened = try SodiumFileStore(directory: directory + "/records", key: .provider(transit))
            #expect(try reopened.data(forKey: "k7") == Data("\"value 7\"".utf8))
            #expect(try transit.rewrap() == (version + 1, version + 1), "already the newest: nothing changes")

            // Old versions retired: the rewrapped key still opens; a copy of the old wrap is refused, typed.
            _ = try server.bao([
                "write", "transit/keys/records/config", "min_decryption_version=\(version + 1)"
            ])
            defer { _ = try? server.bao(["write", "transit/keys/records/config", "min_decryption_version=1"]) }
            #expect(
                try SodiumFileStore(directory: directory + "/records", key: .provider(transit)).data(forKey: "k1")
                    != nil)
            let stale = directory + "/stale.wrapped"
            try oldWrapped.write(toFile: stale, atomically: true, encoding: .utf8)
            let staleKey = try OpenBaoTransitKey(configuration: transit.configuration, wrappedKeyFile: stale)
            let refused = try keepsakeError { _ = try staleKey.masterKey(createIfAbsent: false) }
            #expect(refused.code == .wrongKey, "\(refused)")
            #expect(refused.message.contains("min_decryption_version"))
            #expect(refused.store?.contains(stale) == true)
        }

        @Test("a missing, damaged or unusable wrapped key is a typed error naming the file; nothing is made")
        func refusals() throws {
            let server = try SharedServer.get()
            let (directory, transit) = try setUp(server)
            let missing = try keepsakeError { _ = try transit.masterKey(createIfAbsent: false) }
            #expect(missing.code == .notFound && missing.message.contains(transit.wrappedKeyFile))
            #expect(!FileManager.default.fileExists(atPath: transit.wrappedKeyFile))

            try "not a wrapped key".write(toFile: transit.wrappedKeyFile, atomically: true, encoding: .utf8)
            let damaged = try keepsakeError { _ = try transit.masterKey(createIfAbsent: true) }
            #expect(damaged.code == .corruptStore, "\(damaged)")
            #expect(try String(contentsOfFile: transit.wrappedKeyFile, encoding: .utf8) == "not a wrapped key")

            // A role without access to another Transit key: permission denied, not "absent".
            let other = try OpenBaoTransitKey(
                parsing:
                    "openbao://127.0.0.1:\(server.port)/transit/other?cacert=\(server.caFile)&token_file=\(server.appTokenFile)",
                wrappedKeyFile: directory + "/other.wrapped")
            let denied = try keepsakeError { _ = try other.masterKey(createIfAbsent: true) }
            #expect(denied.code == .permissionDenied, "\(denied)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/other.wrapped"))
            #expect(
                !String(describing: denied).contains(try String(contentsOfFile: server.appTokenFile, encoding: .utf8)))

            let noName = try keepsakeError {
                _ = try OpenBaoTransitKey(
                    parsing: "openbao://127.0.0.1:\(server.port)/transit?token_file=\(server.appTokenFile)",
                    wrappedKeyFile: directory + "/x")
            }
            #expect(noName.code == .invalidArgument)
        }

        @Test(
            "migrate --master-key transit:URI creates, writes, reads and rotates a file store keyed by Transit; a URI without wrapped_key_file= is a usage error"
        )
        func cli() throws {
            let server = try SharedServer.get()
            let (directory, transit) = try setUp(server)
            let key =
                "transit:openbao://127.0.0.1:\(server.port)/transit/records?cacert=\(server.caFile)&role_id_file=\(server.roleIDFile)&secret_id_file=\(server.secretIDFile)&wrapped_key_file=\(transit.wrappedKeyFile)"
            let store = "file:" + directory + "/records"
            let created = try migrateBinary.run(["init", "--store", store, "--master-key", key])
            #expect(created.status == 0, "\(created.stderr)")
            #expect(try String(contentsOfFile: transit.wrappedKeyFile, encoding: .utf8).hasPrefix("vault:v"))
            let put = try migrateBinary.run(
                ["put", "person", "--store", store, "--master-key", key], stdin: #"{"name":"Ada","age":"36"}"#)
            #expect(put.status == 0, "\(put.stderr)")
            let run = try migrateBinary.run(["run", "--store", store, "--master-key", key, "--json"])
            #expect(try totals(run.stdout)["migrated"] == 1, "\(run.stdout)\(run.stderr)")
            let rotate = try migrateBinary.run(["rekey", "--store", store, "--master-key", key, "--data-key", "--json"])
            #expect(rotate.status == 0, "\(rotate.stderr)")
            // The library opens what the CLI wrote, with the same Transit key and wrapped file.
            let opened = try SodiumFileStore(directory: directory + "/records", key: .provider(transit))
            let record = try #require(try opened.data(forKey: "person"))
            #expect(String(decoding: record, as: UTF8.self).contains(#""alias":"Ada""#), "migrated to v3")
            #expect(opened.writtenKeyID == "generation 2")

            let withoutFile = try migrateBinary.run([
                "status", "--store", store, "--master-key",
                "transit:openbao://127.0.0.1:\(server.port)/transit/records?cacert=\(server.caFile)"
            ])
            #expect(withoutFile.status == 64, "\(withoutFile.stderr)")
            #expect(withoutFile.stderr.contains("wrapped_key_file=PATH"), "\(withoutFile.stderr)")
            let unknown = try migrateBinary.run(["status", "--store", store, "--master-key", "vault-transit:x"])
            #expect(unknown.status == 64 && unknown.stderr.contains("transit:URI"), "\(unknown.stderr)")
        }
    }
}

/// The KeepsakeOpenBao article's Transit example, verbatim (the article quotes it; the tests
/// above run the same calls against a real server).
func articleTransitExample() throws {
    let transit = try OpenBaoTransitKey(
        parsing:
            "openbao://bao.internal:8200/transit/records?cacert=/etc/myapp/bao-ca.pem&role_id_file=/run/secrets/role-id&secret_id_file=/run/secrets/secret-id",
        wrappedKeyFile: "/var/lib/myapp/records.key.wrapped")
    let store = try SodiumFileStore.create(directory: "/var/lib/myapp/records", key: .provider(transit))
    _ = store
}
