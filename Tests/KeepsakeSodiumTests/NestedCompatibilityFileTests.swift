import Foundation
import Keepsake
import KeepsakeSodium
import Testing
import TwoReleasesSupport

@Suite("Forward compatibility at every depth on the encrypted file store")
struct NestedCompatibilityFileTests {
    @Test("an older release's saves keep a newer record's nested keys, or are refused with nothing written")
    func scenario() throws {
        try withTemporaryDirectory { directory in
            let store = try makeKeyFileStore(in: directory)
            #expect(NestedCompatibility.mismatches(on: store) == [])
        }
    }
}
