import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Testing

extension PostgresServerTests {
    @Suite("migrate on a PostgreSQL store")
    struct PostgresCLITests {
        @Test("migrate run migrates a table of old records written by psql; status, get and put work on it")
        func runMigratesOldRecords() throws {
            let table = newTable("cli")
            try SQL.seedOldPeople(table: table, count: 250)
            try SQL.run(
                """
                INSERT INTO \(table) (key, record, version)
                VALUES ('person', convert_to('{"name":"Ada","age":"36"}', 'UTF8'), 1)
                """)
            let store = storeURI(table: table)
            let status = try migrateBinary.run(["status", "--store", store, "--json"])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("\"outdated\""))

            let run = try migrateBinary.run(["run", "--store", store, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let counts = try SQL.countMigrated(table: table)
            #expect(counts.migrated == 251 && counts.rows == 251)

            let get = try migrateBinary.run(["get", "person", "--store", store])
            #expect(get.status == 0)
            #expect(get.stdout.contains(#""alias":"Ada""#) && get.stdout.contains(#""version":3"#))
            let again = try migrateBinary.run(["run", "--store", store, "--json"])
            #expect(again.status == 0 && !again.stdout.contains(#""state" : "migrated""#))

            let put = try migrateBinary.run(["put", "note", "--store", store], stdin: "plain bytes")
            #expect(put.status == 0, "\(put.stderr)")
            #expect(
                try SQL.run("SELECT convert_from(record, 'UTF8') FROM \(table) WHERE key = 'note'") == "plain bytes")
        }

        @Test("migrate copy moves records between a defaults suite and a PostgreSQL table, both ways")
        func copyBetweenStores() throws {
            let directory = FileManager.default.temporaryDirectory.path + "/keepsake-pg-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            let suite = "defaults:\(directory)/suite.json"
            let back = "defaults:\(directory)/back.json"
            #expect(
                try migrateBinary.run(["put", "person", "--store", suite], stdin: #"{"name":"Bo","age":"7"}"#).status
                    == 0)
            let table = newTable("copy")
            let store = storeURI(table: table)
            let copy = try migrateBinary.run(["copy", "--from", suite, "--to", store])
            #expect(copy.status == 0, "\(copy.stderr)")
            #expect(try SQL.run("SELECT count(*) FROM \(table)") == "1")
            let copyBack = try migrateBinary.run(["copy", "--from", store, "--to", back])
            #expect(copyBack.status == 0, "\(copyBack.stderr)")
            let get = try migrateBinary.run(["get", "person", "--store", back])
            #expect(get.stdout.contains("Bo"))
        }

        @Test("copy into a table the role may not create exits 77, writes nothing and says nothing is in both stores")
        func copyWithoutCreatePrivilege() throws {
            let directory = FileManager.default.temporaryDirectory.path + "/keepsake-pg-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            let suite = "defaults:\(directory)/suite.json"
            #expect(
                try migrateBinary.run(["put", "person", "--store", suite], stdin: #"{"name":"Bo","age":"7"}"#).status
                    == 0)
            let before = try String(contentsOfFile: directory + "/suite.json", encoding: .utf8)
            // A role that may log in but not create anything in the schema (PostgreSQL 15's default).
            let role = "keepsake_nocreate_" + UUID().uuidString.prefix(6).lowercased()
            try SQL.run("CREATE ROLE \(role) LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC")
            let table = newTable("nocreate")
            let uri = try #require(TestServer.uri)
            let store =
                uri.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://\(role)@")
                + "&table=\(table)"
            for move in [false, true] {
                let copy = try migrateBinary.run(["copy", "--from", suite, "--to", store] + (move ? ["--move"] : []))
                #expect(copy.status == 77, "\(copy.stdout)\(copy.stderr)")
                #expect(copy.stdout.contains("Nothing was written."), "\(copy.stdout)")
                #expect(!copy.stdout.contains("inBoth") && !copy.stdout.contains("could not be restored"))
                #expect(copy.stdout.contains("permission denied"), "\(copy.stdout)")
            }
            #expect(try SQL.run("SELECT count(*) FROM pg_tables WHERE tablename = '\(table)'") == "0")
            #expect(try String(contentsOfFile: directory + "/suite.json", encoding: .utf8) == before)
        }

        @Test("A URI with a password, an unknown parameter or a bad table name is refused before connecting")
        func badURIs() throws {
            for text in [
                "postgresql://u:secret@localhost/db", "postgresql://u@localhost/db?tabel=x",
                "postgresql://u@localhost/db?table=x;drop", "postgresql://u@localhost:99999/db"
            ] {
                #expect(throws: KeepsakeError.self) { try PostgresConfiguration(parsing: text, environment: [:]) }
                let result = try migrateBinary.run(["status", "--store", text])
                #expect(result.status != 0)
                #expect(!result.stderr.contains("secret"))
            }
        }

        @Test("A password comes from PGPASSWORD over TCP (scram-sha-256)")
        func passwordFromEnvironment() throws {
            let environment = TestServer.environment
            let tcp = try #require(environment["KEEPSAKE_TEST_POSTGRES_TCP_URI"])
            let password = try #require(environment["KEEPSAKE_TEST_POSTGRES_PASSWORD"])
            let table = newTable("pw")
            let withPassword = try PostgresConfiguration(
                parsing: tcp + "&table=" + table, environment: ["PGPASSWORD": password])
            let store = try PostgresStore(configuration: withPassword)
            try store.setData(Data("x".utf8), forKey: "k")
            #expect(try store.data(forKey: "k") == Data("x".utf8))
            let without = try PostgresConfiguration(parsing: tcp + "&table=" + table + "&timeout=3", environment: [:])
            // Opening asks nothing of the server; the first call is refused at once, as the server said.
            let unauthenticated = try PostgresStore(configuration: without)
            let error = #expect(throws: KeepsakeError.self) { try unauthenticated.data(forKey: "k") }
            #expect(error?.code == .permissionDenied, "\(String(describing: error))")
        }
    }
}
