import Keepsake

extension KeepsakeError.Code {
    /// The key or passphrase given does not open this encrypted store: the header's key check
    /// did not match. Nothing was read or written. The error's message names the key source
    /// that was tried (a key file's path, where a passphrase came from), never the secret.
    public static let wrongKey = KeepsakeError.Code(rawValue: "wrongKey")
}
