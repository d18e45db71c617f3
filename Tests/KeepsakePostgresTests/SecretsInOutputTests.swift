import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Testing

/// A password given in a URI, wherever in it, never reaches a message, a report or `--json`
/// (no server needed: the URI is refused before anything connects).
@Suite("No password in any output")
struct SecretsInOutputTests {
    static let uris = [
        "postgresql://app@db.invalid/myapp?password=hunter2secret",
        "postgresql://app@db.invalid/myapp?table=t&PASSWORD=hunter2secret",
        "postgresql://app:hunter2secret@db.invalid/myapp?table=t"
    ]

    @Test("the library's error names the store without the password", arguments: uris)
    func libraryError(uri: String) {
        let error = #expect(throws: KeepsakeError.self) { try PostgresConfiguration(parsing: uri) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.description.contains("hunter2secret") == false, "\(String(describing: error))")
        #expect(error?.store?.contains("***") == true, "\(String(describing: error?.store))")
    }

    @Test("migrate prints and reports no password, in text and in --json", arguments: uris)
    func cli(uri: String) throws {
        for json in [false, true] {
            let result = try migrateBinary.run(["status", "--store", uri] + (json ? ["--json"] : []))
            #expect(result.status != 0)
            #expect(!result.stdout.contains("hunter2secret"), "\(result.stdout)")
            #expect(!result.stderr.contains("hunter2secret"), "\(result.stderr)")
            #expect((result.stdout + result.stderr).contains("***"), "\(result.stdout) \(result.stderr)")
        }
    }

    @Test("redaction keeps everything but the secret")
    func redaction() {
        #expect(
            StoreURI.redactingSecrets("postgresql://a:b@h:5/d?table=t&password=p&sslmode=disable")
                == "postgresql://a:***@h:5/d?table=t&password=***&sslmode=disable")
        #expect(StoreURI.redactingSecrets("defaults:/tmp/x.json") == "defaults:/tmp/x.json")
        #expect(StoreURI.redactingSecrets("file:/a/b?c") == "file:/a/b?c")
    }
}
