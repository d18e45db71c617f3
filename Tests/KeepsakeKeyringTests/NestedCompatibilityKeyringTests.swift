import Foundation
import KeepsakeKeyring
import Testing
import TwoReleasesSupport

extension KeyringTests {
    @Suite("Forward compatibility at every depth")
    struct NestedCompatibilityOnKeyring {
        @Test("an older release's saves keep a newer record's nested keys, or are refused with nothing written")
        func scenario() throws {
            #expect(NestedCompatibility.mismatches(on: try PrivateKeyring.freshStore("nested")) == [])
        }
    }
}
