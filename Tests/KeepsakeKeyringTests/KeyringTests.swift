import Testing

/// Every test that talks to the private keyring started by `scripts/with-private-keyring`.
///
/// Serialized, nested suites included: some tests lock the login collection or restart the
/// daemon, and no other keyring test may run meanwhile. Outside the harness the whole suite is
/// skipped, and the skip says why — these tests never touch a real user's keyring.
@Suite(
    "KeyringStore against a private gnome-keyring",
    .serialized,
    .enabled(
        if: PrivateKeyring.isRunning,
        "needs the private keyring: run `scripts/with-private-keyring swift test …` (KEEPSAKE_TEST_KEYRING is not set, so the keyring tests did not run)"
    )
)
struct KeyringTests {}
