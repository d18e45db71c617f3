import Foundation

/// KeePassXC's placeholders: `{TITLE}`, `{URL}`, `{S:attribute}`, `{PASSWORD}`… It expands them
/// in every secret it returns over the Secret Service, so a record holding one reads back
/// different — and `{PASSWORD}`, which expands to the secret itself, recursively: enough copies
/// of it keep KeePassXC busy past any deadline. Writes to KeePassXC are checked for them before
/// anything is written.
enum KeePassXCPlaceholders {
    /// Placeholders that are a whole name (compared without case).
    static let names: Set<String> = ["TITLE", "USERNAME", "URL", "PASSWORD", "NOTES", "TOTP", "UUID", "DB_DIR"]
    /// Placeholders that take an argument after their prefix.
    static let prefixes = ["S:", "REF:", "URL:", "T-REPLACE-RX:", "T-CONV:", "DT_"]
    /// The longest placeholder looked at, braces excluded; longer brace pairs are not ones.
    static let longest = 256

    /// The first placeholder in `data` and its byte offset, or `nil`. Linear: each `{` looks at
    /// most ``longest`` bytes ahead.
    static func first(in data: Data) -> (token: String, offset: Int)? {
        let bytes = [UInt8](data)
        var index = 0
        while index < bytes.count {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: "{") else { continue }
            let end = min(bytes.count, index + 2 + longest)
            guard let close = bytes[(index + 1)..<end].firstIndex(of: UInt8(ascii: "}")), close > index + 1 else {
                continue
            }
            let inner = String(decoding: bytes[(index + 1)..<close], as: UTF8.self).uppercased()
            if names.contains(inner) || prefixes.contains(where: { inner.hasPrefix($0) }) {
                return (String(decoding: bytes[index...close], as: UTF8.self), index)
            }
        }
        return nil
    }
}
