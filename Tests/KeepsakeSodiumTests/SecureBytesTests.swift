import Foundation
import Testing

@testable import KeepsakeSodium

@Suite("SecureBytes")
struct SecureBytesTests {
    @Test("Bytes read back exactly through withUnsafeBytes")
    func readBack() {
        let bytes = SecureBytes(copying: [1, 2, 3, 250])
        #expect(bytes.count == 4)
        #expect(bytes.withUnsafeBytes { Array($0) } == [1, 2, 3, 250])
        let built = SecureBytes(count: 3) { $0.copyBytes(from: [9, 8, 7]) }
        #expect(built.withUnsafeBytes { Array($0) } == [9, 8, 7])
        #expect(SecureBytes(copying: []).count == 0)
    }

    @Test("Equality compares contents and length")
    func equality() {
        #expect(SecureBytes(copying: [1, 2, 3]) == SecureBytes(copying: [1, 2, 3]))
        #expect(SecureBytes(copying: [1, 2, 3]) != SecureBytes(copying: [1, 2, 4]))
        #expect(SecureBytes(copying: [1, 2, 3]) != SecureBytes(copying: [1, 2]))
        #expect(SecureBytes(copying: []) == SecureBytes(copying: []))
    }

    @Test("Description, debug description and dump show the length only")
    func redacted() {
        let secret = SecureBytes(copying: Array("hunter2".utf8))
        #expect(secret.description == "SecureBytes(7 bytes, redacted)")
        #expect(secret.debugDescription == "SecureBytes(7 bytes, redacted)")
        #expect("\(secret)" == "SecureBytes(7 bytes, redacted)")
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("hunter2"))
        #expect(!dumped.contains("104"))  // 'h'
        #expect(dumped.contains("7"))
    }

    @Test("Random bytes have the asked length and differ between calls")
    func random() {
        let a = SecureBytes.random(count: 32)
        let b = SecureBytes.random(count: 32)
        #expect(a.count == 32)
        #expect(a != b)
    }

    @Test("An initializer that throws propagates its error")
    func throwingInitializer() {
        struct Boom: Error {}
        #expect(throws: Boom.self) { _ = try SecureBytes(count: 8) { _ throws(Boom) in throw Boom() } }
    }

    @Test("libsodium is initialised once, safely, when first used from many threads at once")
    func concurrentFirstUse() async {
        let values = await withTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<16 {
                group.addTask { SecureBytes.random(count: 16).withUnsafeBytes { Array($0) } }
            }
            return await group.reduce(into: [[UInt8]]()) { $0.append($1) }
        }
        #expect(values.count == 16)
        #expect(Set(values).count == 16)
    }
}
