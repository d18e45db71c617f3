// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeKeyring
import Testing

/// What a store checks before it contacts anything: runs everywhere, keyring or not.
@Suite("KeyringStore arguments")
struct KeyringArgumentTests {
    @Test("a store is named keyring:SERVICE, survives reinstall, is encrypted and never prompts")
    func identity() throws {
        let store = try KeyringStore(service: "com.example.app", timeout: .milliseconds(1500))
        #expect(store.uri == "keyring:com.example.app")
        #expect(store.service == "com.example.app")
        #expect(store.timeout == .milliseconds(1500))
        #expect(store.capabilities == [.survivesReinstall, .encryptedAtRest])
        #expect(!store.capabilities.contains(.mayPrompt))
        #expect(KeyringStore.defaultTimeout == .seconds(5))
        #expect(KeyringStore.schemaName == "org.keepsake.Record")
    }

    @Test("an empty service name, one with NUL, or a non-positive timeout is an invalid argument",
          arguments: [("", Duration.seconds(1)), ("a\u{0}b", .seconds(1)), ("app", .zero), ("app", .seconds(-1))])
    func invalid(service: String, timeout: Duration) {
        #expect {
            _ = try KeyringStore(service: service, timeout: timeout)
        } throws: { error in
            (error as? KeepsakeError)?.code == .invalidArgument
                && (error as? KeepsakeError)?.store == "keyring:\(service)"
        }
    }

    @Test("a key with NUL is rejected before the keyring is contacted")
    func nulKey() throws {
        let store = try KeyringStore(service: "com.example.app")
        let error = try #require(throws: KeepsakeError.self) { _ = try store.data(forKey: "a\u{0}b") }
        #expect(error.code == .invalidArgument)
        #expect(error.key == "a\u{0}b")
        let writeError = try #require(throws: KeepsakeError.self) {
            _ = try store.commit([StoreWrite(key: "ok", value: Data("1".utf8)), StoreWrite(key: "", value: nil)])
        }
        #expect(writeError.code == .invalidArgument)
    }
}
