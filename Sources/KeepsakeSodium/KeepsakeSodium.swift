internal import CSodium

/// The libsodium-encrypted file store (in progress).
public enum KeepsakeSodium {}
