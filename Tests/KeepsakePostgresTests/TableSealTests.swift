import Dispatch
import Foundation
import Keepsake
import KeepsakeSodium
import KeepsakeTesting
import Synchronization
import Testing

@testable import KeepsakePostgres

/// Two master keys and their fingerprints (docs/FORMAT.md §11.2), computed apart from Keepsake
/// (`hashlib.blake2b(b"", digest_size=16, key=K, salt=LE64(2)‖0⁸, person=b"KSPGseal"‖0⁸)`).
private let keyA = String(repeating: "ab", count: 32)
private let fingerprintA = "ff889ed558695c6f3f6636e477a71072"
private let keyB = String(repeating: "cd", count: 32)
private let fingerprintB = "ccc06f5f4d2660caeeb8399895791cc4"

/// A store on `table` of the test database, sealed with `key` (64 hex digits) when one is given.
private func store(_ table: String, key: String? = nil) throws -> PostgresStore {
    try PostgresStore(
        configuration: PostgresConfiguration(parsing: storeURI(table: table)),
        masterKey: key.map { .provider(EnvironmentMasterKey(variable: "K", environment: ["K": $0])) })
}

/// The error `body` throws, or `nil` when it does not throw (another error than a
/// `KeepsakeError` is recorded as an issue).
private func refusal(_ body: () throws -> Void) -> KeepsakeError? {
    do {
        try body()
        return nil
    } catch let error as KeepsakeError {
        return error
    } catch {
        Issue.record("not a KeepsakeError: \(error)")
        return nil
    }
}

/// Every row of `table` as `key:hex(record):version`, in key order: the bytes exactly as stored.
private func rows(_ table: String) throws -> String {
    try SQL.run("SELECT key || ':' || encode(record, 'hex') || ':' || version FROM \(table) ORDER BY key COLLATE \"C\"")
}

/// The table's marker as psql prints it: `sealed|sealed_for|key_fingerprints`, or "" when none.
private func marker(_ table: String) throws -> String {
    let exists = try SQL.run("SELECT to_regclass('keepsake_tables') IS NOT NULL")
    guard exists == "t" else { return "" }
    return try SQL.run(
        """
        SELECT sealed || '|' || coalesce(sealed_for, '-') || '|' || key_fingerprints::text FROM keepsake_tables
        WHERE table_name = 'public.\(table)' AND table_oid = '\(table)'::regclass
        """)
}

/// Creates `table` with the DDL of the releases before table seals (no marker) and stores
/// `values` in it, sealed for `table` with each one's key, as those releases did.
private func seedOldSealedTable(_ table: String, _ values: [(key: String, value: String, masterKey: String)]) throws {
    var sql = """
        CREATE TABLE \(table) (key text PRIMARY KEY, record bytea NOT NULL, version int8 NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now());
        """
    for entry in values {
        let sealer = try Sealer(
            masterKey: SecureBytes(copying: Data(SealedValueVectorTests.bytes(entry.masterKey))), table: table,
            store: "seed")
        let nonce = (0..<Sealer.nonceBytes).map { _ in UInt8.random(in: 0...255) }
        let sealed = try #require(sealer.seal(Data(entry.value.utf8), forKey: entry.key, nonce: nonce, format: 1))
        let hex = sealed.map { String(format: "%02x", $0) }.joined()
        sql += "\nINSERT INTO \(table) (key, record, version) VALUES ('\(entry.key)', decode('\(hex)', 'hex'), 1);"
    }
    try SQL.run(sql)
}

extension PostgresServerTests {
    @Suite("A sealed table records its seal; a write with another key, or none, is refused")
    struct TableSealTests {
        @Test("A store with the table's key writes; the first write records the table as sealed by its key")
        func rightKeyWrites() throws {
            let table = newTable("seal")
            let sealed = try store(table, key: keyA)
            try sealed.setData(Data("one".utf8), forKey: "a")
            try sealed.setData(Data("two".utf8), forKey: "a")
            #expect(try sealed.data(forKey: "a") == Data("two".utf8))
            #expect(try marker(table) == "true|\(table)|{\(fingerprintA)}")
            #expect(try SQL.run("SELECT substr(record, 1, 4) = 'KSPG'::bytea FROM \(table) WHERE key = 'a'") == "t")
            // Another instance with the same key, opened later, writes too.
            let again = try store(table, key: keyA)
            try again.setData(Data("three".utf8), forKey: "b")
            #expect(try sealed.data(forKey: "b") == Data("three".utf8))
        }

