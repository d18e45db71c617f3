import Foundation
import Keepsake
import KeepsakeSodium
import Testing
import TwoReleasesSupport

// Two builds of one app — Person at V3, and Person at V4, which adds `phone` and declares V3
// readers compatible — run in turn against one store, as a user who reinstalls an older release
// (or runs two apps of one vendor at different releases) would. The keyring's run is in
// KeepsakeKeyringTests, serialized with the tests that lock the keyring.

private func temporaryDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.path + "/keepsake-two-releases-" + UUID().uuidString.prefix(8)
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite("Two releases against one store")
struct TwoReleaseTests {
    @Test("on a defaults suite")
    func defaultsSuite() throws {
        let directory = try temporaryDirectory()
        let observed = try TwoReleaseScenario.play(uri: "defaults:" + directory + "/suite.json")
        #expect(observed.mismatches.isEmpty, "\(observed.mismatches)")
        let stored = try String(contentsOfFile: directory + "/suite.json", encoding: .utf8)
        #expect(stored.contains(TwoReleaseScenario.finalEnvelope))
    }

    @Test("on an encrypted file store")
    func encryptedStore() throws {
        let directory = try temporaryDirectory()
        let keyFile = directory + "/store.key"
        let store = try SodiumFileStore.create(directory: directory + "/store", key: .keyFile(path: keyFile))
        let observed = try TwoReleaseScenario.play(
            uri: "file:" + directory + "/store", options: ["--key-file", keyFile])
        #expect(observed.mismatches.isEmpty, "\(observed.mismatches)")
        #expect(try store.data(forKey: "person") == Data(TwoReleaseScenario.finalEnvelope.utf8))
    }
}
