import Keepsake

extension PostgresStore: DiagnosableStore {
    /// `PostgreSQL <server version>`, asked of the server (one query).
    ///
    /// - Throws: `KeepsakeError` naming the store when the server cannot be reached.
    /// - Important: Nothing is written, whether this returns or throws.
    public func diagnosis() throws(KeepsakeError) -> String {
        "PostgreSQL \(try serverVersion())"
    }
}
