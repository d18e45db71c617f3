#if OpenBao
internal import FileKit
import Foundation
import Keepsake
import KeepsakeSodium

/// A master key held by OpenBao's (or Vault's) Transit secrets engine, by envelope encryption:
/// Transit makes a random 32-byte data key and hands out only its wrapped form
/// (`datakey/wrapped`), which is kept in a file beside the app; opening a store sends the
/// wrapped form to Transit (`decrypt`) and holds the data key in memory only. The Transit key
/// never leaves the server, and the file alone opens nothing.
///
/// ```swift
/// let transit = try OpenBaoTransitKey(
///     parsing: "openbao://bao.internal:8200/transit/records?cacert=/etc/myapp/bao-ca.pem&role_id_file=/run/secrets/role-id&secret_id_file=/run/secrets/secret-id",
///     wrappedKeyFile: "/var/lib/myapp/records.key.wrapped")
/// let store = try PostgresStore(configuration: database, masterKey: .provider(transit))
/// ```
///
/// The URI's path is the Transit mount and the key's name; it logs in as an ``OpenBaoStore``
/// does (a token file, an AppRole), renewing its token. Rotating the Transit key
/// (`bao write -f transit/keys/NAME/rotate`) changes nothing for the stores: ``rewrap()`` then
/// wraps the same data key under the key's newest version, without re-sealing any record, so
/// that old versions can be retired (`min_decryption_version`).
///
/// The role needs `update` on `MOUNT/datakey/wrapped/NAME` (only to create the file),
/// `MOUNT/decrypt/NAME` and `MOUNT/rewrap/NAME`.
public struct OpenBaoTransitKey: MasterKeyProvider {
    /// The server, the Transit mount (``OpenBaoConfiguration/mount``) and the key's name
    /// (``OpenBaoConfiguration/prefix``), and how to log in.
    public let configuration: OpenBaoConfiguration
    /// The file that holds the wrapped data key (`vault:vN:…`, as Transit returns it).
    public let wrappedKeyFile: String

    /// A key source on `configuration`, whose prefix is the Transit key's name.
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` when the configuration names no key
    ///   (`openbao://HOST/MOUNT` without a name).
    public init(configuration: OpenBaoConfiguration, wrappedKeyFile: String) throws(KeepsakeError) {
        guard !configuration.prefix.isEmpty, !configuration.prefix.contains("/") else {
            throw KeepsakeError(
                .invalidArgument, store: configuration.uri,
                "a Transit key is named by the URI's path after the mount: openbao://HOST:PORT/transit/KEYNAME")
        }
        self.configuration = configuration
        self.wrappedKeyFile = wrappedKeyFile
    }

    /// A key source on the URI `openbao://HOST:PORT/MOUNT/KEYNAME?…` (the parameters of
    /// ``OpenBaoConfiguration/init(parsing:environment:)``).
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` for a URI that does not parse or names no key.
    public init(
        parsing uri: String, wrappedKeyFile: String,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        try self.init(
            configuration: OpenBaoConfiguration(parsing: uri, environment: environment), wrappedKeyFile: wrappedKeyFile)
    }

    /// A key source on one URI that also names the wrapped key's file:
    /// `openbao://HOST:PORT/MOUNT/KEYNAME?wrapped_key_file=PATH&…` — the form
    /// `migrate --master-key transit:URI` takes.
    ///
    /// - Throws: `KeepsakeError.Code.invalidArgument` for a URI that does not parse, names no
    ///   key, or has no `wrapped_key_file=` (or has it twice).
    public init(
        parsing uri: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeepsakeError) {
        let parameter = "wrapped_key_file="
        let (base, query) =
            uri.firstIndex(of: "?").map { (String(uri[..<$0]), String(uri[uri.index(after: $0)...])) } ?? (uri, "")
        var kept: [Substring] = []
        var files: [String] = []
        for pair in query.split(separator: "&") {
            if pair.hasPrefix(parameter) {
                let value = String(pair.dropFirst(parameter.count))
                files.append(value.removingPercentEncoding ?? value)
            } else {
                kept.append(pair)
            }
        }
        guard files.count == 1, let file = files.first, !file.isEmpty else {
            throw KeepsakeError(
                .invalidArgument,
                files.isEmpty
                    ? "a Transit key source names the file of its wrapped data key: add wrapped_key_file=PATH to \(base)"
                    : "a Transit key source takes one wrapped_key_file=PATH")
        }
        try self.init(
            parsing: kept.isEmpty ? base : base + "?" + kept.joined(separator: "&"), wrappedKeyFile: file,
            environment: environment)
    }

