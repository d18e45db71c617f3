// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeTesting
import Migrations
import Testing

/// The DocC catalogs' examples: every Swift block of every catalog (Sources/*/*.docc,
/// Migrations/Migrations.docc) must be code that a compiled file holds verbatim — here, in the
/// README's compiled files, or in the example tests of the module it documents — and those run.
@Suite("Documentation examples")
struct DocumentationExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `text` with each line's leading spaces removed, so that an example compares with code at
    /// any indentation.
    static func unindented(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String($0.drop { $0 == " " }) }.joined(separator: "\n")
    }

    // Getting started, "Call it from async code":
    func greeting(_ vault: Vault) async throws -> String {
        let person = try await vault.load(Person.chain)  // the async overload: this function is async
        return "Hello, \(person?.value.alias ?? "stranger")"
    }

    @Test("the async example greets the stored person, migrated")
    func greetingRuns() async throws {
        let vault = Vault(store: InMemoryStore(), context: .fixed(now: Date()))
        #expect(try await greeting(vault) == "Hello, stranger")
        try await vault.save(PersonV3(alias: "Ada", email: "ada@example.com"), in: Person.chain)
        #expect(try await greeting(vault) == "Hello, Ada")
    }

    @Test("every Swift block of every DocC catalog is code a compiled file holds verbatim")
    func catalogBlocksAreCompiled() throws {
        let manager = FileManager.default
        var pages: [String] = []
        for folder in ["Sources", "Migrations"] {
            let base = Self.root.appendingPathComponent(folder).path
            guard let files = manager.enumerator(atPath: base) else { continue }
            for case let file as String in files where file.hasSuffix(".md") && file.contains(".docc/") {
                pages.append(base + "/" + file)
            }
        }
        var compiled: [String] = []
        for folder in ["Tests", "Examples"] {
            let base = Self.root.appendingPathComponent(folder).path
            guard let files = manager.enumerator(atPath: base) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") && !file.contains(".build") {
                compiled.append(Self.unindented(try String(contentsOfFile: base + "/" + file, encoding: .utf8)))
            }
        }
        var checked = 0
        for page in pages {
            let text = try String(contentsOfFile: page, encoding: .utf8)
            for block in text.components(separatedBy: "```swift\n").dropFirst() {
                let code = try #require(block.components(separatedBy: "```").first)
                guard !code.hasPrefix("// Package.swift") else { continue }
                let body = Self.unindented(code).split(separator: "\n", omittingEmptySubsequences: false)
                    .drop { $0.hasPrefix("import ") || $0.isEmpty }.joined(separator: "\n")
                    .trimmingCharacters(in: .newlines)
                #expect(compiled.contains { $0.contains(body) }, "\(page): not compiled anywhere:\n\(body)")
                checked += 1
            }
        }
        #expect(pages.count >= 14)
        #expect(checked >= 23)
    }

    // Getting started: the async overload.
    @Test("an async load returns what a save stored")
    func asyncLoad() async throws {
        let vault = Vault(store: InMemoryStore())
        try await vault.save(PersonV3(alias: "Ada", email: "ada@example.com"), in: Person.chain)
        let person = try await vault.load(Person.chain)
        #expect(person?.value == PersonV3(alias: "Ada", email: "ada@example.com"))
    }

    // Testing your migrations: golden fixtures.
    @Test(arguments: try GoldenFixture.all(in: fixtures.appendingPathComponent("Person")))
    func personFixture(_ fixture: GoldenFixture) throws {
        let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0), deviceIdentity: "test")
        let result = try fixture.verify(Person.chain, context: context)
        #expect(result.loaded == result.expected)
    }

    @Test("the article's fixture folder holds every Person fixture")
    func personFixturesExist() throws {
        #expect(try GoldenFixture.all(in: fixtures.appendingPathComponent("Person")).count == 24)
    }

    // Testing your migrations: the store contract.
    @Test(arguments: StoreContract.checks)
    func contract(_ check: StoreContract.Check) throws {
        try check.run(on: InMemoryStore())
    }

    /// The KeepsakeMemory catalog's example, verbatim.
    func memoryExample() throws -> LoadedRecord<PersonV3>? {
        let store = InMemoryStore(name: "preview", contents: ["person": Data(#"{"name":"Ada","age":"36"}"#.utf8)])
        let vault = Vault(store: store)
        let person = try vault.load(Person.chain)   // the bare V0 object, migrated and written back
        return person
    }

    @Test("the KeepsakeMemory example migrates its bare V0 record")
    func memoryExampleRuns() throws {
        let person = try #require(try memoryExample())
        #expect(person.value.alias == "Ada")
        #expect(person.storedVersion == 0)
        #expect(person.writeBack == .written)
    }

    /// The KeepsakeDefaults catalog's example, verbatim.
    func defaultsExample() throws -> LoadedRecord<PersonV3>? {
        let defaults = try DefaultsStore(suite: "settings", app: "com.example.notes")
        try defaults.set("dark", forKey: "theme")               // a plain value beside the records
        let vault = Vault(store: defaults)
        let person = try vault.load(Person.chain)               // a record: migrated and written back
        return person
    }
}

/// The folder of golden fixtures, as the article names it.
private let fixtures = fixturesURL

// In the serialized README suite: it sets XDG_CONFIG_HOME, which that suite's other tests read.
extension ReadmeTests {
    @Test("the KeepsakeDefaults example keeps a plain value beside a migrated record")
    func defaultsExampleRuns() throws {
        let config = try temporaryDirectory()
        let path = config + "/com.example.notes/settings.json"
        try FileManager.default.createDirectory(
            atPath: config + "/com.example.notes", withIntermediateDirectories: true)
        try Data(#"{"person":{"name":"Ada","age":"36"}}"#.utf8).write(to: URL(fileURLWithPath: path))
        setenv("XDG_CONFIG_HOME", config, 1)
        defer { unsetenv("XDG_CONFIG_HOME") }
        let person = try #require(try DocumentationExampleTests().defaultsExample())
        #expect(person.value.alias == "Ada")
        let suite = DefaultsStore(path: path)
        #expect(try suite.value(String.self, forKey: "theme") == "dark")
        #expect(try suite.keys() == ["person", "theme"])
    }
}
