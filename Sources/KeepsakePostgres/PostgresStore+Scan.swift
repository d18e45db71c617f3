#if PostgreSQL
import Foundation
import Keepsake
internal import PostgresNIO

/// Reading a model's many records a page at a time: a key pattern is a range of the index on
/// `key COLLATE "C"` (created with the table), never a scan of the table.
extension PostgresStore: PrefixScanningStore {
    /// How many rows a page of ``forEachRecord(_:)`` reads: a large table is read in pages of
    /// this many rows, in key order, so that a run over it never holds every row at once.
    static let walkPage = 2_048

    /// The keys `pattern` matches, sorted by bytes: one range query on the key index.
    ///
    /// - Throws: `KeepsakeError` naming the store when the server cannot answer.
    public func keys(matching pattern: KeyPattern) throws(KeepsakeError) -> [String] {
        let table = configuration.quotedTable
        let query = Self.rangeQuery(
            select: "key", table: table, pattern: pattern, after: nil, limit: nil)
        return try perform("list the keys", operation: .list, tableMissing: .answer([])) { connection, _ in
            let rows = try await connection.collect(query, logger: PostgresStore.queryLogger)
            return try rows.map { row in try row.decode(String.self) }
        }
    }

    /// A page of the records `pattern` matches after `key`: one range query on the key index,
    /// `LIMIT limit`. A sealed value that does not open is that record's error.
    ///
    /// - Throws: `KeepsakeError` naming the store when the server cannot answer.
    public func records(
        matching pattern: KeyPattern, after key: String?, limit: Int
    ) throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        guard limit > 0 else { return [] }
        let query = Self.rangeQuery(
            select: "key, record", table: configuration.quotedTable, pattern: pattern, after: key, limit: limit)
        let rows: [StoredRow] = try perform("read the records", operation: .readAll, tableMissing: .answer([])) {
            connection, _ in
            let rows = try await connection.collect(query, logger: PostgresStore.queryLogger)
            var result: [StoredRow] = []
            result.reserveCapacity(rows.count)
            for row in rows {
                let (key, record) = try row.decode((String, ByteBuffer).self)
                result.append(StoredRow(key: key, record: Data(record.readableBytesView)))
            }
            return result
        }
        return rows.map { row in
            do throws(KeepsakeError) {
                return (row.key, .success(try open(row.record, forKey: row.key)))
            } catch {
                return (row.key, .failure(error))
            }
        }
    }

    /// Every record, a page of 2,048 rows at a time in key order (so a table of a
    /// hundred thousand records is never held at once), with the number of rows counted first.
    /// A table without the key index (created by a release before key patterns) is read in one
    /// query instead, and a warning says how to create the index.
    ///
    /// - Throws: `KeepsakeError` naming the store when the server cannot answer — also after
    ///   `body` has been handed the pages before.
    public func forEachRecord(
        _ body: (_ count: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError) {
        guard try keyIndexExists() != false else {
            logger.warning(
                "the table has no key index: it is read in one query; create the index for paged reads",
                metadata: ["table": "\(configuration.table)", "statement": "\(keyIndexStatement)"])
            let records = try allRecords()
            for record in records { body(records.count, record.key, record.result) }
            return
        }
        let table = configuration.quotedTable
        let count: Int = try perform("count the records", operation: .readAll, tableMissing: .answer(0)) {
            connection, _ in
            let rows = try await connection.collect(
                "SELECT count(*) FROM \(unescaped: table)", logger: PostgresStore.queryLogger)
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
        var after: String?
        while true {
            let page = try records(matching: KeyPattern(prefix: ""), after: after, limit: Self.walkPage)
            // Rows added since the count are handed over too; the count is what progress shows.
            for entry in page { body(count, entry.key, entry.result) }
            guard page.count == Self.walkPage, let last = page.last else { return }
            after = last.key
        }
    }

    /// `SELECT columns FROM table` where the key is in `pattern`'s range and after `after`, in
    /// key order (bytes: `COLLATE "C"`, which the key index is built with), at most `limit` rows.
    static func rangeQuery(
        select columns: String, table: String, pattern: KeyPattern, after: String?, limit: Int?
    ) -> PostgresQuery {
        // The empty key sorts first and no key is empty, so `> ''` is every key.
        var lower = after
        if let key = after, key.utf8.lexicographicallyPrecedes(pattern.prefix.utf8) { lower = nil }
        let rows = Int64(limit ?? Int(Int32.max))
        switch (pattern.upperBound, lower) {
        case let (upper?, after?):
            return """
                SELECT \(unescaped: columns) FROM \(unescaped: table) WHERE key COLLATE "C" > \(after) \
                AND key COLLATE "C" < \(upper) ORDER BY key COLLATE "C" LIMIT \(rows)
                """
        case let (upper?, nil):
            return """
                SELECT \(unescaped: columns) FROM \(unescaped: table) WHERE key COLLATE "C" >= \(pattern.prefix) \
                AND key COLLATE "C" < \(upper) ORDER BY key COLLATE "C" LIMIT \(rows)
                """
        case let (nil, after?):
            return """
                SELECT \(unescaped: columns) FROM \(unescaped: table) WHERE key COLLATE "C" > \(after) \
                ORDER BY key COLLATE "C" LIMIT \(rows)
                """
        case (nil, nil):
            return """
                SELECT \(unescaped: columns) FROM \(unescaped: table) WHERE key COLLATE "C" >= \(pattern.prefix) \
                ORDER BY key COLLATE "C" LIMIT \(rows)
                """
        }
    }

    /// Whether the table has the key index; `nil` when the table does not exist.
    func keyIndexExists() throws(KeepsakeError) -> Bool? {
        let table = configuration.quotedTable
        let index = Self.qualifiedKeyIndex(table: configuration.table)
        return try perform("look for the key index", operation: .list) { connection, _ in
            let rows = try await connection.collect(
                "SELECT to_regclass(\(table)) IS NOT NULL, to_regclass(\(index)) IS NOT NULL",
                logger: PostgresStore.queryLogger)
            guard let (tableExists, indexExists) = try rows.first?.decode((Bool, Bool).self) else { return nil }
            return tableExists ? indexExists : nil
        }
    }

    /// The statement that creates the key index on a table made by an older release, without
    /// blocking its writers.
    var keyIndexStatement: String {
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(Self.keyIndex(table: configuration.table)) ON "
            + "\(configuration.quotedTable) ((key COLLATE \"C\"))"
    }

    /// The key index's name, quoted, in the table's schema when the table names one.
    static func qualifiedKeyIndex(table: String) -> String {
        let parts = table.split(separator: ".")
        let name = "\"\(keyIndex(table: table))\""
        return parts.count == 2 ? "\"\(parts[0])\".\(name)" : name
    }

    /// The name of the index on `key COLLATE "C"`: `keepsake_keys_` and a hash of the table name
    /// as configured (PostgreSQL puts an index in its table's schema).
    static func keyIndex(table: String) -> String {
        "keepsake_keys_" + NotifyTrigger.hex(NotifyTrigger.fnv1a(table))
    }
}
#endif