    /// The key's name.
    public var keyName: String { configuration.prefix }

    /// `OpenBao Transit key NAME at //HOST:PORT/MOUNT (wrapped data key in FILE)`.
    public var description: String {
        "OpenBao Transit key \(keyName) at \(configuration.uri) (wrapped data key in \(wrappedKeyFile))"
    }

    /// The 32-byte data key: the file's wrapped key, unwrapped by Transit. With
    /// `createIfAbsent` and no file, Transit makes a new data key and its wrapped form is
    /// written to the file (mode 0600, created exclusively) before the key is returned.
    ///
    /// - Throws: `KeepsakeError.Code.notFound` when the file is missing (and not to be
    ///   created); `.corruptStore` when it does not hold a wrapped key; `.wrongKey` when Transit
    ///   refuses to unwrap it (another key, or a version older than the key's
    ///   `min_decryption_version`); `.permissionDenied`, `.unavailable`, `.timeout` as an
    ///   ``OpenBaoStore`` call does. No message holds the key or the token.
    public func masterKey(createIfAbsent: Bool) throws(KeepsakeError) -> SecureBytes {
        let client = try Client(configuration: configuration, store: description)
        let deadline = ContinuousClock.now + configuration.timeout
        var wrapped: String
        do {
            wrapped = try readWrapped()
        } catch  where error.code == .notFound && createIfAbsent {
            wrapped = try create(client: client, deadline: deadline)
        }
        let reply = try client.send(
            .POST, "\(configuration.mount)/decrypt/\(keyName)",
            body: try Data.json(["ciphertext": wrapped], store: description, key: nil),
            doing: "unwrap the data key", deadline: deadline)
        guard reply.status == 200 else {
            if reply.status == 400 {
                throw KeepsakeError(
                    .wrongKey, store: description,
                    """
                    Transit refused to unwrap the data key in \(wrappedKeyFile) (\(reply.errors)): it was wrapped \
                    by another key, or by a key version older than the key's min_decryption_version (run \
                    rewrap before raising it)
                    """)
            }
            throw client.failure(reply, key: nil, doing: "unwrap the data key")
        }
        let data = try client.object(of: reply, key: nil, doing: "unwrap the data key")["data"] as? [String: Any]
        guard let text = data?["plaintext"] as? String, let key = Data(base64Encoded: text), key.count == 32 else {
            throw KeepsakeError(
                .corruptStore, store: description,
                "Transit's answer holds no 32-byte data key: is \(keyName) an aes256-gcm96 or chacha20-poly1305 key?")
        }
        return SecureBytes(copying: key)
    }

