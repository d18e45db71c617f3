import Foundation
import Testing

/// Every option of `migrate` that takes a path, given paths that once stopped the process with
/// SIGILL inside Foundation's path handling (issue 21): a one-character relative path, `.`,
/// `..`, `~` (literal: the shell does not expand it here), trailing slashes, and bytes that are
/// not UTF-8. Each must give a result or a typed error exit — never a signal — and with
/// `--json` print JSON (an error object when it fails).
@Suite("migrate CLI: hostile paths in every path option")
struct HostilePathCLITests {
    /// The hostile paths, as raw bytes (some are not UTF-8).
    static let paths: [[UInt8]] = [
        Array("k".utf8), Array(".".utf8), Array("..".utf8), Array("~".utf8), Array("a/".utf8), Array("/".utf8),
        Array("dir/".utf8), Array("//".utf8), Array("./k/".utf8), [0xFF], [0xFF, UInt8(ascii: "/")],
        Array("k".utf8) + [0xC3]
    ]

    /// The commands to try, with `P` standing for the hostile path. Relative names are in the
    /// case's own directory: `fs` an encrypted store with the key file `key`, `s.json` a suite
    /// holding an old Person, `pw` a passphrase file, `dir` a directory.
    static let commands: [[String]] = [
        ["init", "--store", "file:fs-new", "--key-file", "P"],
        ["init", "--store", "file:P", "--key-file", "key-new"],
        ["init", "--store", "file:fs-pw", "--passphrase-file", "P"],
        ["rekey", "--store", "file:fs", "--key-file", "key", "--new-key-file", "P"],
        ["rekey", "--store", "file:fs", "--key-file", "key", "--new-passphrase-file", "P"],
        ["rekey", "--store", "file:P", "--key-file", "key", "--new-key-file", "key-2"],
        ["status", "--store", "file:fs", "--key-file", "P"],
        ["status", "--store", "file:fs", "--passphrase-file", "P"],
        ["status", "--store", "file:P", "--key-file", "key"],
        ["status", "--store", "defaults:P"],
        ["plan", "--store", "defaults:P"],
        ["show", "person", "--store", "defaults:P"],
        ["get", "person", "--store", "defaults:P"],
        ["get", "person", "--store", "file:fs", "--key-file", "P"],
        ["put", "x", "--store", "defaults:P"],
        ["put", "person", "--store", "defaults:s.json", "--from-backup", "P"],
        ["delete", "x", "--store", "defaults:P"],
        ["run", "--store", "defaults:P"],
        ["run", "--store", "defaults:s.json", "--backup", "--backup-dir", "P"],
        ["trial", "status", "--store", "defaults:P", "--device-id", "d"],
        ["copy", "--from", "defaults:s.json", "--to", "defaults:P"],
        ["copy", "--from", "defaults:P", "--to", "defaults:d.json", "--move"],
        ["copy", "--from", "defaults:s.json", "--to", "file:fs", "--to-key-file", "P"],
        ["copy", "--from", "defaults:s.json", "--to", "file:P", "--to-key-file", "key"],
        ["copy", "--from", "defaults:s.json", "--to", "file:fs", "--to-passphrase-file", "P"],
        ["copy", "--from", "file:fs", "--from-key-file", "P", "--to", "defaults:d.json", "--allow-plaintext"],
        ["copy", "--from", "file:fs", "--from-passphrase-file", "P", "--to", "defaults:d.json", "--allow-plaintext"],
        ["copy", "--from", "file:P", "--from-key-file", "key", "--to", "defaults:d.json", "--move", "--allow-plaintext"]
    ]

    /// Exit statuses of a process that died by a signal, as `timeout` and shells report them:
    /// SIGILL (a Swift trap), SIGABRT, SIGKILL (the deadline below), SIGSEGV.
    static let signalled: Set<Int32> = [132, 134, 137, 139]

    @Test("each path option with each hostile path: a result or a typed error, JSON with --json", arguments: paths)
    func hostilePath(_ path: [UInt8]) throws {
        let directory = try caseDirectory()
        let shown = String(decoding: path, as: UTF8.self).debugDescription
        for command in Self.commands {
            // A backup folder is made inside the directory given: not in the real root.
            if command.contains("--backup-dir"), path.first == UInt8(ascii: "/") { continue }
            let arguments = command.map { argument -> [UInt8] in
                if argument == "P" { return path }
                for prefix in ["file:", "defaults:"] where argument == prefix + "P" { return Array(prefix.utf8) + path }
                return Array(argument.utf8)
            }
            let result = try runInDirectory(directory, arguments + [Array("--json".utf8)])
            let label = "\(command.joined(separator: " ")) with P = \(shown): exit \(result.status)\n\(result.stderr)"
            #expect(result.exited, "\(label)")
            #expect(!Self.signalled.contains(result.status), "\(label)")
            #expect(!result.stderr.contains("Program crashed"), "\(label)")
            let json: Any
            do {
                json = try decodeJSON(result.stdout)
            } catch {
                Issue.record("not JSON: \(result.stdout) — \(label)")
                continue
            }
            if String(validating: path, as: UTF8.self) == nil {
                // Not UTF-8: refused as a usage error, never taken as another name.
                let error = (json as? [String: Any])?["error"] as? [String: Any]
                let message = error?["message"] as? String ?? ""
                #expect(result.status == 64 && message.contains("not valid UTF-8"), "\(label)")
            }
            if result.status != 0, let object = json as? [String: Any] {
                // A failure is the shared error object, or copy's report with its exit code.
                #expect(
                    object["error"] is [String: Any] || object["exitCode"] as? Int == Int(result.status), "\(label)")
            }
        }
    }

    /// A new directory holding an encrypted store `fs` (key file `key`), a suite `s.json`, a
    /// passphrase file `pw` and a directory `dir`.
    private func caseDirectory(function: String = #function) throws -> String {
        let base = FileManager.default.temporaryDirectory.path + "/keepsake-cli-tests"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let directory = base + "/hostile-path-" + UUID().uuidString.prefix(8)
        for name in ["dir", "home"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + name, withIntermediateDirectories: true)
        }
        try Data(legacySuite.utf8).write(to: URL(fileURLWithPath: directory + "/s.json"))
        try Data("passphrase\n".utf8).write(to: URL(fileURLWithPath: directory + "/pw"))
        let initialised = try migrate(["init", "--store", "file:\(directory)/fs", "--key-file", directory + "/key"])
        #expect(initialised.status == 0, "\(initialised.stderr)")
        return directory
    }

    struct RawResult {
        let stdout: String
        let stderr: String
        let status: Int32
        /// Whether the process exited (rather than being killed by a signal).
        let exited: Bool
    }

    /// Runs `migrate` in `directory` with `arguments` passed as the exact bytes given (a shell
    /// builds each from octal escapes), standard input empty, `HOME` the directory's `home`
    /// (so that a `~` the CLI expands stays in it), killed after 60 seconds.
    private func runInDirectory(_ directory: String, _ arguments: [[UInt8]]) throws -> RawResult {
        func octal(_ bytes: [UInt8]) -> String {
            "\"$(printf '" + bytes.map { "\\" + String($0, radix: 8) }.joined() + "')\""
        }
        let script =
            "cd \(octal(Array(directory.utf8))) && HOME=\"$PWD/home\" exec timeout -s KILL 60 "
            + "\(octal(Array(migrateBinary.utf8))) "
            + arguments.map(octal).joined(separator: " ") + " </dev/null"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return RawResult(
            stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
            status: process.terminationStatus, exited: process.terminationReason == .exit)
    }
}
