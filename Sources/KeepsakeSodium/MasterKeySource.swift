internal import FileKit
import Foundation
import Keepsake
internal import SodiumKit

#if canImport(Glibc)
import Glibc
#endif

/// Where an encrypted store's master key comes from.
///
/// The master key never encrypts a record: it wraps the store's random data key in the header
/// (see ``SodiumFileStore``). Every error about a key names the source that was tried — a key
/// file's path, where a passphrase came from — and never the secret.
///
/// ```swift
/// let byFile = MasterKeySource.keyFile(path: "/etc/myapp/store.key")
/// let byPassphrase = MasterKeySource.passphrase(
///     SecureBytes(copying: Array(secret.utf8)), origin: "environment variable MYAPP_PASSPHRASE")
/// ```
///
/// A key kept elsewhere (the keyring, a hardware token) is a ``MasterKeyProvider``: add one
/// with ``provider(_:)``; the store needs no change.
public enum MasterKeySource: Sendable, CustomStringConvertible {
    /// A key file holding 32 random bytes (or a key set: see ``KeyFile/masterKeys()``). ``SodiumFileStore/create(directory:key:passphraseLimits:lockTimeout:)``
    /// and ``SodiumFileStore/changeMasterKey(to:passphraseLimits:)`` create it (mode 0600, 32
    /// random bytes) when nothing is at `path`; opening a store requires it to exist.
    case keyFile(path: String)
    /// A passphrase, as the caller's bytes (usually UTF-8; they are used exactly as given). The
    /// master key is derived with Argon2id, with the salt and limits stored in the header.
    /// `origin` says where the passphrase came from, for errors: `"file /run/secrets/pw"`,
    /// `"environment variable MYAPP_PASSPHRASE"`, `"prompt"`.
    case passphrase(SecureBytes, origin: String)
    /// A 32-byte master key from a provider, such as a keyring.
    case provider(any MasterKeyProvider)

    /// The source in words, for messages: `key file /path`, `passphrase from prompt`.
    public var description: String {
        switch self {
        case let .keyFile(path): return KeyFile(path: path).description
        case let .passphrase(_, origin): return "passphrase from \(origin)"
        case let .provider(provider): return provider.description
        }
    }
}

/// A source of a raw 32-byte master key: a key file, a keyring entry, a hardware token.
///
/// Conform to this to keep the master key somewhere new; ``KeyFile`` is the built-in one.
/// `description` names the source for error messages and must not contain the key.
public protocol MasterKeyProvider: Sendable, CustomStringConvertible {
    /// The 32-byte master key.
    ///
    /// - Parameter createIfAbsent: `true` when a store is being created or rekeyed: if the
    ///   provider holds no key yet, it makes a new random one (``SecureBytes/random(count:)``),
    ///   stores it durably, and returns it. `false` when opening: a missing key is an error.
    /// - Throws: `KeepsakeError` naming the source when the key cannot be had.
    func masterKey(createIfAbsent: Bool) throws(KeepsakeError) -> SecureBytes

    /// The 32-byte master key of the store whose id is `storeID`: what ``SodiumFileStore``
    /// calls, so that a provider that keeps one key per store (the keyring) can find it.
    ///
    /// The default implementation ignores the id and calls ``masterKey(createIfAbsent:)``.
    ///
    /// - Parameters:
    ///   - createIfAbsent: As for ``masterKey(createIfAbsent:)``.
    ///   - storeID: The store id from the store's header, 32 lowercase hex digits (for a new
    ///     store, the id its header will hold).
    /// - Throws: `KeepsakeError` naming the source when the key cannot be had.
    func masterKey(createIfAbsent: Bool, storeID: String) throws(KeepsakeError) -> SecureBytes

    /// Every key that may open the store `storeID`, the current one first: a provider that
    /// keeps a key's predecessors (the keyring item) returns them after it, and
    /// ``SodiumFileStore`` opens with the first that passes the header's key check.
    ///
    /// The default implementation returns ``masterKey(createIfAbsent:storeID:)`` alone.
    ///
    /// - Throws: As ``masterKey(createIfAbsent:storeID:)`` when opening.
    func masterKeys(storeID: String) throws(KeepsakeError) -> [SecureBytes]