        @Test("A store without a key is refused on a sealed table; nothing is written")
        func noKeyRefused() throws {
            let table = newTable("seal")
            let sealed = try store(table, key: keyA)
            try sealed.setData(Data("secret".utf8), forKey: "a")
            let before = try rows(table)

            let plain = try store(table)
            let error = try #require(refusal { try plain.setData(Data("plain".utf8), forKey: "a") })
            #expect(error.code == .wrongKey)
            #expect(error.store == plain.uri)
            #expect(error.message.contains("this table is sealed (master key fingerprint \(fingerprintA))"))
            #expect(error.message.contains("open it with its master key"))
            let batch = refusal {
                _ = try plain.commit([
                    StoreWrite(key: "b", value: Data("new".utf8)), StoreWrite(key: "a", value: nil)
                ])
            }
            #expect(batch?.code == .wrongKey)
            #expect(try rows(table) == before)
            #expect(try sealed.data(forKey: "a") == Data("secret".utf8))
            #expect(try sealed.data(forKey: "b") == nil)
        }

        @Test("A store with another key is refused on a sealed table; nothing is written")
        func otherKeyRefused() throws {
            let table = newTable("seal")
            let sealed = try store(table, key: keyA)
            try sealed.setData(Data("secret".utf8), forKey: "a")
            let before = try rows(table)

            let other = try store(table, key: keyB)
            let error = try #require(refusal { try other.setData(Data("other".utf8), forKey: "a") })
            #expect(error.code == .wrongKey)
            #expect(
                error.message.contains(
                    "sealed by another key (fingerprint \(fingerprintA)); this store holds primary key \(fingerprintB)"
                ))
            #expect(refusal { try other.setData(Data("other".utf8), forKey: "new") }?.code == .wrongKey)
            #expect(try rows(table) == before)
            #expect(try sealed.data(forKey: "a") == Data("secret".utf8))
            #expect(try marker(table) == "true|\(table)|{\(fingerprintA)}")
        }

        @Test("A store with a key is refused on a plain table, marked or not; nothing is written")
        func keyOnPlainTableRefused() throws {
            let table = newTable("seal")
            let plain = try store(table)
            try plain.setData(Data("plain".utf8), forKey: "a")
            #expect(try marker(table) == "false|-|{}")
            let before = try rows(table)
            let sealed = try store(table, key: keyA)
            let error = try #require(refusal { try sealed.setData(Data("x".utf8), forKey: "b") })
            #expect(error.code == .wrongKey)
            #expect(error.message.contains("this table holds plain values"))
            #expect(try rows(table) == before)

            // A table an older release (here psql) filled with plain values, without a marker.
            let old = newTable("sealold")
            try SQL.seedOldPeople(table: old, count: 3)
            let oldBefore = try rows(old)
            let onOld = try store(old, key: keyA)
            #expect(refusal { try onOld.setData(Data("x".utf8), forKey: "p1") }?.code == .wrongKey)
            #expect(try rows(old) == oldBefore)
            #expect(try marker(old) == "")
            try store(old).setData(Data("plain".utf8), forKey: "p4")
            #expect(try marker(old) == "false|-|{}")
        }

        @Test("A table an older release sealed (no marker): the right key writes and records it, another is refused")
        func oldSealedTable() throws {
            let table = newTable("sealold")
            try seedOldSealedTable(
                table, [("a", "one", keyA), ("b", "two", keyA), ("c", "three", keyA)])
            let before = try rows(table)
            #expect(try marker(table) == "")

            let other = try store(table, key: keyB)
            let error = try #require(refusal { try other.setData(Data("x".utf8), forKey: "d") })
            #expect(error.code == .wrongKey)
            #expect(error.message.contains("do not open with this store's keys (primary key \(fingerprintB))"))
            #expect(refusal { try store(table).setData(Data("x".utf8), forKey: "d") }?.code == .wrongKey)
            #expect(try rows(table) == before)
            #expect(try marker(table) == "")

            let right = try store(table, key: keyA)
            try right.setData(Data("four".utf8), forKey: "d")
            #expect(try marker(table) == "true|\(table)|{\(fingerprintA)}")
            #expect(try right.data(forKey: "a") == Data("one".utf8))
            #expect(try right.data(forKey: "d") == Data("four".utf8))
            let after = try rows(table)
            let marked = refusal { try other.setData(Data("x".utf8), forKey: "a") }
            #expect(marked?.code == .wrongKey)
            #expect(marked?.message.contains("sealed by another key (fingerprint \(fingerprintA))") == true)
            #expect(try rows(table) == after)
        }

