import Foundation
import KeepsakeKeyring
import Testing
import TwoReleasesSupport

extension KeyringTests {
    /// TwoReleaseTests' scenario on the keyring, here so that it never runs while another test
    /// locks the collection.
    @Suite("Two releases against one keyring item")
    struct TwoReleaseKeyringTests {
        @Test("the older release reads and saves; the newer keeps its keys and sees the change")
        func twoReleases() throws {
            let service = PrivateKeyring.uniqueService("two-releases")
            let observed = try TwoReleaseScenario.play(uri: "keyring:" + service)
            #expect(observed.mismatches.isEmpty, "\(observed.mismatches)")
            #expect(
                try KeyringStore.open(service: service).data(forKey: "person")
                    == Data(TwoReleaseScenario.finalEnvelope.utf8))
        }
    }
}
