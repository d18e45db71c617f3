internal import CLibsecret

/// The libsecret keyring store (in progress).
public enum KeepsakeKeyring {}
