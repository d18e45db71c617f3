import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeSodium
import KeepsakeTesting
import Testing

/// A master key source or none, for ``TestServer/store(prefix:masterKey:)``.
enum MasterKeySourceOrNone {
    case none
    case some(MasterKeySource)
    var source: MasterKeySource? {
        if case let .some(source) = self { return source }
        return nil
    }
}

extension PostgresServerTests {
    @Suite("PostgresStore keeps the store contract")
    struct PostgresStoreContractTests {
        @Test("A plain table passes every contract check", arguments: StoreContract.checks)
        func contract(_ check: StoreContract.Check) throws {
            try check.run(on: TestServer.store())
        }

        @Test("A sealed table passes every contract check", arguments: StoreContract.checks)
        func sealedContract(_ check: StoreContract.Check) throws {
            let key = EnvironmentMasterKey(variable: "K", environment: ["K": String(repeating: "ab", count: 32)])
            try check.run(on: TestServer.store(masterKey: .some(.provider(key))))
        }
    }
}
