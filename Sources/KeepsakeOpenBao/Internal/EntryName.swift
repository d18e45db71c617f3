#if OpenBao
/// A record key as the name of one KV entry: one path segment, whatever the key holds.
///
/// KV paths are split at `/`, and the server treats `.` and `..` as path steps, so a key cannot
/// be used as it is. Each UTF-8 byte of the key is kept when it is a letter, a digit, `-` or `_`,
/// or a `.` after the first byte; every other byte is `=` and two upper-case hex digits. So
/// `tenant-42` is `tenant-42`, `a/b` is `a=2Fb`, `..` is `=2E.` and `ü` is `=C3=BC`: a name has
/// no `/`, is never `.` or `..`, and decodes to exactly one key. A name in the mount that does
/// not decode, or is not written the one way the key would be, is not a record of this store
/// (an entry someone else put there) and is left out.
enum EntryName {
    static func encode(_ key: String) -> String {
        var name: [UInt8] = []
        name.reserveCapacity(key.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for (index, byte) in key.utf8.enumerated() {
            if isKept(byte) || (byte == UInt8(ascii: ".") && index > 0) {
                name.append(byte)
            } else {
                name.append(UInt8(ascii: "="))
                name.append(hex[Int(byte >> 4)])
                name.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// The key `name` encodes, or `nil` when it is not a name ``encode(_:)`` writes.
    static func decode(_ name: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count)
        var iterator = name.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "=") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        guard let key = String(validating: bytes, as: UTF8.self), !key.isEmpty, encode(key) == name else { return nil }
        return key
    }

    private static func isKept(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        default: return nil  // lower-case hex is not the one way a name is written
        }
    }
}
#endif