    /// The key a rekey of the store `storeID` wraps its header with: a provider that keeps a
    /// history makes a new key and keeps the earlier ones, so that a rekey interrupted before
    /// the header is rewritten still opens.
    ///
    /// The default implementation returns ``masterKey(createIfAbsent:storeID:)`` with
    /// `createIfAbsent`.
    ///
    /// - Throws: As ``masterKey(createIfAbsent:storeID:)`` when creating.
    func newMasterKey(storeID: String) throws(KeepsakeError) -> SecureBytes
}

extension MasterKeyProvider {
    /// ``masterKey(createIfAbsent:storeID:)`` alone.
    ///
    /// - Throws: What ``masterKey(createIfAbsent:storeID:)`` throws.
    public func masterKeys(storeID: String) throws(KeepsakeError) -> [SecureBytes] {
        [try masterKey(createIfAbsent: false, storeID: storeID)]
    }

    /// ``masterKey(createIfAbsent:storeID:)`` with `createIfAbsent`.
    ///
    /// - Throws: What ``masterKey(createIfAbsent:storeID:)`` throws.
    public func newMasterKey(storeID: String) throws(KeepsakeError) -> SecureBytes {
        try masterKey(createIfAbsent: true, storeID: storeID)
    }

    /// The key from ``masterKey(createIfAbsent:)``, for a provider that keeps one key whatever
    /// the store (a key file).
    ///
    /// - Throws: What ``masterKey(createIfAbsent:)`` throws.
    public func masterKey(createIfAbsent: Bool, storeID: String) throws(KeepsakeError) -> SecureBytes {
        try masterKey(createIfAbsent: createIfAbsent)
    }
}

/// A key file: 32 random bytes, mode 0600 — or a key set of several such keys while a key is
/// being replaced (``masterKeys()``).
public struct KeyFile: MasterKeyProvider {
    /// Where the key file is.
    public let path: String
    var fileSystem: FileSystem = .live

    /// The key file at `path`.
    public init(path: String) { self.path = path }

    init(path: String, fileSystem: FileSystem) {
        self.path = path
        self.fileSystem = fileSystem
    }

    /// `key file /path`.
    public var description: String { "key file \(path)" }

    /// Reads the key (the first of a key set); when `createIfAbsent` and nothing is at `path`, first creates the file
    /// with mode 0600 holding 32 new random bytes (written, fsync'd, then linked into place, so
    /// an existing file is never replaced and a crash never leaves a partial key file).
    ///
    /// The key is written as an unnamed file until it is linked into place, so a process
    /// killed while creating it (an interrupted `init` or `rekey`) leaves no copy of the key
    /// behind. Where the system cannot make unnamed files, a temporary file named
    /// `.<key file name>.tmp-<16 hex digits>` is used instead, and such leftovers beside the key
    /// file are removed whenever the key file is used.
    ///
    /// Like ssh with a private key, a key file that group or others may read or write is
    /// refused — the key may have been copied or replaced — with the `chmod 600` that fixes it.
    ///
    /// - Throws: `KeepsakeError.Code.notFound` when the file does not exist (and is not to be
    ///   created); `KeepsakeError.Code.io` or `KeepsakeError.Code.permissionDenied` (with the
    ///   `errno`) when the file cannot be read or created; `KeepsakeError.Code.permissionDenied`
    ///   (cause: the mode) when group or others have access to it;
    ///   `KeepsakeError.Code.invalidArgument` when it does not hold a whole number of 32-byte
    ///   keys (1 to ``maximumKeys``), or is not
    ///   a regular file (a FIFO, a device).
    /// - Important: If this throws, no key file was left behind by it.
    public func masterKey(createIfAbsent: Bool) throws(KeepsakeError) -> SecureBytes {
        let files = keyFileSystem
        files.removeLeftovers(in: directory)
        if createIfAbsent {
            let key = SecureBytes.random(count: Format.keyBytes)
            do throws(SystemFailure) {
                let result = key.withUnsafeBytes { bytes in
                    Result { () throws(SystemFailure) in try files.createExclusively(path, with: bytes) }
                }
                try result.get()
                return key
            } catch  where error.errno == EEXIST {
                // A key file is already there: use it.
            } catch {
                throw KeepsakeError(error.code, "cannot create \(description)", cause: error.cause)
            }
        }
        return try read()[0]
    }

