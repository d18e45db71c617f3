import Foundation
import Synchronization

/// What the crash loop leaves nothing of, however it ends (done, failed, aborted, or SIGINT,
/// SIGTERM or SIGHUP): its scratch directory, and the records it put in a keyring.
final class Cleanup: Sendable {
    static let shared = Cleanup()

    /// The keyring records to delete: `migrate delete KEY --store URI` each.
    private struct KeyringRecords: Sendable {
        var migrate: Migrate
        var uri: String
        var keys: [String]
    }

    private struct Pending: Sendable {
        var scratch: String?
        var keyring: KeyringRecords?
    }

    /// Held while cleaning up (which runs commands).
    private let pending = Mutex(Pending())
    /// The signal received, 0 before one is: apart from `pending`, as every command checks it.
    private let signal = Atomic<Int32>(0)

    /// Blocks the signals that end the crash loop in every thread but one, which waits for them.
    /// Call first: threads started before keep them unblocked. (Children get them back:
    /// Child.spawn.) On a signal, the crash loop stops at its next command (`interruption`),
    /// cleans up and exits with 128 plus the signal; if it is stuck in a command for 5 s, the
    /// signal's thread cleans up and exits instead.
    func handleSignals() {
        var signals = Self.endingSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        Thread.detachNewThread {
            var signals = Cleanup.endingSignals
            var received: Int32 = 0
            guard sigwait(&signals, &received) == 0 else { return }
            Cleanup.shared.signal.store(received, ordering: .sequentiallyConsistent)
            Thread.sleep(forTimeInterval: 5)
            Cleanup.shared.run()
            _exit(128 + received)
        }
    }

    /// The signal that asked the crash loop to stop, if one did: checked before each command,
    /// so that nothing is written into the scratch directory once it is being removed.
    var interruption: Int32? {
        let received = signal.load(ordering: .sequentiallyConsistent)
        return received == 0 ? nil : received
    }

    private static var endingSignals: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, signal) }
        return signals
    }

    /// Removes the directory at the end.
    func removeAtEnd(_ scratch: String) { pending.withLock { $0.scratch = scratch } }

    /// Deletes the keys from the keyring at the end, or at `deleteKeyringRecords()`.
    func deleteAtEnd(_ keys: [String], from uri: String, with migrate: Migrate) {
        pending.withLock { $0.keyring = KeyringRecords(migrate: migrate, uri: uri, keys: keys) }
    }

    /// Deletes the keyring records now, if any (errors ignored), and forgets them.
    func deleteKeyringRecords() { pending.withLock { Self.deleteKeyringRecords(&$0) } }

    /// Does it all, once. The lock is held throughout: a second caller (the main thread ending
    /// while the signal thread cleans up) waits until the first is done.
    func run() {
        pending.withLock { pending in
            Self.deleteKeyringRecords(&pending)
            if let scratch = pending.scratch.take() { Files.remove(scratch) }
        }
    }

    private static func deleteKeyringRecords(_ pending: inout Pending) {
        guard let keyring = pending.keyring.take() else { return }
        for key in keyring.keys {
            _ = try? keyring.migrate.succeeds(["delete", key, "--store", keyring.uri], cleanup: true)
        }
    }
}
