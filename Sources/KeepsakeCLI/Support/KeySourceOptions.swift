import ArgumentParser
import Foundation
import Keepsake
import KeepsakeSodium
import KeepsakeStores

#if canImport(Glibc)
import Glibc
#endif

/// Where a `file:` store's master key comes from: a key file, a passphrase from a file, an
/// environment variable or a prompt, or the keyring.
struct KeySourceOptions: ParsableArguments {
    @Option(
        name: .long, help: ArgumentHelp("A 32-byte key file (created 0600 by `\(CLI.name) init`).", valueName: "path"))
    var keyFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A file holding the passphrase (one trailing newline is ignored).",
            valueName: "path"))
    var passphraseFile: String?

    @Option(name: .long, help: ArgumentHelp("An environment variable holding the passphrase.", valueName: "var"))
    var passphraseEnv: String?

    @Flag(name: .long, help: "Ask for the passphrase on the terminal, without echo.")
    var askPassphrase = false

    @Flag(name: .long, help: "Use the master key kept in the keyring for this store (made by `init --keyring-key`).")
    var keyringKey = false

    var given: Bool { keyFile != nil || passphraseFile != nil || passphraseEnv != nil || askPassphrase || keyringKey }

    /// The one master key source given.
    func source(for store: String, keyringTimeout: Duration = .seconds(5)) throws -> MasterKeySource {
        try KeySourceOptions.source(
            keyFile: keyFile, passphraseFile: passphraseFile, passphraseEnv: passphraseEnv,
            ask: askPassphrase, keyring: keyringKey, prefix: "", askOption: "ask-passphrase",
            store: store, keyringTimeout: keyringTimeout)
    }

    /// The one source given by the options named `--PREFIXkey-file`, `--PREFIXpassphrase-file`,
    /// `--PREFIXpassphrase-env`, `--PREFIXkeyring-key` and `--ASKOPTION`.
    static func source(
        keyFile: String?, passphraseFile: String?, passphraseEnv: String?, ask: Bool, keyring: Bool = false,
        prefix: String, askOption: String?, store: String, keyringTimeout: Duration = .seconds(5)
    ) throws -> MasterKeySource {
        let count = [keyFile != nil, passphraseFile != nil, passphraseEnv != nil, ask, keyring].filter { $0 }.count
        guard count == 1 else {
            let names =
                "--\(prefix)key-file PATH, --\(prefix)passphrase-file PATH, --\(prefix)passphrase-env VAR"
                + (askOption.map { ", --\(prefix)keyring-key or --\($0)" } ?? " or --\(prefix)keyring-key")
            throw usageError(
                count == 0
                    ? "\(store) needs its master key: give one of \(names)"
                    : "give only one of \(names)")
        }
        if keyring { return .keyring(timeout: keyringTimeout) }
        if let keyFile { return .keyFile(path: keyFile) }
        if let passphraseFile {
            let read = try readPassphraseFile(passphraseFile)
            return .passphrase(read, origin: "file \(passphraseFile)")
        }
        if let passphraseEnv {
            guard let value = ProcessInfo.processInfo.environment[passphraseEnv], !value.isEmpty else {
                throw usageError("the environment variable \(passphraseEnv) is not set or empty")
            }
            return .passphrase(SecureBytes(copying: Array(value.utf8)), origin: "environment variable \(passphraseEnv)")
        }
        return .passphrase(
            try promptWithoutEcho(prefix.isEmpty ? "Passphrase: " : "New passphrase: "), origin: "prompt")
    }

    /// The longest passphrase file read, in bytes.
    static let maxPassphraseBytes = 4096

    /// The longest passphrase typed at the prompt, in bytes. A terminal in line mode holds at
    /// most 4095 bytes of a line and silently drops the rest, so a line of 4095 bytes may have
    /// been cut: it is refused rather than used.
    static let maxTypedPassphraseBytes = 4094

    /// The passphrase in the file at `path`, without one trailing newline, read straight into
    /// secure memory. Only a regular file is read (a symbolic link to one is followed): a FIFO,
    /// socket or device is refused at once rather than waited on.
    private static func readPassphraseFile(_ path: String) throws -> SecureBytes {
        let fd: Int32
        do throws(SystemFailure) {
            fd = try Syscall.openRegularFile(path, followSymlinks: true).fd
        } catch {
            throw usageError("cannot read the passphrase file \(path): \(error.cause)")
        }
        defer { Syscall.close(fd) }
        var length = 0
        let buffer = try SecureBytes(count: maxPassphraseBytes + 1) { (buffer) throws(ValidationError) in
            while length < buffer.count {
                let count = read(fd, buffer.baseAddress! + length, buffer.count - length)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw usageError(
                        "cannot read the passphrase file \(path): \(KeepsakeError.Cause.posix(call: "read", errno: errno))"
                    )
                }
                if count == 0 { break }
                length += count
            }
        }
        guard length <= maxPassphraseBytes else {
            throw usageError("the passphrase file \(path) holds more than \(maxPassphraseBytes) bytes")
        }
        if length > 0, buffer.withUnsafeBytes({ $0[length - 1] }) == UInt8(ascii: "\n") { length -= 1 }
        guard length > 0 else { throw usageError("the passphrase file \(path) is empty") }
        return buffer.withUnsafeBytes { SecureBytes(copying: $0[0..<length]) }
    }

    /// Reads one line from the terminal with echo off.
    private static func promptWithoutEcho(_ prompt: String) throws -> SecureBytes {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw ValidationError("--ask-passphrase needs a terminal; use --passphrase-file or --passphrase-env")
        }
        defer { close(fd) }
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else { throw ValidationError("cannot turn off echo on the terminal") }
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        guard tcsetattr(fd, TCSAFLUSH, &silent) == 0 else {
            throw ValidationError("cannot turn off echo on the terminal")
        }
        defer {
            _ = tcsetattr(fd, TCSAFLUSH, &saved)
            _ = write(fd, "\n", 1)
        }
        _ = prompt.withCString { write(fd, $0, strlen($0)) }
        // One byte more than a passphrase may hold: a longer line is refused, never cut short.
        var buffer = [UInt8](repeating: 0, count: maxPassphraseBytes + 1)
        defer { buffer.withUnsafeMutableBytes { _ = memset($0.baseAddress!, 0, $0.count) } }
        var length = 0
        var tooLong = false
        while true {
            var byte: UInt8 = 0
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1, byte != UInt8(ascii: "\n") else { break }
            if length < buffer.count {
                buffer[length] = byte
                length += 1
            } else {
                tooLong = true  // read the rest of the line, so that it does not reach the shell
            }
        }
        if length > maxTypedPassphraseBytes || tooLong {
            throw usageError(
                """
                the passphrase typed is \(tooLong ? "longer than \(maxPassphraseBytes)" : "\(length)") bytes; a \
                terminal cuts lines longer than \(maxTypedPassphraseBytes) bytes, so use --passphrase-file
                """)
        }
        guard length > 0 else { throw ValidationError("no passphrase was entered") }
        return SecureBytes(copying: buffer[0..<length])
    }
}
