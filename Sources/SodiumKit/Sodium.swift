internal import CSodium

/// Every libsodium function Keepsake calls, each wrapped once: the encrypted file store
/// (KeepsakeSodium), sealed PostgreSQL values (KeepsakePostgres) and the device identity's
/// HMAC (Keepsake). This internal target is the only importer of `CSodium`; no C type leaves it.
///
/// Wrappers take and return Swift buffers, check lengths with preconditions (a wrong length is
/// a programmer error), and report a failing status as ``Sodium/Failure`` naming the function.
package enum Sodium {
    /// A libsodium call that returned a failure status.
    package struct Failure: Error, Equatable {
        /// The C function that failed.
        package let function: String
        /// Its return value.
        package let status: Int32
    }

    // MARK: Initialisation

    /// `sodium_init`, run once per process by the Swift runtime's thread-safe global
    /// initialisation; every wrapper below goes through it.
    private static let initialised: Bool = sodium_init() >= 0

    package static func ensureInitialised() {
        precondition(initialised, "sodium_init() failed: libsodium cannot be used in this process")
    }

    /// The linked libsodium's version, e.g. `1.0.18` (`sodium_version_string`).
    package static var versionString: String { String(cString: sodium_version_string()) }

    // MARK: Constants (the macros are not imported; the function forms are)

    package static let aeadKeyBytes = Int(crypto_aead_xchacha20poly1305_ietf_keybytes())
    package static let aeadNonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
    package static let aeadTagBytes = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
    package static let kdfKeyBytes = Int(crypto_kdf_keybytes())
    package static let kdfContextBytes = Int(crypto_kdf_contextbytes())
    package static let pwhashSaltBytes = Int(crypto_pwhash_saltbytes())
    package static let pwhashArgon2id13 = crypto_pwhash_alg_argon2id13()
    package static let pwhashOpsLimitMin = UInt64(crypto_pwhash_argon2id_opslimit_min())
    package static let pwhashOpsLimitMax = UInt64(crypto_pwhash_argon2id_opslimit_max())
    package static let pwhashMemLimitMin = UInt64(crypto_pwhash_argon2id_memlimit_min())
    package static let pwhashMemLimitMax = UInt64(UInt(bitPattern: crypto_pwhash_argon2id_memlimit_max()))
    package static let pwhashOpsLimitInteractive = UInt64(crypto_pwhash_argon2id_opslimit_interactive())
    package static let pwhashMemLimitInteractive = UInt64(crypto_pwhash_argon2id_memlimit_interactive())
    package static let pwhashOpsLimitModerate = UInt64(crypto_pwhash_argon2id_opslimit_moderate())
    package static let pwhashMemLimitModerate = UInt64(crypto_pwhash_argon2id_memlimit_moderate())
    package static let pwhashOpsLimitSensitive = UInt64(crypto_pwhash_argon2id_opslimit_sensitive())
    package static let pwhashMemLimitSensitive = UInt64(crypto_pwhash_argon2id_memlimit_sensitive())

    // MARK: Guarded memory

    /// `sodium_malloc`: `count` bytes between guard pages, locked in memory where allowed.
    package static func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        ensureInitialised()
        guard let pointer = sodium_malloc(max(count, 1)) else {
            fatalError("sodium_malloc(\(count)) failed: out of memory")
        }
        return pointer
    }

    /// `sodium_free`: zeroes the whole allocation (rounded up to pages), unlocks and frees it.
    package static func free(_ pointer: UnsafeMutableRawPointer) {
        sodium_free(pointer)
    }

    /// `sodium_memzero`: zeroes `buffer` in a way the compiler cannot remove.
    package static func zero(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }

    /// `sodium_memcmp`: whether two equally long buffers are equal, in time independent of
    /// their contents.
    package static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0 else { return true }
        return sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    // MARK: Randomness

    /// `randombytes_buf`: fills `buffer` with random bytes from the kernel's generator.
    package static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) {
        ensureInitialised()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }

    // MARK: Key derivation

    /// `crypto_kdf_derive_from_key`: subkey number `id` of `key` in `context` (8 bytes), written
    /// to `subkey` (16…64 bytes).
    package static func deriveSubkey(
        _ subkey: UnsafeMutableRawBufferPointer, id: UInt64, context: [UInt8], key: UnsafeRawBufferPointer
    ) {
        ensureInitialised()
        precondition(key.count == kdfKeyBytes, "crypto_kdf: the key must be \(kdfKeyBytes) bytes")
        precondition(context.count == kdfContextBytes, "crypto_kdf: the context must be \(kdfContextBytes) bytes")
        let status = context.withUnsafeBytes { ctx in
            crypto_kdf_derive_from_key(
                subkey.baseAddress!.assumingMemoryBound(to: UInt8.self), subkey.count, id,
                ctx.baseAddress!.assumingMemoryBound(to: CChar.self),
                key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        precondition(status == 0, "crypto_kdf_derive_from_key failed for a valid subkey length")
    }

    // MARK: Hashing

    /// `crypto_generichash` (BLAKE2b): a hash of `message` into `output` (16…64 bytes), keyed
    /// with `key` when given (16…64 bytes).
    package static func genericHash(
        _ output: UnsafeMutableRawBufferPointer, message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer?
    ) {
        ensureInitialised()
        let status = crypto_generichash(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
            key?.baseAddress?.assumingMemoryBound(to: UInt8.self), key?.count ?? 0)
        precondition(status == 0, "crypto_generichash failed for valid lengths")
    }

    // MARK: Authenticated encryption

    /// `crypto_aead_xchacha20poly1305_ietf_encrypt`: `plaintext` sealed into `ciphertext`
    /// (`plaintext.count + aeadTagBytes` bytes).
    package static func seal(
        _ ciphertext: UnsafeMutableRawBufferPointer, plaintext: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
    ) {
        ensureInitialised()
        precondition(ciphertext.count == plaintext.count + aeadTagBytes, "AEAD: wrong ciphertext length")
        precondition(nonce.count == aeadNonceBytes && key.count == aeadKeyBytes, "AEAD: wrong nonce or key length")
        var length: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_encrypt(
            ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), &length,
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
            associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
            nil,
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        precondition(status == 0 && length == UInt64(ciphertext.count), "AEAD encryption failed")
    }

    /// `crypto_aead_xchacha20poly1305_ietf_decrypt`: opens `ciphertext` into `plaintext`
    /// (`ciphertext.count - aeadTagBytes` bytes), or throws when the tag does not verify —
    /// wrong key, wrong associated data, or altered bytes. `plaintext` is zeroed on failure.
    /// Returns a `Result` so that callers can carry it out of nested buffer closures.
    package static func open(
        _ plaintext: UnsafeMutableRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
    ) -> Result<Void, Failure> {
        ensureInitialised()
        precondition(ciphertext.count == plaintext.count + aeadTagBytes, "AEAD: wrong plaintext length")
        precondition(nonce.count == aeadNonceBytes && key.count == aeadKeyBytes, "AEAD: wrong nonce or key length")
        var length: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
            nil,
            ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
            associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard status == 0 else {
            zero(plaintext)
            return .failure(Failure(function: "crypto_aead_xchacha20poly1305_ietf_decrypt", status: status))
        }
        return .success(())
    }

    // MARK: Message authentication

    /// The length of an HMAC-SHA-256 code, in bytes (32).
    package static let hmacSHA256Bytes = Int(crypto_auth_hmacsha256_bytes())

    /// `crypto_auth_hmacsha256_*` (RFC 2104): the HMAC-SHA-256 of `message` under `key`. Keys
    /// of any length are accepted: longer than 64 bytes, a key is first hashed, as RFC 2104 says.
    package static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        ensureInitialised()
        var state = crypto_auth_hmacsha256_state()
        var code = [UInt8](repeating: 0, count: hmacSHA256Bytes)
        // The streaming form takes a key of any length; the one-shot form only 32-byte keys.
        // libsodium documents no failure for these calls; a non-zero status would be a bug there.
        // Arrays passed as pointers: never null, even when empty (the key's pointer must not be).
        var status = crypto_auth_hmacsha256_init(&state, key, key.count)
        status |= crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        status |= crypto_auth_hmacsha256_final(&state, &code)
        precondition(status == 0, "crypto_auth_hmacsha256 failed with status \(status)")
        return code
    }

    // MARK: Password hashing

    /// `crypto_pwhash` with Argon2id 1.3: a key derived from `passphrase` and `salt` into `output`.
    /// Fails when libsodium refuses (limits out of range, or not enough memory).
    package static func passwordHash(
        _ output: UnsafeMutableRawBufferPointer, passphrase: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer,
        opsLimit: UInt64, memLimit: UInt64
    ) -> Result<Void, Failure> {
        ensureInitialised()
        precondition(salt.count == pwhashSaltBytes, "crypto_pwhash: the salt must be \(pwhashSaltBytes) bytes")
        // An empty passphrase still needs a valid pointer.
        var empty: UInt8 = 0
        let status = withUnsafeMutablePointer(to: &empty) { emptyPointer in
            crypto_pwhash(
                output.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(output.count),
                UnsafeRawPointer(passphrase.baseAddress ?? UnsafeRawPointer(emptyPointer))
                    .assumingMemoryBound(to: CChar.self),
                UInt64(passphrase.count),
                salt.baseAddress!.assumingMemoryBound(to: UInt8.self),
                opsLimit, Int(clamping: memLimit), pwhashArgon2id13)
        }
        guard status == 0 else {
            zero(output)
            return .failure(Failure(function: "crypto_pwhash", status: status))
        }
        return .success(())
    }
}
