#if PostgreSQL
import Keepsake

extension PostgresStore: DiagnosableStore {
    /// `PostgreSQL <server version>`, asked of the server, and — for a table an older release
    /// created without the key index that key patterns and paged reads use — the statement
    /// that creates it.
    ///
    /// - Throws: `KeepsakeError` naming the store when the server cannot be reached.
    /// - Important: Nothing is written, whether this returns or throws.
    public func diagnosis() throws(KeepsakeError) -> String {
        let version = "PostgreSQL \(try serverVersion())"
        guard try keyIndexExists() == false else { return version }
        return "\(version); the table has no key index (key patterns and large reads sort it): \(keyIndexStatement)"
    }
}
#endif