    /// Every key of the key file, the one that writes first: a key file holds one key of 32
    /// random bytes, or a key set — several such keys one after the other, at most
    /// ``maximumKeys`` — while a key is being replaced:
    ///
    /// ```sh
    /// cat new.key store.key > store.keys  # new.key writes; store.key still opens
    /// ```
    ///
    /// An encrypted file store opens with whichever key of the set its header was wrapped with,
    /// and goes on when another process changes its master key to another key of the set; a
    /// sealed PostgreSQL table writes with the first key and opens values any key sealed.
    /// ``masterKey(createIfAbsent:)`` is the first key.
    ///
    /// - Throws: As ``masterKey(createIfAbsent:)`` does when the file is not to be created;
    ///   `KeepsakeError.Code.invalidArgument` when its length is not a whole number of keys,
    ///   1 to ``maximumKeys``.
    public func masterKeys() throws(KeepsakeError) -> [SecureBytes] {
        keyFileSystem.removeLeftovers(in: directory)
        return try read()
    }

    /// The most keys a key file holds.
    public static let maximumKeys = 16

    /// The key file's directory, taken from `path` byte by byte (``FilePath``): Foundation's
    /// path methods trap on a one-character relative path such as `k`.
    private var directory: String { FilePath.directory(of: path) }

    /// ``fileSystem`` with temporary names of this key file's own (`.<name>.tmp-…`), so that
    /// only its leftovers are ever removed from a directory the key file may share.
    private var keyFileSystem: FileSystem {
        var files = fileSystem
        files.temporaryPrefix = "." + FilePath.lastComponent(of: path) + ".tmp-"
        return files
    }

    /// Reads the file's keys, 32 bytes each, into secure memory (one byte more than the most
    /// keys is asked for, to detect a longer file). Anything but a regular file (a FIFO, a
    /// device) is refused before a read.
    private func read() throws(KeepsakeError) -> [SecureBytes] {
        let fd: Int32
        let mode: mode_t
        do throws(SystemFailure) {
            let opened = try Syscall.openRegularFile(path, followSymlinks: true)
            fd = opened.fd
            mode = opened.info.st_mode & 0o7777
        } catch {
            // A key file that is not there is a missing thing, not a failed read.
            if error.errno == ENOENT {
                throw KeepsakeError(.notFound, "\(description) does not exist", cause: error.cause)
            }
            throw KeepsakeError(error.code, "cannot read \(description)", cause: error.cause)
        }
        defer { Syscall.close(fd) }
        guard mode & 0o077 == 0 else {
            throw KeepsakeError(
                .permissionDenied,
                """
                \(description) may be read or changed by group or others (mode \(String(mode, radix: 8))), so it is \
                refused; make it private with: chmod 600 \(shellQuoted(path))
                """, cause: .other("key file mode \(String(mode, radix: 8)), expected 600 or stricter"))
        }
        var filled = 0
        let buffer = try SecureBytes(count: Format.keyBytes * Self.maximumKeys + 1) { (buffer) throws(KeepsakeError) in
            while filled < buffer.count {
                let count = Glibc.read(fd, buffer.baseAddress! + filled, buffer.count - filled)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw KeepsakeError(.io, "cannot read \(description)", cause: .posix(call: "read", errno: errno))
                }
                if count == 0 { break }
                filled += count
            }
        }
        guard filled > 0, filled % Format.keyBytes == 0, filled < buffer.count else {
            throw KeepsakeError(
                .invalidArgument,
                """
                \(description) holds \(filled == buffer.count ? "more than \(buffer.count - 1)" : "\(filled)") bytes; \
                a key file holds exactly \(Format.keyBytes) random bytes (or a key set: 2 to \(Self.maximumKeys) \
                such keys one after the other)
                """)
        }
        return stride(from: 0, to: filled, by: Format.keyBytes).map { buffer.extracting($0..<$0 + Format.keyBytes) }
    }
}

