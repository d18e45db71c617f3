import FileKit
import Foundation
import Glibc
import Testing

/// `Syscall.readToEnd`: every byte of a file, into `Data` or `[UInt8]`, whatever the size hint
/// says — right, too small (the buffer doubles, here from a 4 KiB start), too large, or zero.
@Suite("FileKit readToEnd: the whole file, whatever the size hint")
struct ReadToEndTests {
    /// A file of `count` bytes that differ from their neighbours; its path and bytes.
    func file(_ count: Int) throws -> (path: String, bytes: [UInt8]) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keepsake-read-\(UUID().uuidString)")
            .path
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    func read<Bytes: ReadableBuffer>(_ path: String, hint: Int, as type: Bytes.Type) throws -> Bytes {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        return try Syscall.readToEnd(fd, size: hint, as: type, limit: 4096)
    }

    @Test(
        "every byte, into Data and [UInt8], with the hint right, short, long or zero",
        arguments: [0, 1, 4096, 4097, 300_001])
    func wholeFile(size: Int) throws {
        let (path, bytes) = try file(size)
        defer { unlink(path) }
        for hint in [size, size / 3, size * 2 + 10, 0] {
            #expect(Array(try read(path, hint: hint, as: Data.self)) == bytes, "Data, hint \(hint)")
            #expect(try read(path, hint: hint, as: [UInt8].self) == bytes, "[UInt8], hint \(hint)")
        }
    }
}
