internal import CSodium

/// HMAC-SHA-256 (RFC 2104), computed by libsodium's `crypto_auth_hmacsha256_*`, for deriving
/// identifiers without storing their inputs (``DeviceIdentity``). Keepsake implements no
/// cryptographic primitive of its own; the encrypted store's cryptography is libsodium's too.
enum HMACSHA256 {
    /// The length of an authentication code, in bytes (32).
    static let byteCount = Int(crypto_auth_hmacsha256_bytes())

    /// `sodium_init`, once per process (thread-safe global initialisation).
    private static let initialised: Bool = sodium_init() >= 0

    /// The HMAC-SHA-256 of `message` under `key`. Keys of any length are accepted: longer than
    /// 64 bytes, a key is first hashed, as RFC 2104 says.
    static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        precondition(initialised, "sodium_init() failed: libsodium cannot be used in this process")
        var state = crypto_auth_hmacsha256_state()
        var code = [UInt8](repeating: 0, count: byteCount)
        // The streaming form takes a key of any length; the one-shot form only 32-byte keys.
        // libsodium documents no failure for these calls; a non-zero status would be a bug there.
        // Arrays passed as pointers: never null, even when empty (the key's pointer must not be).
        var status = crypto_auth_hmacsha256_init(&state, key, key.count)
        status |= crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        status |= crypto_auth_hmacsha256_final(&state, &code)
        precondition(status == 0, "crypto_auth_hmacsha256 failed with status \(status)")
        return code
    }
}