/// The cost of deriving a master key from a passphrase with Argon2id: how many passes
/// (`opsLimit`) over how much memory (`memLimit`, bytes). Stored in the store header.
public struct PassphraseLimits: Sendable, Hashable, CustomStringConvertible {
    /// Argon2id passes (its `t` parameter).
    public let opsLimit: UInt64
    /// Argon2id memory, in bytes.
    public let memLimit: UInt64

    /// Custom limits.
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` outside the bounds a store header may
    ///   hold (docs/FORMAT.md): 1 to 8 passes and 8 KiB to 2 GiB, twice libsodium's SENSITIVE.
    public init(opsLimit: UInt64, memLimit: UInt64) throws(KeepsakeError) {
        guard (Sodium.pwhashOpsLimitMin...Format.passphraseOpsLimitMax).contains(opsLimit),
            (Sodium.pwhashMemLimitMin...Format.passphraseMemLimitMax).contains(memLimit)
        else {
            throw KeepsakeError(
                .invalidArgument,
                """
                Argon2id limits must be \(Sodium.pwhashOpsLimitMin)…\(Format.passphraseOpsLimitMax) passes and \
                \(Sodium.pwhashMemLimitMin)…\(Format.passphraseMemLimitMax) bytes
                """)
        }
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    private init(unchecked opsLimit: UInt64, _ memLimit: UInt64) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// libsodium's INTERACTIVE limits (2 passes, 64 MiB; about 70 ms here).
    public static let interactive = PassphraseLimits(
        unchecked: Sodium.pwhashOpsLimitInteractive, Sodium.pwhashMemLimitInteractive)
    /// libsodium's MODERATE limits (3 passes, 256 MiB; about 0.6 s here). The default.
    public static let moderate = PassphraseLimits(
        unchecked: Sodium.pwhashOpsLimitModerate, Sodium.pwhashMemLimitModerate)
    /// libsodium's SENSITIVE limits (4 passes, 1 GiB; seconds).
    public static let sensitive = PassphraseLimits(
        unchecked: Sodium.pwhashOpsLimitSensitive, Sodium.pwhashMemLimitSensitive)

    public var description: String { "Argon2id, \(opsLimit) passes, \(memLimit / 1024) KiB" }
}

// MARK: - Resolving a source to key material

/// A master key with the header fields that describe how it was obtained.
struct MasterKeyMaterial {
    let kind: StoreHeader.KeyKind
    let salt: [UInt8]
    let opsLimit: UInt64
    let memLimit: UInt64
    let key: SecureBytes
}

extension MasterKeySource {
    /// The master key for a new header (create, rekey): a key file is created if absent, a
    /// passphrase gets a new random salt, a provider is asked for a new key when `rekey`.
    func newMaterial(
        limits: PassphraseLimits, random: RandomSource, fileSystem: FileSystem, storeID: [UInt8], rekey: Bool = false
    ) throws(KeepsakeError) -> MasterKeyMaterial {
        let zeroSalt = [UInt8](repeating: 0, count: Sodium.pwhashSaltBytes)
        switch self {
        case let .keyFile(path):
            let key = try KeyFile(path: path, fileSystem: fileSystem).masterKey(createIfAbsent: true)
            return MasterKeyMaterial(kind: .raw, salt: zeroSalt, opsLimit: 0, memLimit: 0, key: key)
        case let .provider(provider):
            let key =
                rekey
                ? try provider.newMasterKey(storeID: Hex.encode(storeID))
                : try provider.masterKey(createIfAbsent: true, storeID: Hex.encode(storeID))
            try checkLength(key)
            return MasterKeyMaterial(kind: .raw, salt: zeroSalt, opsLimit: 0, memLimit: 0, key: key)
        case let .passphrase(passphrase, _):
            guard passphrase.count > 0 else {
                throw KeepsakeError(.invalidArgument, "the \(self) is empty; an empty passphrase protects nothing")
            }
            let salt = random.bytes(Sodium.pwhashSaltBytes)
            let key = try derive(passphrase, salt: salt, opsLimit: limits.opsLimit, memLimit: limits.memLimit)
            return MasterKeyMaterial(
                kind: .passphrase, salt: salt, opsLimit: limits.opsLimit,
                memLimit: limits.memLimit, key: key)
        }
    }

    /// The master keys that may open an existing header: every key of a key file's key set or
    /// of a provider's history, the one key of a passphrase.
    func existingKeys(for header: StoreHeader) throws(KeepsakeError) -> [SecureBytes] {
        switch (self, header.keyKind) {
        case let (.keyFile(path), .raw):
            return try KeyFile(path: path).masterKeys()
        case let (.provider(provider), .raw):
            let keys = try provider.masterKeys(storeID: Hex.encode(header.storeID))
            for key in keys { try checkLength(key) }
            return keys
        default:
            return [try existingKey(for: header)]
        }
    }

    /// The master key for an existing header, or `KeepsakeError.Code.wrongKey` when this
    /// kind of source cannot open it.
    func existingKey(for header: StoreHeader) throws(KeepsakeError) -> SecureBytes {
        switch (self, header.keyKind) {
        case let (.keyFile(path), .raw):
            return try KeyFile(path: path).masterKey(createIfAbsent: false)
        case let (.provider(provider), .raw):
            let key = try provider.masterKey(createIfAbsent: false, storeID: Hex.encode(header.storeID))
            try checkLength(key)
            return key
        case let (.passphrase(passphrase, _), .passphrase):
            return try derive(passphrase, salt: header.salt, opsLimit: header.opsLimit, memLimit: header.memLimit)
        case (.passphrase, .raw):
            throw KeepsakeError(
                .wrongKey,
                """
                this store is protected by a key (a key file or a keyring), but \(withArticle(String(describing: self))) was given
                """)
        case (_, .passphrase):
            throw KeepsakeError(
                .wrongKey,
                "this store is protected by a passphrase, but \(withArticle(String(describing: self))) was given")
        }
    }

    private func checkLength(_ key: SecureBytes) throws(KeepsakeError) {
        guard key.count == Format.keyBytes else {
            throw KeepsakeError(
                .invalidArgument, "\(self) returned \(key.count) bytes; a master key is \(Format.keyBytes)")
        }
    }

    private func derive(
        _ passphrase: SecureBytes, salt: [UInt8], opsLimit: UInt64, memLimit: UInt64
    ) throws(KeepsakeError) -> SecureBytes {
        try SecureBytes(count: Format.keyBytes) { (output) throws(KeepsakeError) in
            let result = passphrase.withUnsafeBytes { pass in
                salt.withUnsafeBytes { salt in
                    Sodium.passwordHash(output, passphrase: pass, salt: salt, opsLimit: opsLimit, memLimit: memLimit)
                }
            }
            if case let .failure(failure) = result {
                throw KeepsakeError(
                    .io,
                    """
                    cannot derive a key from the \(self) with Argon2id (\(opsLimit) passes, \(memLimit / 1024) KiB): \
                    not enough memory?
                    """, cause: .library(domain: "libsodium", code: Int(failure.status), message: failure.function))
            }
        }
    }
}

/// Where random bytes come from: the system generator, or fixed bytes in format tests
/// (the deterministic hook that produces the test vectors).
struct RandomSource: Sendable {
    /// Public random values: nonces, store ids, salts.
    var bytes: @Sendable (Int) -> [UInt8]
    /// Secret random values: the data key.
    var secret: @Sendable (Int) -> SecureBytes
    /// Whether many public values may be drawn in one call and split (true of the system's
    /// generator; a scripted source for test vectors hands out values one by one).
    var drawsInOneCall = false

    static let system = RandomSource(
        bytes: { count in
            var bytes = [UInt8](repeating: 0, count: count)
            bytes.withUnsafeMutableBytes { Sodium.randomBytes($0) }
            return bytes
        },
        secret: { SecureBytes.random(count: $0) }, drawsInOneCall: true)
}

/// `text` as one shell word: as it is when it holds only characters no shell treats specially,
/// else in single quotes.
func shellQuoted(_ text: String) -> String {
    let plain = text.unicodeScalars.allSatisfy {
        CharacterSet.alphanumerics.contains($0) && $0.isASCII || "/._-+,:@%=".unicodeScalars.contains($0)
    }
    return plain && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
}
