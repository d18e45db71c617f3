import Foundation
import Keepsake
import KeepsakePostgres
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
