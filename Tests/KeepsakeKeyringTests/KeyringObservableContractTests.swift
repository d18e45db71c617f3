import Foundation
import KeepsakeKeyring
import KeepsakeTesting
import Testing

extension KeyringTests {
    /// KeepsakeTesting's contract for observable stores, on every provider the keyring tests
    /// run on, written by a second store on the same service (as another process would).
    @Suite("Observable store contract")
    struct ObservableContract {
        @Test("KeyringStore keeps the observable store contract", arguments: ObservableStoreContract.checks)
        func contract(_ check: ObservableStoreContract.Check) async throws {
            let store = try PrivateKeyring.freshStore("observable")
            try await check.run(on: store, writer: try KeyringStore(service: store.service, timeout: .seconds(10)))
        }
    }
}
