import Foundation
import KeepsakeTestKeyring

/// A second private bus with no Secret Service on it (nothing can be activated there) unless a
/// test starts one: `KeepsakeTestKeyring`'s ``TestKeyring/startWithoutProvider(provider:)``, for
/// the no-provider and hung-provider tests. Its cleanup is the keyring's.
final class PrivateBus {
    private let keyring: TestKeyring

    /// The bus's address, for a child process's `DBUS_SESSION_BUS_ADDRESS`.
    var address: String { keyring.busAddress }

    init() throws {
        keyring = try TestKeyring.startWithoutProvider()
    }

    /// Starts a gnome-keyring-daemon that owns `org.freedesktop.secrets` on this bus, then
    /// stops it with SIGSTOP: the name stays owned, messages to it are queued, and no reply
    /// ever comes — a hung provider.
    func startHungProvider() throws {
        try keyring.restartDaemon()
        try keyring.suspendDaemon()
    }

    /// Stops the provider and the bus and removes their directory.
    func stop() {
        keyring.stop()
    }
}