        @Test("An unmarked table of two keys is refused to both; a marker written by hand settles it")
        func tableOfTwoKeys() throws {
            let table = newTable("sealmix")
            try seedOldSealedTable(table, [("a", "one", keyA), ("b", "two", keyB)])
            let before = try rows(table)
            for key in [keyA, keyB] {
                let error = refusal { try store(table, key: key).setData(Data("x".utf8), forKey: "c") }
                #expect(error?.code == .wrongKey)
                #expect(error?.message.contains("more than one key: 1 of the 2 sealed values") == true)
            }
            #expect(try rows(table) == before)
            try SQL.run(
                """
                INSERT INTO keepsake_tables (table_name, table_oid, sealed, sealed_for, key_fingerprints)
                VALUES ('public.\(table)', '\(table)'::regclass, true, '\(table)', '{\(fingerprintA)}')
                """)
            try store(table, key: keyA).setData(Data("x".utf8), forKey: "c")
            #expect(refusal { try store(table, key: keyB).setData(Data("x".utf8), forKey: "c") }?.code == .wrongKey)
        }

        @Test("A marker changed after a store's first write holds for its next write")
        func markerChangedBetweenWrites() throws {
            let table = newTable("seal")
            let plain = try store(table)
            try plain.setData(Data("one".utf8), forKey: "a")
            try SQL.run(
                """
                UPDATE keepsake_tables SET sealed = true, sealed_for = '\(table)', key_fingerprints = '{\(fingerprintA)}'
                WHERE table_name = 'public.\(table)'
                """)
            let before = try rows(table)
            let error = refusal { try plain.setData(Data("two".utf8), forKey: "a") }
            #expect(error?.code == .wrongKey)
            #expect(error?.message.contains("this table is sealed (master key fingerprint \(fingerprintA))") == true)
            #expect(try rows(table) == before)
        }

