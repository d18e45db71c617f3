import Foundation
import Testing

@testable import KeepsakeCLI

/// The repository's root, from this file's path.
private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

@Suite("migrate installed: binary, man page and completions")
struct InstallCLITests {
    @Test("scripts/install-migrate puts the binary, the man page and bash, zsh and fish completions under a prefix")
    func install() throws {
        let prefix = try Suite().directory + "/prefix"
        let result = try runBinary(
            repositoryRoot + "/scripts/install-migrate",
            ["--binary", migrateBinary, "--prefix", prefix])
        #expect(result.status == 0, "\(result.stderr)")
        let files = [
            "bin/migrate", "share/man/man1/migrate.1", "share/bash-completion/completions/migrate",
            "share/zsh/site-functions/_migrate", "share/fish/vendor_completions.d/migrate.fish"
        ]
        #expect(result.stdout == files.map { "\(prefix)/\($0)\n" }.joined())
        for file in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: "\(prefix)/\(file)")
            #expect((attributes[.size] as? Int ?? 0) > 100, "\(file)")
            #expect(attributes[.posixPermissions] as? Int == (file.hasPrefix("bin/") ? 0o755 : 0o644), "\(file)")
        }
        let version = try runBinary("\(prefix)/bin/migrate", ["--version"])
        #expect(version.stdout == "0.1.0\n")

        // Each completion script knows the commands and asks the binary for store URIs, model
        // names and keys.
        let bash = try String(contentsOfFile: "\(prefix)/share/bash-completion/completions/migrate", encoding: .utf8)
        for command in [
            "status", "plan", "run", "show", "get", "put", "delete", "models", "init", "rekey", "trial", "doctor"
        ] {
            #expect(bash.contains("_migrate_\(command)()"), "\(command)")
        }
        #expect(bash.contains("---completion status -- --store"))
        #expect(bash.contains("---completion status -- --model"))
        #expect(bash.contains("---completion get -- positional@0"))
        for shell in ["share/zsh/site-functions/_migrate", "share/fish/vendor_completions.d/migrate.fish"] {
            let script = try String(contentsOfFile: "\(prefix)/\(shell)", encoding: .utf8)
            #expect(script.contains("---completion") && script.contains("doctor"), "\(shell)")
        }

        // The installed man page renders, and lists each exit code on its own.
        let rendered = try runBinary(
            "/usr/bin/groff", ["-man", "-Tascii", "-P-cbu", "\(prefix)/share/man/man1/migrate.1"])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        let lines = rendered.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for code in ["0", "1", "64", "65", "66", "67", "68", "69", "70", "71", "73", "74", "75", "77", "80", "81", "82"]
        {
            #expect(lines.contains { $0.hasPrefix(code + " ") }, "exit code \(code) is not listed on its own line")
        }
        #expect(!rendered.stdout.contains("8082"))
        #expect(lines.contains("80  `migrate trial`: the trial expired"))
        #expect(lines.contains("--master-key source"))
        #expect(lines.contains("--keyring-timeout seconds"))
        #expect(!rendered.stdout.contains("--timeout seconds"), "the deprecated name stays out of the manual")
        #expect(!rendered.stdout.contains("--key-file"), "the older spellings stay out of the manual")
        // The page is swift-argument-parser's generate-manual's, from the binary's own help: its
        // only warnings are mdoc's about the blank lines it keeps between paragraphs.
        let warnings = try runBinary(
            "/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z", "\(prefix)/share/man/man1/migrate.1"])
        let other = warnings.stderr.split(separator: "\n").filter { !$0.hasPrefix("mdoc warning: Empty input line") }
        #expect(other.isEmpty, "\(warnings.stderr)")
    }

    @Test("the completions the shells ask for: schemes, then paths; model names after KEY=; a suite's keys")
    func completionRequests() throws {
        let directory = try Suite(#"{"alpha": 1, "beta": 2}"#).directory
        func complete(_ arguments: [String]) throws -> [String] {
            let result = try migrate(["---completion"] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
            return result.stdout.split(separator: "\n").map(String.init)
        }
        // The schemes of the binary's backends: the standard ones first, then any it adds.
        let schemes = try complete(["status", "--", "--store", "2", "0", "migrate", "status", "--store", ""])
        #expect(schemes.prefix(3) == ["defaults:", "file:", "keyring:"], "\(schemes)")
        #expect(schemes.allSatisfy { $0.hasSuffix(":") } && !schemes.contains("memory:"), "\(schemes)")
        #expect(try complete(["status", "--", "--store", "2", "2", "migrate", "status", "--store", "fi"]) == ["file:"])
        let typed = "defaults:\(directory)/su"
        #expect(
            try complete(["status", "--", "--store", "2", "\(typed.count)", "migrate", "status", "--store", typed])
                == ["defaults:\(directory)/suite.json"])
        #expect(
            try complete(["run", "--", "--model", "2", "7", "migrate", "run", "--model", "friend="])
                == ["friend=Person", "friend=TrialInfo"])
        #expect(
            try complete([
                "get", "--", "positional@0", "3", "0", "migrate", "get", "--store", "defaults:\(directory)/suite.json",
                ""
            ])
                == ["alpha", "beta"])
        // Keys are never read from an encrypted store or the keyring.
        #expect(
            try complete(["get", "--", "positional@0", "3", "0", "migrate", "get", "--store", "keyring:x", ""]) == [])
    }

    @Test("store completion lists directories with a trailing slash and follows ~/")
    func storeCandidates() throws {
        let directory = try Suite("{}").directory
        try FileManager.default.createDirectory(atPath: directory + "/records", withIntermediateDirectories: true)
        #expect(Completions.storeCandidates("file:\(directory)/re") == ["file:\(directory)/records/"])
        #expect(Completions.storeCandidates("keyring:") == [])
        #expect(Completions.storeCandidates("") == ["defaults:", "file:", "keyring:"])
        let home = ProcessInfo.processInfo.environment["HOME"] ?? ""
        if !home.isEmpty,
            let first = try FileManager.default.contentsOfDirectory(atPath: home)
                .filter({ !$0.hasPrefix(".") }).sorted().first
        {
            #expect(Completions.storeCandidates("defaults:~/").contains { $0.hasPrefix("defaults:~/" + first) })
        }
    }
}
