import Foundation
import KeepsakeKeyring
import KeepsakeTesting
import Testing

extension KeyringTests {
    @Suite("Store contract")
    struct Contract {
        @Test("KeyringStore keeps the store contract", arguments: StoreContract.checks)
        func contract(_ check: StoreContract.Check) throws {
            try check.run(on: PrivateKeyring.freshStore("contract"))
        }
    }
}
