internal import FileKit
import Foundation
import Keepsake
internal import SodiumKit

extension SodiumFileStore {
    /// Replaces the store's master key: a new key file, a new passphrase, or a change between
    /// the two. Records are not touched.
    ///
    /// Records are encrypted under the store's data key, which does not change; the header,
    /// which holds that data key wrapped by the master key, is rewritten with the new master
    /// key in one durable replace (temporary file, fsync, rename, directory fsync). With
    /// ``MasterKeySource/keyFile(path:)`` the new key file is created first (0600, 32 random
    /// bytes) when nothing is at its path; a passphrase gets a new random salt.
    ///
    /// ```swift
    /// let store = try SodiumFileStore(directory: dir, key: .passphrase(old, origin: "prompt"))
    /// try store.changeMasterKey(to: .passphrase(new, origin: "prompt"))   // change passphrase
    /// try store.changeMasterKey(to: .keyFile(path: "/etc/myapp/new.key")) // rekey to a key file
    /// ```
    ///
    /// - Parameters:
    ///   - newKey: The new master key source.
    ///   - passphraseLimits: Argon2id cost for a new passphrase (ignored otherwise).
    /// - Throws: `KeepsakeError.Code.corruptStore` when the header on disk is damaged or
    ///   belongs to another store; `.invalidArgument` for an empty passphrase or a key file
    ///   that does not hold 32 bytes; `.lockTimeout`; `.io` / `.permissionDenied` with the `errno`.
    /// - Important: If this throws, the header is as it was: the store opens with the old key,
    ///   every record intact (a new key file or keyring item it created may remain; it opens nothing). After a
    ///   crash at any point the store opens with the old key or the new one.
    /// - Note: Copies of the old header (backups, a snapshot) still open the store with the old
    ///   key, because the data key stays the same: see `docs/FORMAT.md` §6.
    public func changeMasterKey(
        to newKey: MasterKeySource, passphraseLimits: PassphraseLimits = .moderate
    ) throws(KeepsakeError) {
        let lock = try Self.acquireLock(lockPath, timeout: lockTimeout, uri: uri)
        defer { lock.unlock() }
        cleanLeftovers()
        let keys = try currentKeys()
        let current = try Self.readHeader(directory: directory, uri: uri)
        let material: MasterKeyMaterial
        do throws(KeepsakeError) {
            material = try newKey.newMaterial(
                limits: passphraseLimits, random: random, fileSystem: fileSystem,
                storeID: storeID, rekey: true)
        } catch {
            throw Self.locate(error, uri)
        }
        let header = StoreHeader.seal(
            keyKind: material.kind, storeID: storeID, salt: material.salt, opsLimit: material.opsLimit,
            memLimit: material.memLimit, keyGeneration: current.keyGeneration &+ 1,
            wrapNonce: random.bytes(Sodium.aeadNonceBytes), masterKey: material.key, keys: keys)
        do throws(SystemFailure) {
            try fileSystem.replace(Format.headerFileName, in: directory, with: Data(header.encoded))
        } catch {
            throw KeepsakeError(
                error.code, store: uri,
                """
                cannot write the new store header; the store still opens with the old key
                """, cause: error.cause)
        }
        keyState.withLock {
            $0.master = MasterSubkeys(masterKey: material.key)
            $0.header = nil
        }
        Log.sodium.debug(
            "master key changed",
            metadata: [
                "store": "\(uri)", "masterKey": "\(newKey)", "keyGeneration": "\(current.keyGeneration &+ 1)"
            ])
    }

    /// How many times the master key was set: 1 when created, one more for each change.
    ///
    /// - Throws: As reading the header when opening.
    public func keyGeneration() throws(KeepsakeError) -> Int {
        Int(try Self.readHeader(directory: directory, uri: uri).keyGeneration)
    }
}
