#if CLI
import ArgumentParser
internal import FileKit
import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeSodium
import KeepsakeStores

#if canImport(Glibc)
import Glibc
#endif

/// Which store a store or key option is about, and so how the option is spelled: `--store` and
/// `--master-key` for the one store of a command, `--from`/`--from-master-key` and `--to`/`--to-master-key` for
/// `copy`'s two, `--new-master-key` for `rekey`'s new master key.
protocol StoreRole {
    /// The store option's name: `store`, `from`, `to`.
    static var storeOption: String { get }
    /// What goes before `key` (and the older spellings' names): ``, `from-`, `to-`, `new-`.
    static var keyPrefix: String { get }
    /// The older spelling of `--PREFIXmaster-key ask`: `ask-passphrase`, `ask-new-passphrase`.
    static var askFlag: String { get }
    /// The store in help texts and messages: `the store`, `the source`.
    static var noun: String { get }
}

/// The one store a command works on: `--store URI --master-key SOURCE`.
enum TheStore: StoreRole {
    static let storeOption = "store"
    static let keyPrefix = ""
    static let askFlag = "ask-passphrase"
    static let noun = "the store"
}

/// `copy`'s source: `--from URI --from-master-key SOURCE`.
enum CopySource: StoreRole {
    static let storeOption = "from"
    static let keyPrefix = "from-"
    static let askFlag = "ask-from-passphrase"
    static let noun = "the source"
}

/// `copy`'s destination: `--to URI --to-master-key SOURCE`.
enum CopyDestination: StoreRole {
    static let storeOption = "to"
    static let keyPrefix = "to-"
    static let askFlag = "ask-to-passphrase"
    static let noun = "the destination"
}

/// `rekey`'s new master key: `--new-master-key SOURCE`.
enum NewKey: StoreRole {
    static let storeOption = "store"
    static let keyPrefix = "new-"
    static let askFlag = "ask-new-passphrase"
    static let noun = "the new key"
}

/// Where a master key comes from, as a key option names it: `file:PATH` (a 32-byte key file),
/// `passphrase-file:PATH`, `passphrase-env:VAR`, `ask` (a prompt on the terminal) or `keyring`
/// (the key kept in the desktop keyring for the store).
enum KeySource: Equatable, Sendable {
    case keyFile(String)
    case passphraseFile(String)
    case passphraseEnv(String)
    case ask
    case keyring
    /// A source of the app's own (``KeySourceKind``): its scheme and the value after the colon.
    case other(scheme: String, value: String)

    /// The forms, for help and messages: the standard ones and the app's own.
    static var forms: String {
        let own = CLI.keySources.map { "\($0.scheme):\($0.valueName)" }
        return (["file:PATH", "passphrase-file:PATH", "passphrase-env:VAR", "ask"] + own).joined(separator: ", ")
            + " or keyring"
    }

    /// Reads `file:PATH`, `passphrase-file:PATH`, `passphrase-env:VAR`, `ask` or `keyring`.
    ///
    /// - Throws: A usage error naming the forms when `text` is none of them.
    init(parsing text: String) throws(ValidationError) {
        if text == "ask" {
            self = .ask
            return
        }
        if text == "keyring" {
            self = .keyring
            return
        }
        guard let colon = text.firstIndex(of: ":"), text.index(after: colon) < text.endIndex else {
            throw usageError("a key source is \(Self.forms)")
        }
        let value = String(text[text.index(after: colon)...])
        switch text[..<colon] {
        case "file": self = .keyFile(value)
        case "passphrase-file": self = .passphraseFile(value)
        case "passphrase-env": self = .passphraseEnv(value)
        case let scheme where CLI.keySources.contains { $0.scheme == scheme }:
            self = .other(scheme: String(scheme), value: value)
        default: throw usageError("a key source is \(Self.forms)")
        }
    }
}

/// A master key option — `--master-key SOURCE`, `--from-master-key`, `--to-master-key` or `--new-master-key` after `Role` —
/// and its older spellings (`--key-file PATH`, `--passphrase-file PATH`, `--passphrase-env VAR`,
/// `--ask-passphrase`, `--keyring-key`, each with the role's prefix), kept working but out of
/// the help. The one definition of a key option every command uses.
struct KeyOptions<Role: StoreRole>: ParsableArguments {
    @Option(
        name: .customLong(Role.keyPrefix + "master-key"),
        help: ArgumentHelp(
            "The master key of \(Role.noun), for a store that takes one: \(KeySource.forms).",
            valueName: "source"),
        transform: { text in try KeySource(parsing: text) })
    var key: KeySource?

