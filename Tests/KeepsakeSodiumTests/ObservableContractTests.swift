import Foundation
import Keepsake
import KeepsakeTesting
import Testing

@testable import KeepsakeSodium

/// KeepsakeTesting's contract for observable stores on the encrypted file store, written by a
/// second instance opened on the same directory (as another process would).
@Suite("SodiumFileStore keeps the observable store contract")
struct ObservableContractTests {
    @Test("written by another instance", arguments: ObservableStoreContract.checks)
    func contract(_ check: ObservableStoreContract.Check) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
        let store = try makeKeyFileStore(in: directory)
        try await check.run(on: store, writer: try reopen(directory))
    }
}
