import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Testing

/// The throwaway cluster scripts/postgres started, if any: its URI is in
/// `KEEPSAKE_TEST_POSTGRES_URI`. Every test here needs one and is skipped, with that reason,
/// without it.
enum TestServer {
    static let environment = ProcessInfo.processInfo.environment
    static let uri = environment["KEEPSAKE_TEST_POSTGRES_URI"]
    static var available: Bool { uri != nil }
    static let skipReason: Comment =
        "no PostgreSQL server: run inside scripts/postgres, which sets KEEPSAKE_TEST_POSTGRES_URI (scripts/test does)"

    /// A URI of the test database with a table of its own, new for each call.
    static func uniqueURI(prefix: String = "t") -> String {
        let table = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        return (uri ?? "") + "&table=" + table
    }

    /// A store on a new table of the test database.
    static func store(prefix: String = "t", masterKey: MasterKeySourceOrNone = .none) throws -> PostgresStore {
        let configuration = try PostgresConfiguration(parsing: uniqueURI(prefix: prefix))
        return try PostgresStore(configuration: configuration, masterKey: masterKey.source)
    }
}

/// Every suite that needs the test cluster, nested here so that they run one at a time: the
/// restart tests restart the server under whatever else is running. Tests that need no server
/// (the sealing vectors) live outside it.
@Suite("On the test PostgreSQL server", .serialized, .enabled(if: TestServer.available, TestServer.skipReason))
struct PostgresServerTests {}

/// psql and table helpers on the test database.
enum SQL {
    /// The test database's URI without Keepsake's own parameters, as psql takes it.
    static var psqlURI: String { TestServer.uri ?? "" }

    /// Runs `sql` through psql; its unaligned, tuples-only output.
    @discardableResult
    static func run(_ sql: String) throws -> String {
        let result = try BuiltExecutable(path: "/usr/bin/psql").run(
            ["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", psqlURI, "-c", sql])
        guard result.status == 0 else { throw TestFailure("psql failed: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Creates `table` as Keepsake does and fills it with `count` Person V0 envelopes,
    /// `p1` … `pN`, written by psql.
    static func seedOldPeople(table: String, count: Int, prefix: String = "p") throws {
        try run(
            """
            CREATE TABLE \(table) (key text PRIMARY KEY, record bytea NOT NULL, version int8 NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now());
            INSERT INTO \(table) (key, record, version)
            SELECT '\(prefix)' || i,
                convert_to(format('{"data":{"age":"%s","name":"n%s"},"schema":"Person","version":0}', i, i), 'UTF8'), 1
            FROM generate_series(1, \(count)) AS i;
            """)
    }

    /// How many records of `table` are Person V3 envelopes, and how many rows there are.
    static func countMigrated(table: String) throws -> (migrated: Int, rows: Int) {
        let text = try run(
            """
            SELECT count(*) FILTER (WHERE convert_from(record, 'UTF8') LIKE '%"schema":"Person","version":3}'),
                count(*) FROM \(table)
            """)
        let parts = text.split(separator: "|").compactMap { Int($0) }
        guard parts.count == 2 else { throw TestFailure("unexpected psql output: \(text)") }
        return (parts[0], parts[1])
    }
}

/// A test failure with a message.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The built `migrate` (with the PostgreSQL backends) and the Vault writer.
let migrateBinary = BuiltExecutable(named: "migrate", overriddenBy: "MIGRATE_BINARY")
let writerBinary = BuiltExecutable(named: "keepsake-postgres-writer")

/// A new table name for one test.
func newTable(_ prefix: String) -> String {
    "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
}

/// The store URI of `table` in the test database.
func storeURI(table: String) -> String {
    (TestServer.uri ?? "") + "&table=" + table
}
