import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeSodium
import KeepsakeTesting
import Testing

// Two builds of one app — Person at V3, and Person at V4, which adds `phone` and declares V3
// readers compatible — run in turn against one store of each kind, as a user who reinstalls an
// older release (or runs two apps of one vendor at different releases) would.

private func run(_ name: String, _ arguments: [String]) throws -> BuiltExecutable.Result {
    try BuiltExecutable(named: name).run(arguments)
}

private func temporaryDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.path + "/keepsake-two-releases-" + UUID().uuidString.prefix(8)
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// One store, the options that open it, and the `migrate` options for it.
private struct StoreUnderTest {
    let uri: String
    let options: [String]
}

private var keyringAvailable: Bool { ProcessInfo.processInfo.environment["KEEPSAKE_TEST_KEYRING"] == "1" }

@Suite("Two releases against one store", .serialized)
struct TwoReleaseTests {
    /// The whole scenario on one store: the newer writes, the older reads and saves a change,
    /// the newer reads back its own keys and the older's change, `migrate status` says readable.
    private func scenario(_ store: StoreUnderTest) throws {
        let newer = "person-release-4", older = "person-release-3"
        let save = try run(newer, ["save", "Ada", "ada@example.com", "+1-555-0100", "--store", store.uri] + store.options)
        #expect(save.status == 0, "\(save.stderr)")

        let olderRead = try run(older, ["read", "--store", store.uri] + store.options)
        #expect(olderRead.status == 0, "\(olderRead.stderr)")
        #expect(olderRead.stdout == #"{"alias":"Ada","email":"ada@example.com","latestVersion":3,"newer":true,"storedVersion":4}"# + "\n")

        let rename = try run(older, ["rename", "Countess", "--store", store.uri] + store.options)
        #expect(rename.status == 0, "\(rename.stderr)")

        let newerRead = try run(newer, ["read", "--store", store.uri] + store.options)
        #expect(newerRead.stdout == #"{"alias":"Countess","email":"ada@example.com","latestVersion":4,"newer":false,"phone":"+1-555-0100","storedVersion":4}"# + "\n",
                "the newer release reads its own key intact and the older release's change")

        let status = try run("migrate", ["status", "--json", "--store", store.uri] + store.options)
        #expect(status.status == 0, "a record readable by this release is not an error: \(status.stderr)")
        let reports = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]]
        let person = reports?.first { $0["key"] as? String == "person" }
        #expect(person?["state"] as? String == "newerReadable")
        #expect(person?["storedVersion"] as? Int == 4)
    }

    @Test("on a defaults suite")
    func defaultsSuite() throws {
        let directory = try temporaryDirectory()
        try scenario(StoreUnderTest(uri: "defaults:" + directory + "/suite.json", options: []))
        let stored = try String(contentsOfFile: directory + "/suite.json", encoding: .utf8)
        #expect(stored.contains(#"{"data":{"alias":"Countess","email":"ada@example.com","phone":"+1-555-0100"},"oldestReader":3,"schema":"Person","version":4}"#))
    }

    @Test("on an encrypted file store")
    func encryptedStore() throws {
        let directory = try temporaryDirectory()
        let keyFile = directory + "/store.key"
        _ = try SodiumFileStore.create(directory: directory + "/store", key: .keyFile(path: keyFile))
        try scenario(StoreUnderTest(uri: "file:" + directory + "/store", options: ["--key-file", keyFile]))
    }

    @Test("on the keyring", .enabled(if: keyringAvailable, "runs inside scripts/with-private-keyring (a private D-Bus session with a throwaway gnome-keyring)"))
    func keyring() throws {
        let service = "org.keepsake.two-releases." + UUID().uuidString.prefix(8)
        defer { _ = try? KeyringStore.open(service: service).removeData(forKey: "person") }
        try scenario(StoreUnderTest(uri: "keyring:" + service, options: []))
        let bytes = try KeyringStore.open(service: service).data(forKey: "person")
        #expect(bytes.map { String(decoding: $0, as: UTF8.self) }
                == #"{"data":{"alias":"Countess","email":"ada@example.com","phone":"+1-555-0100"},"oldestReader":3,"schema":"Person","version":4}"#)
    }
}
