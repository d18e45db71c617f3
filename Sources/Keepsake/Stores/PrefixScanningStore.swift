import Foundation

/// A store that finds the keys a ``KeyPattern`` matches itself — an index range on the key, a
/// sorted document — and reads them a page at a time, so that walking a model's hundred
/// thousand records (``Vault/records(of:pageSize:)``) neither lists the whole store nor holds
/// every record at once.
///
/// A store that is not one is still walked: ``RecordStore/keys(matching:)`` filters its
/// ``RecordStore/keys()``, once per walk, and each record is read by its key.
public protocol PrefixScanningStore: RecordStore {
    /// The keys `pattern` matches, sorted by UTF-8 bytes.
    ///
    /// - Throws: ``KeepsakeError`` when the store cannot be listed.
    func keys(matching pattern: KeyPattern) throws(KeepsakeError) -> [String]

    /// At most `limit` records whose keys `pattern` matches and sort after `key` (from the
    /// first, when `nil`), sorted by key: one page of a walk. A record that cannot be read is
    /// its error, as in ``RecordStore/allRecords()``; fewer than `limit` records means the walk
    /// is over.
    ///
    /// - Throws: ``KeepsakeError`` when the store itself cannot be read.
    func records(
        matching pattern: KeyPattern, after key: String?, limit: Int
    ) throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)]
}

extension RecordStore {
    /// The keys `pattern` matches, sorted by UTF-8 bytes: the store's own scan when it is a
    /// ``PrefixScanningStore``, else ``keys()`` filtered.
    ///
    /// - Throws: ``KeepsakeError`` when the store cannot be listed.
    public func keys(matching pattern: KeyPattern) throws(KeepsakeError) -> [String] {
        if let scanning = self as? any PrefixScanningStore { return try scanning.keys(matching: pattern) }
        return try keys().filter(pattern.matches)
    }
}

extension [String] {
    /// The index of the first key after `key` in these sorted keys (by UTF-8 bytes); 0 for `nil`.
    package func firstIndex(after key: String?) -> Int {
        guard let key else { return 0 }
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle].utf8.lexicographicallyPrecedes(key.utf8) || self[middle].isExactly(key) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }
}
