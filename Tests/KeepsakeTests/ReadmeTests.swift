import Foundation
import Keepsake
import Migrations
import Testing

@Suite("README", .serialized)
struct ReadmeTests {
    /// The quick start, verbatim from README.md (the test below checks it still is).
    func quickStart() throws {
        let vault = Vault(store: try DefaultsStore(suite: "settings", app: "com.example.notes"))

        do {
            if let person = try vault.load(Person.chain) {
                print("Hello, \(person.value.alias)")  // any stored version, migrated and written back
            } else {
                try vault.save(PersonV3(alias: "Ada", email: "ada@example.com"), in: Person.chain)
            }
        } catch where error.code == .newerVersion {
            // Written by a newer release: it is left untouched. Carry on without it.
        } catch {
            print("Cannot read the profile: \(error)")  // names the store, the key and the cause
        }
    }

    @Test("the quick start saves a Person on first run and reads it back after")
    func quickStartRuns() throws {
        let config = try temporaryDirectory()
        setenv("XDG_CONFIG_HOME", config, 1)
        defer { unsetenv("XDG_CONFIG_HOME") }
        try quickStart()
        let suite = DefaultsStore(path: config + "/com.example.notes/settings.json")
        #expect(try suite.data(forKey: "person") == bytes(
            #"{"data":{"alias":"Ada","email":"ada@example.com"},"schema":"Person","version":3}"#))
        try quickStart()  // now current: no error, nothing rewritten
        #expect(try suite.keys() == ["person"])
    }

    @Test("the README's quick start is the code this suite runs")
    func quickStartIsVerbatim() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "```swift\nimport Keepsake\n"))
        let body = readme[start.upperBound...]
        let end = try #require(body.range(of: "```"))
        let snippet = body[..<end.lowerBound]
            .split(separator: "\n", omittingEmptySubsequences: false)
            .drop { $0.hasPrefix("import") || $0.isEmpty }
            .map { $0.isEmpty ? "" : "        " + $0 }
            .joined(separator: "\n")
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        #expect(source.contains(snippet.trimmingCharacters(in: .newlines)))
    }
}
