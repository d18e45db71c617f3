import KeepsakeTestKeyring
import Testing

/// Every test that talks to the private keyring (`TestKeyring.shared()`).
///
/// Serialized, nested suites included: some tests lock the login collection or restart the
/// daemon, and no other keyring test may run meanwhile. Where no private keyring can run (the
/// tools are missing, or a session bus that is not a private keyring's is reachable) the whole
/// suite is skipped, and the skip says why — these tests never touch a real user's keyring.
@Suite(
    "KeyringStore against a private keyring (gnome-keyring, KeePassXC or KWallet)",
    .serialized,
    .enabled(if: PrivateKeyring.unavailableReason == nil, Comment(rawValue: PrivateKeyring.unavailableReason ?? "")),
    .privateKeyring
)
struct KeyringTests {}

/// Starts (or attaches to) the process's private keyring before each test of the suite runs,
/// so that no libsecret call can happen before this process points at it.
struct PrivateKeyringScope: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        _ = try TestKeyring.shared()
        try await function()
    }
}

extension Trait where Self == PrivateKeyringScope {
    /// ``PrivateKeyringScope``.
    static var privateKeyring: Self { PrivateKeyringScope() }
}
