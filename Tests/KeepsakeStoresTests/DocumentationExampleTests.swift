// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeSodium
import KeepsakeStores
import Testing

/// The KeepsakeStores catalog's example, verbatim (the Keepsake tests check that it still is), run.
@Suite("KeepsakeStores documentation example")
struct StoresDocumentationExampleTests {
    func example(configuredStore: String, keyPath: String) throws -> any RecordStore {
        let uri = try StoreURI(parsing: configuredStore)   // "file:/var/lib/notes/records", say
        let store = try uri.open(options: StoreOpenOptions(masterKey: .keyFile(path: keyPath)))
        return store
    }

    @Test("the example opens an existing encrypted store named by its URI, with its key file")
    func runs() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/keepsake-stores-docs-" + UUID().uuidString.prefix(8)
        let created = try SodiumFileStore.create(directory: directory + "/records", key: .keyFile(path: directory + "/records.key"))
        try created.setData(Data(#""dark""#.utf8), forKey: "theme")
        let store = try example(configuredStore: "file:" + directory + "/records", keyPath: directory + "/records.key")
        #expect(store.uri == created.uri)
        #expect(try store.data(forKey: "theme") == Data(#""dark""#.utf8))
    }
}
