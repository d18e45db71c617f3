import Foundation
import Testing

/// `--ask-passphrase` on a real pseudo-terminal: Python's `pty` module starts `migrate` with the
/// terminal as its controlling terminal and types at its prompt.
@Suite("The passphrase prompt, typed at a terminal")
struct PassphrasePromptTests {
    /// Runs `migrate ARGUMENTS` on a new pseudo-terminal, types `line` and a newline at its
    /// first prompt, and returns what the terminal showed and the exit status.
    private func typed(_ line: [UInt8], _ arguments: [String]) throws -> (screen: String, status: Int32) {
        let script = """
            import os, pty, sys
            line = bytes.fromhex(sys.argv[1])
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[2], sys.argv[2:])
            screen = b""
            def more():
                global screen
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return False
                screen += chunk
                return bool(chunk)
            while b"assphrase: " not in screen and more():
                pass
            os.write(fd, line + b"\\n")
            while more():
                pass
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(screen.decode("utf-8", "replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        let hex = line.map { String(format: "%02x", $0) }.joined()
        let result = try runBinary("/usr/bin/env", ["python3", "-c", script, hex, migrateBinary] + arguments)
        return (result.stdout + result.stderr, result.status)
    }

    private func newDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/keepsake-prompt-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a typed passphrase is used exactly as typed: the same bytes from a file open the store")
    func typedPassphraseOpens() throws {
        let directory = try newDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let passphrase = Array("correct horse – battery staple".utf8)
        let made = try typed(passphrase, ["init", "--store", "file:\(directory)/store", "--ask-passphrase"])
        #expect(made.status == 0, "\(made.screen)")
        #expect(!made.screen.contains("correct horse"), "the passphrase was echoed: \(made.screen)")

        try Data(passphrase).write(to: URL(fileURLWithPath: directory + "/pw"))
        let opened = try migrate([
            "status", "--store", "file:\(directory)/store", "--passphrase-file", directory + "/pw"
        ])
        #expect(opened.status == 0, "\(opened.stderr)")
        try Data(passphrase.dropLast()).write(to: URL(fileURLWithPath: directory + "/pw"))
        let wrong = try migrate(["status", "--store", "file:\(directory)/store", "--passphrase-file", directory + "/pw"]
        )
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("wrong") || wrong.stderr.contains("does not open"), "\(wrong.stderr)")
    }

    @Test("a passphrase longer than a terminal line holds is refused, never cut short", arguments: [4095, 5000])
    func longPassphraseRefused(length: Int) throws {
        let directory = try newDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try typed(
            Array(repeating: UInt8(ascii: "p"), count: length),
            ["init", "--store", "file:\(directory)/store", "--ask-passphrase"])
        #expect(result.status != 0)
        #expect(result.screen.contains("--master-key passphrase-file:PATH"), "\(result.screen)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/store/keepsake.header"), "a store was made")
    }

    @Test("the longest passphrase a terminal passes whole is used whole")
    func longestTypedPassphrase() throws {
        let directory = try newDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let passphrase = (0..<4094).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        let made = try typed(passphrase, ["init", "--store", "file:\(directory)/store", "--ask-passphrase"])
        #expect(made.status == 0, "\(made.screen.suffix(300))")
        try Data(passphrase).write(to: URL(fileURLWithPath: directory + "/pw"))
        let opened = try migrate([
            "status", "--store", "file:\(directory)/store", "--passphrase-file", directory + "/pw"
        ])
        #expect(opened.status == 0, "\(opened.stderr)")
    }
}