    @Option(name: .customLong(Role.keyPrefix + "key-file"), help: .hidden)
    var keyFile: String?

    @Option(name: .customLong(Role.keyPrefix + "passphrase-file"), help: .hidden)
    var passphraseFile: String?

    @Option(name: .customLong(Role.keyPrefix + "passphrase-env"), help: .hidden)
    var passphraseEnv: String?

    @Flag(name: .customLong(Role.askFlag), help: .hidden)
    var askPassphrase = false

    @Flag(name: .customLong(Role.keyPrefix + "keyring-key"), help: .hidden)
    var keyringKey = false

    /// Every source given, in either spelling.
    var given: [KeySource] {
        var sources: [KeySource] = []
        if let key { sources.append(key) }
        if let keyFile { sources.append(.keyFile(keyFile)) }
        if let passphraseFile { sources.append(.passphraseFile(passphraseFile)) }
        if let passphraseEnv { sources.append(.passphraseEnv(passphraseEnv)) }
        if askPassphrase { sources.append(.ask) }
        if keyringKey { sources.append(.keyring) }
        return sources
    }

    /// `--master-key`, `--from-master-key`: the option's name in messages.
    static var optionName: String { "--\(Role.keyPrefix)master-key" }

    func validate() throws {
        if given.count > 1 {
            throw usageError("give only one \(Self.optionName) (\(KeySource.forms))")
        }
    }

    /// The master key `store` is opened with: the one source given, read.
    ///
    /// - Throws: A usage error when no source is given, or it cannot be read (a passphrase file
    ///   that is missing, empty or too long, an environment variable that is not set).
    func source(for store: String, keyringTimeout: Duration = KeyringStore.defaultTimeout) throws -> MasterKeySource {
        guard let source = given.first else {
            throw usageError("\(store) needs its master key: give \(Self.optionName) \(KeySource.forms)")
        }
        switch source {
        case .keyring:
            return .keyring(timeout: keyringTimeout)
        case let .other(scheme, value):
            guard let kind = CLI.keySources.first(where: { $0.scheme == scheme }) else {
                throw usageError("a key source is \(KeySource.forms)")
            }
            return .provider(try kind.make(value))
        case let .keyFile(path):
            return .keyFile(path: path)
        case let .passphraseFile(path):
            return .passphrase(try PassphraseReader.readPassphraseFile(path), origin: "file \(path)")
        case let .passphraseEnv(name):
            guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
                throw usageError("the environment variable \(name) is not set or empty")
            }
            return .passphrase(SecureBytes(copying: Array(value.utf8)), origin: "environment variable \(name)")
        case .ask:
            let prompt =
                Role.keyPrefix.isEmpty
                ? "Passphrase: " : Role.self == NewKey.self ? "New passphrase: " : "Passphrase of \(Role.noun): "
            return .passphrase(
                try PassphraseReader.promptWithoutEcho(prompt, option: Self.optionName), origin: "prompt")
        }
    }
}

/// Passphrases read from a file or typed at the terminal, straight into secure memory.
enum PassphraseReader {
    /// The longest passphrase file read, in bytes.
    static let maxPassphraseBytes = 4096

    /// The longest passphrase typed at the prompt, in bytes. A terminal in line mode holds at
    /// most 4095 bytes of a line and silently drops the rest, so a line of 4095 bytes may have
    /// been cut: it is refused rather than used.
    static let maxTypedPassphraseBytes = 4094

    /// The passphrase in the file at `path`, without one trailing newline, read straight into
    /// secure memory. Only a regular file is read (a symbolic link to one is followed): a FIFO,
    /// socket or device is refused at once rather than waited on.
    static func readPassphraseFile(_ path: String) throws -> SecureBytes {
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

    /// Reads one line from the terminal with echo off; `option` (`--master-key`) is named when it cannot.
    static func promptWithoutEcho(_ prompt: String, option: String) throws -> SecureBytes {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw ValidationError(
                "\(option) ask needs a terminal; use \(option) passphrase-file:PATH or passphrase-env:VAR")
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
                terminal cuts lines longer than \(maxTypedPassphraseBytes) bytes, so use \(option) passphrase-file:PATH
                """)
        }
        guard length > 0 else { throw ValidationError("no passphrase was entered") }
        return SecureBytes(copying: buffer[0..<length])
    }
}
#endif
