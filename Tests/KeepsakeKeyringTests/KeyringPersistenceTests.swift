import Foundation
import Keepsake
import KeepsakeKeyring
import Migrations
import Testing

extension KeyringTests {
    /// Records outlive the keyring daemon: a restart on the same data directory (what a
    /// reboot, or a reinstall that wipes only the app's data, looks like to the keyring).
    @Suite("Persistence across a daemon restart")
    struct Persistence {
        @Test("records, and their migrated form, survive a restart of the keyring daemon")
        func survivesRestart() throws {
            let store = try PrivateKeyring.freshStore("restart")
            let context = MigrationContext.fixed(
                now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "device-1")
            try store.setData(Data(#"{"version":0,"startDate":700000000}"#.utf8), forKey: "trialInfo")
            try store.setData(Data(#"{"name":"Ada","age":"36"}"#.utf8), forKey: "person")
            let trial = try Vault(store: store, context: context).load(TrialInfo.chain)
            let startDate = Date(timeIntervalSinceReferenceDate: 700_000_000)
            #expect(
                trial?.value == TrialInfoV2(startDate: startDate, deviceId: "device-1") && trial?.storedVersion == 0)
            let migratedBytes = try store.data(forKey: "trialInfo")

            try PrivateKeyring.restartDaemon()

            // A new process would make a new store: same service, nothing cached.
            let reopened = try KeyringStore.open(service: store.service)
            #expect(try reopened.keys() == ["person", "trialInfo"])
            #expect(try reopened.data(forKey: "trialInfo") == migratedBytes)
            #expect(try reopened.data(forKey: "person") == Data(#"{"name":"Ada","age":"36"}"#.utf8))
            #expect(
                try Vault(store: reopened, context: context).load(TrialInfo.chain).map { $0.value }
                    == (TrialInfoV2(startDate: startDate, deviceId: "device-1")))
            // The store made before the restart keeps working: its session died with the old
            // daemon, and its next call opens one with the new daemon, reads and writes alike.
            #expect(try store.data(forKey: "trialInfo") == migratedBytes)
            try PrivateKeyring.restartDaemon()
            try store.setData(Data(#"{"name":"Bob","age":"40"}"#.utf8), forKey: "person")
            #expect(try reopened.data(forKey: "person") == Data(#"{"name":"Bob","age":"40"}"#.utf8))
        }
    }
}
