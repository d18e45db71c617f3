// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeDefaults
import Migrations
import Testing

@Suite("README", .serialized)
struct ReadmeTests {
    /// The Getting started article's quick start, verbatim (DocumentationExampleTests checks it still is).
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

    @Test("every Swift block of the README is code a compiled file holds verbatim")
    func swiftBlocksAreCompiled() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().compactMap {
            $0.components(separatedBy: "```").first
        }
        #expect(blocks.count >= 7)
        // Every Swift file of the tests and the example app, each line without its indentation.
        var compiled: [String] = []
        for folder in ["Tests", "Examples"] {
            let base = root.appendingPathComponent(folder).path
            guard let files = FileManager.default.enumerator(atPath: base) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") && !file.contains(".build") {
                compiled.append(unindented(try String(contentsOfFile: base + "/" + file, encoding: .utf8)))
            }
        }
        for block in blocks where !block.hasPrefix("// Package.swift") {
            let body = unindented(block).split(separator: "\n", omittingEmptySubsequences: false)
                .drop { $0.hasPrefix("import ") || $0.isEmpty }.joined(separator: "\n")
                .trimmingCharacters(in: .newlines)
            #expect(compiled.contains { $0.contains(body) }, "not compiled anywhere:\n\(body)")
        }
    }

    private func unindented(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.drop { $0 == " " } }.joined(separator: "\n")
    }
}
