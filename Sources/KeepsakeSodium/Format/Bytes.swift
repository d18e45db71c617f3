import Foundation

/// Little-endian integers and fixed-size fields, as the file format lays them out.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }
    mutating func append(_ value: UInt8) { bytes.append(value) }
    mutating func append(_ value: UInt16) { appendLittleEndian(value) }
    mutating func append(_ value: UInt32) { appendLittleEndian(value) }
    mutating func append(_ value: UInt64) { appendLittleEndian(value) }

    private mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Reads fields in order from a byte buffer; each read returns `nil` past the end.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func take(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= remaining else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func integer<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        guard let raw = take(MemoryLayout<T>.size) else { return nil }
        return raw.reversed().reduce(T(0)) { ($0 << 8) | T($1) }
    }
}

enum Hex {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lowercase or uppercase hex to bytes; `nil` when not hex of even length.
    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}