        @Test("Another spelling of a sealed table's name is refused: its values would not open for the others")
        func otherSpellingRefused() throws {
            let table = newTable("seal")
            try store(table, key: keyA).setData(Data("one".utf8), forKey: "a")
            let before = try rows(table)
            let qualified = try PostgresStore(
                configuration: PostgresConfiguration(parsing: storeURI(table: "public." + table)),
                masterKey: .provider(EnvironmentMasterKey(variable: "K", environment: ["K": keyA])))
            let error = refusal { try qualified.setData(Data("x".utf8), forKey: "b") }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("sealed for the table name '\(table)'") == true)
            #expect(try rows(table) == before)
        }

        @Test("A dropped table's marker does not hold for a new table of the same name")
        func staleMarkerIgnored() throws {
            let table = newTable("seal")
            try store(table, key: keyA).setData(Data("one".utf8), forKey: "a")
            try SQL.run("DROP TABLE \(table)")
            try SQL.seedOldPeople(table: table, count: 2)
            try store(table).setData(Data("plain".utf8), forKey: "p3")
            #expect(try marker(table) == "false|-|{}")
            #expect(try SQL.run("SELECT count(*) FROM keepsake_tables WHERE table_name = 'public.\(table)'") == "1")
        }

        @Test("A role that may not write keepsake_tables keeps no marker; the rows still refuse another key")
        func roleWithoutMarkers() throws {
            // keepsake_tables exists, owned by the superuser; the password role has no rights on it.
            try store(newTable("seal"), key: keyA).setData(Data("x".utf8), forKey: "a")
            let environment = TestServer.environment
            let tcp = try #require(environment["KEEPSAKE_TEST_POSTGRES_TCP_URI"])
            let password = try #require(environment["KEEPSAKE_TEST_POSTGRES_PASSWORD"])
            let table = newTable("sealrole")
            func roleStore(_ key: String?) throws -> PostgresStore {
                try PostgresStore(
                    configuration: PostgresConfiguration(
                        parsing: tcp + "&table=" + table, environment: ["PGPASSWORD": password]),
                    masterKey: key.map { .provider(EnvironmentMasterKey(variable: "K", environment: ["K": $0])) })
            }
            let sealed = try roleStore(keyA)
            try sealed.setData(Data("secret".utf8), forKey: "a")
            try sealed.setData(Data("more".utf8), forKey: "b")
            #expect(try marker(table) == "")
            let before = try rows(table)
            #expect(refusal { try roleStore(nil).setData(Data("plain".utf8), forKey: "a") }?.code == .wrongKey)
            #expect(refusal { try roleStore(keyB).setData(Data("other".utf8), forKey: "c") }?.code == .wrongKey)
            #expect(try rows(table) == before)
            #expect(try sealed.data(forKey: "a") == Data("secret".utf8))
        }

        @Test("Two first writers of a new table, one sealed and one plain, race: one wins every write, the other none")
        func racingFirstWriters() throws {
            for round in 0..<3 {
                let table = newTable("seal\(round)")
                let writers = [try store(table, key: keyA), try store(table)]
                let outcomes = Mutex<[[KeepsakeError?]]>([[], []])
                DispatchQueue.concurrentPerform(iterations: 2) { index in
                    for write in 0..<15 {
                        let error = refusal {
                            try writers[index].setData(Data("v\(write)".utf8), forKey: "w\(index)-\(write)")
                        }
                        outcomes.withLock { $0[index].append(error) }
                    }
                }
                let results = outcomes.withLock { $0 }
                #expect(results.joined().allSatisfy { $0 == nil || $0?.code == .wrongKey }, "\(results)")
                let winners = results.indices.filter { results[$0].allSatisfy { $0 == nil } }
                let losers = results.indices.filter { results[$0].allSatisfy { $0 != nil } }
                #expect(winners.count == 1 && losers.count == 1, "round \(round): \(results)")
                guard let winner = winners.first else { continue }
                #expect(try SQL.run("SELECT count(*) FROM \(table)") == "15")
                let sealedRows = try SQL.run(
                    "SELECT count(*) FILTER (WHERE substr(record, 1, 4) = 'KSPG'::bytea) FROM \(table)")
                #expect(sealedRows == (winner == 0 ? "15" : "0"))
                #expect(try marker(table) == (winner == 0 ? "true|\(table)|{\(fingerprintA)}" : "false|-|{}"))
            }
        }

        @Test("migrate put and copy without the key on a sealed table: refused, exit 71, nothing written")
        func cliRefusals() throws {
            let table = newTable("sealcli")
            let sealedURI = storeURI(table: table) + "&sealkey_env=KEEPSAKE_TEST_SEAL_KEY"
            let environment = ["KEEPSAKE_TEST_SEAL_KEY": keyA]
            let seed = try migrateBinary.run(
                ["put", "person", "--store", sealedURI], stdin: #"{"name":"Ada","age":"36"}"#,
                environment: environment)
            #expect(seed.status == 0, "\(seed.stderr)")
            let before = try rows(table)

            let put = try migrateBinary.run(["put", "note", "--store", storeURI(table: table)], stdin: "plain bytes")
            #expect(put.status == 71, "\(put.stderr)")
            #expect(put.stderr.contains("this table is sealed (master key fingerprint \(fingerprintA))"))
            #expect(put.stderr.contains("nothing was written"))
            #expect(try rows(table) == before)

            let directory =
                FileManager.default.temporaryDirectory.path + "/keepsake-seal-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            let suite = "defaults:\(directory)/suite.json"
            #expect(
                try migrateBinary.run(["put", "person", "--store", suite], stdin: #"{"name":"Bo","age":"7"}"#).status
                    == 0)
            let copy = try migrateBinary.run(
                ["copy", "--from", suite, "--to", storeURI(table: table), "--overwrite"])
            #expect(copy.status == 71, "\(copy.stdout)\(copy.stderr)")
            #expect(copy.stdout.contains("this table is sealed"))
            #expect(copy.stdout.contains("Nothing was written."))
            #expect(try rows(table) == before)

            let wrongKey = try migrateBinary.run(
                ["copy", "--from", suite, "--to", sealedURI, "--overwrite", "--json"],
                environment: ["KEEPSAKE_TEST_SEAL_KEY": keyB])
            #expect(wrongKey.status == 71, "\(wrongKey.stdout)\(wrongKey.stderr)")
            #expect(wrongKey.stdout.contains("sealed by another key (fingerprint \(fingerprintA))"))
            #expect(try rows(table) == before)

            let copied = try migrateBinary.run(
                ["copy", "--from", suite, "--to", sealedURI, "--overwrite"], environment: environment)
            #expect(copied.status == 0, "\(copied.stdout)\(copied.stderr)")
            let get = try migrateBinary.run(["get", "person", "--store", sealedURI], environment: environment)
            #expect(get.stdout.contains("Bo"), "\(get.stdout)\(get.stderr)")
        }

        @Test("--master-key seals and opens a table as sealkey_file= does; read without a key, a value is named sealed")
        func masterKeyOption() throws {
            let directory =
                FileManager.default.temporaryDirectory.path + "/keepsake-seal-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            let keyPath = directory + "/records.key"
            var key = [UInt8](repeating: 0, count: 32)
            for index in key.indices { key[index] = UInt8.random(in: 0...255) }
            #expect(
                FileManager.default.createFile(
                    atPath: keyPath, contents: Data(key), attributes: [.posixPermissions: 0o600]))
            let table = newTable("sealopt")
            let uri = storeURI(table: table)

            let put = try migrateBinary.run(
                ["put", "person", "--store", uri, "--master-key", "file:" + keyPath],
                stdin: #"{"name":"Ada","age":"36"}"#)
            #expect(put.status == 0, "\(put.stderr)")
            #expect(
                try SQL.run(
                    "SELECT substring(record from 1 for 5) = '\\x4b53504702'::bytea FROM \(table) WHERE key = 'person'")
                    == "t", "the value is stored sealed (KSPG, format 2: it names its key)")
            let viaURI = try migrateBinary.run(["get", "person", "--store", uri + "&sealkey_file=" + keyPath])
            #expect(viaURI.status == 0 && viaURI.stdout.contains("Ada"), "\(viaURI.stdout)\(viaURI.stderr)")
            let viaOption = try migrateBinary.run(
                ["status", "--store", uri, "--master-key", "file:" + keyPath, "--json"])
            #expect(
                viaOption.status == 0 && viaOption.stdout.contains(#""outdated""#),
                "\(viaOption.stdout)\(viaOption.stderr)")

            let noKey = try migrateBinary.run(["get", "person", "--store", uri, "--json"])
            #expect(noKey.status != 0)
            #expect(noKey.stdout.contains(#""code" : "wrongKey""#), "\(noKey.stdout)")
            #expect(noKey.stdout.contains("sealed (KSPG, format 2)"), "\(noKey.stdout)")
            #expect(!noKey.stdout.contains("JSON"), "not a JSON syntax error: \(noKey.stdout)")
            let status = try migrateBinary.run(["status", "--store", uri])
            #expect(status.stdout.contains("sealed (KSPG, format 2)"), "\(status.stdout)\(status.stderr)")

            let twice = try migrateBinary.run(
                ["get", "person", "--store", uri + "&sealkey_file=" + keyPath, "--master-key", "file:" + keyPath])
            #expect(twice.status != 0 && twice.stderr.contains("two master keys were given"), "\(twice.stderr)")

            let suite = "defaults:\(directory)/suite.json"
            let plain = try migrateBinary.run(["status", "--store", suite, "--master-key", "file:" + keyPath])
            #expect(plain.status == 64, "\(plain.stderr)")
            #expect(
                plain.stderr.contains("defaults: takes no key") && plain.stderr.contains("postgresql:"),
                "\(plain.stderr)")
            #expect(try SQL.run("SELECT count(*) FROM \(table)") == "1", "nothing else was written")
        }
    }
}
