internal import SodiumKit

/// HMAC-SHA-256 (RFC 2104), computed by libsodium (SodiumKit's `Sodium.hmacSHA256`), for
/// deriving identifiers without storing their inputs (``DeviceIdentity``). Keepsake implements
/// no cryptographic primitive of its own; the encrypted store's cryptography is libsodium's too.
enum HMACSHA256 {
    /// The length of an authentication code, in bytes (32).
    static var byteCount: Int { Sodium.hmacSHA256Bytes }

    /// The HMAC-SHA-256 of `message` under `key`. Keys of any length are accepted: longer than
    /// 64 bytes, a key is first hashed, as RFC 2104 says.
    static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        Sodium.hmacSHA256(key: key, message: message)
    }
}
