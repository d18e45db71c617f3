#if PostgreSQL
import Foundation
import Keepsake
import KeepsakeSodium
internal import PostgresNIO

extension PostgresStore: ValueConstrainedStore {
    /// Refuses every value when this store may not write its table (docs/FORMAT.md §11.2): the
    /// table is sealed and this store has no master key, or another one; or the table holds plain
    /// values and this store has a master key. `StoreTransfer` (`migrate copy`) asks before it
    /// writes anything, so that such a transfer is refused whole; every write checks again in
    /// its own transaction, whatever this answered.
    ///
    /// One query, the first time in a process; a pass is remembered. A table that does not
    /// exist yet passes: its first write creates it with this store's seal.
    ///
    /// - Throws: `KeepsakeError.Code.wrongKey` naming the store when it may not write the table,
    ///   `KeepsakeError.Code.invalidArgument` when the table's values are sealed for another
    ///   spelling of its name, and what a read throws when the server cannot be asked.
    public func checkCanHold(_ value: Data, forKey key: String) throws(KeepsakeError) {
        let seal = TableSeal(store: self)
        if seal.isAccepted { return }
        try perform("check the table's seal", key: key, operation: .read, tableMissing: .answer(())) { connection, _ in
            try await seal.preflight(on: connection)
        }
    }
}
#endif