    /// Wraps the file's data key under the Transit key's newest version (`rewrap`), and replaces
    /// the file durably; the data key — and so every record it sealed — stays the same.
    ///
    /// - Returns: The key versions the wrapped key had before and has now (equal when it was
    ///   already the newest).
    /// - Throws: What ``masterKey(createIfAbsent:)`` throws, and `.io` when the file cannot be
    ///   replaced (it is left as it was).
    @discardableResult
    public func rewrap() throws(KeepsakeError) -> (from: Int, to: Int) {
        let client = try Client(configuration: configuration, store: description)
        let deadline = ContinuousClock.now + configuration.timeout
        let wrapped = try readWrapped()
        let reply = try client.send(
            .POST, "\(configuration.mount)/rewrap/\(keyName)",
            body: try Data.json(["ciphertext": wrapped], store: description, key: nil),
            doing: "rewrap the data key", deadline: deadline)
        guard reply.status == 200 else { throw client.failure(reply, key: nil, doing: "rewrap the data key") }
        let data = try client.object(of: reply, key: nil, doing: "rewrap the data key")["data"] as? [String: Any]
        guard let rewrapped = data?["ciphertext"] as? String, let to = Self.version(of: rewrapped) else {
            throw KeepsakeError(.io, store: description, "Transit's rewrap answer holds no wrapped key")
        }
        if rewrapped != wrapped {
            do {
                try FileSystem.live.replace(
                    FilePath.lastComponent(of: wrappedKeyFile), in: FilePath.directory(of: wrappedKeyFile),
                    with: Data((rewrapped + "\n").utf8))
            } catch {
                throw error.error(store: description, "could not replace \(wrappedKeyFile) with the rewrapped key")
            }
        }
        return (Self.version(of: wrapped) ?? 0, to)
    }

    /// The key version of a wrapped key `vault:vN:…`.
    static func version(of wrapped: String) -> Int? {
        let parts = wrapped.split(separator: ":", maxSplits: 2)
        guard parts.count == 3, parts[0] == "vault", parts[1].hasPrefix("v") else { return nil }
        return Int(parts[1].dropFirst())
    }

    /// The file's wrapped key, checked for its shape.
    private func readWrapped() throws(KeepsakeError) -> String {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: wrappedKeyFile))
        } catch {
            if !FileManager.default.fileExists(atPath: wrappedKeyFile) {
                throw KeepsakeError(
                    .notFound, store: description, "there is no wrapped data key at \(wrappedKeyFile)")
            }
            throw KeepsakeError(
                .io, store: description, "could not read \(wrappedKeyFile): \(error.localizedDescription)")
        }
        let text = String(decoding: contents.prefix(4096), as: UTF8.self).trimmingCharacters(
            in: .whitespacesAndNewlines)
        guard contents.count <= 4096, Self.version(of: text) != nil else {
            throw KeepsakeError(
                .corruptStore, store: description,
                "\(wrappedKeyFile) does not hold a wrapped key (vault:vN:…, as Transit's datakey/wrapped returns it)")
        }
        return text
    }

    /// Asks Transit for a new wrapped data key and writes it to the file, exclusively: of two
    /// processes creating it at once, one file wins and the other reads it.
    private func create(client: Client, deadline: ContinuousClock.Instant) throws(KeepsakeError) -> String {
        let reply = try client.send(
            .POST, "\(configuration.mount)/datakey/wrapped/\(keyName)",
            body: try Data.json(["bits": 256], store: description, key: nil),
            doing: "make a wrapped data key", deadline: deadline)
        guard reply.status == 200 else { throw client.failure(reply, key: nil, doing: "make a wrapped data key") }
        let data = try client.object(of: reply, key: nil, doing: "make a wrapped data key")["data"] as? [String: Any]
        guard let wrapped = data?["ciphertext"] as? String, Self.version(of: wrapped) != nil else {
            throw KeepsakeError(.io, store: description, "Transit's answer holds no wrapped data key")
        }
        let bytes = Data((wrapped + "\n").utf8)
        let failure: SystemFailure? = bytes.withUnsafeBytes { buffer in
            do throws(SystemFailure) {
                try FileSystem.live.createExclusively(wrappedKeyFile, with: buffer)
                return nil
            } catch {
                return error
            }
        }
        guard let failure else { return wrapped }
        if failure.errno == EEXIST { return try readWrapped() }  // another process made it first
        throw failure.error(store: description, "could not write the wrapped data key to \(wrappedKeyFile)")
    }
}
#endif
