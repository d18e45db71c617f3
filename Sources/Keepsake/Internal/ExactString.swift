#if canImport(Glibc)
import Glibc
#endif

/// A string compared, hashed and ordered by its UTF-8 bytes — how Keepsake compares record
/// keys and member names everywhere.
///
/// Swift's `String` `==` is canonical equivalence: `"caf\u{E9}"` (é composed) equals
/// `"cafe\u{301}"` (e and a combining accent), so a `Set<String>` or `[String: …]` merges the
/// two. Stores keep them as the two keys they are (a JSON document, a keyring or a file system
/// does), so Keepsake must too: wrap keys in `ExactString` for sets, dictionaries and sorting.
package struct ExactString: Hashable, Comparable, Sendable, CustomStringConvertible {
    package let value: String

    package init(_ value: String) { self.value = value }

    package static func == (lhs: ExactString, rhs: ExactString) -> Bool {
        lhs.value.isExactly(rhs.value)
    }

    package func hash(into hasher: inout Hasher) {
        let hashed: Void? = value.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil {
            for byte in value.utf8 { hasher.combine(byte) }
        }
        hasher.combine(0xFF as UInt8)  // never in UTF-8: ends the key
    }

    /// Byte order: what "sorted" means for keys (ASCII keys sort as `<` sorts them).
    package static func < (lhs: ExactString, rhs: ExactString) -> Bool {
        lhs.value.precedesExactly(rhs.value)
    }

    package var description: String { value }
}

extension String {
    /// Whether `self` and `other` are the same UTF-8 bytes (not merely canonically equivalent).
    package func isExactly(_ other: String) -> Bool {
        // Native strings are contiguous UTF-8: compare the two buffers at once.
        let compared = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                mine.count == theirs.count
                    && (mine.isEmpty || memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0)
            }
        }
        if let compared, let result = compared { return result }
        return utf8.elementsEqual(other.utf8)
    }

    /// Whether `self` comes before `other` in UTF-8 byte order: how keys are sorted.
    package func precedesExactly(_ other: String) -> Bool {
        // Native strings are contiguous UTF-8: one memcmp instead of a byte-by-byte walk.
        let compared = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                let common = Swift.min(mine.count, theirs.count)
                let order = common == 0 ? 0 : memcmp(mine.baseAddress!, theirs.baseAddress!, common)
                return order != 0 ? order < 0 : mine.count < theirs.count
            }
        }
        if let compared, let result = compared { return result }
        return utf8.lexicographicallyPrecedes(other.utf8)
    }
}

extension Set<String> {
    /// Whether the set holds `member` byte for byte (`contains` is canonical equivalence).
    package func containsExactly(_ member: String) -> Bool {
        // A version's few keys: comparing bytes beats hashing (String hashes by canonical form).
        if count <= 8 { return contains { $0.isExactly(member) } }
        guard let index = firstIndex(of: member) else { return false }
        return self[index].isExactly(member)
    }
}
