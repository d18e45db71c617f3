import Foundation
import Keepsake
import KeepsakeMemory
import Testing

// An older release (NoteV0) saving over a newer release's record (NoteV1 added keys at the top
// level and inside `style`, and declared V0 readers compatible), written by another writer: its
// escapes, number forms and spacing are not Keepsake's.

private struct NoteStyle: Codable, Equatable {
    var font: String
}

private struct NoteV0: ModelVersion, Equatable {
    static let version = 0
    var text: String
    var style: NoteStyle
}

private let olderRelease = ModelChain<NoteV0>(name: "Note", defaultKeys: ["note"])

/// The newer record as another writer stored it.
private let newerRecord = #"""
    {"schema":"Note","version":1,"oldestReader":0,"data":{"text":"hi","caf\u00e9":"a\/b \u0041 \"q\"","extra":{ "n" : 1.50, "list" : [1e2, "\u00e9"] },"style":{"font":"serif","size":12.0}}}
    """#

/// What the older release's save writes over it: its own values as Keepsake writes them, the
/// newer release's as they were stored.
private let merged = #"""
    {"data":{"caf\u00e9":"a\/b \u0041 \"q\"","extra":{ "n" : 1.50, "list" : [1e2, "\u00e9"] },"style":{"font":"mono","size":12.0},"text":"changed"},"oldestReader":0,"schema":"Note","version":1}
    """#

@Suite("Merged saves keep the newer record's bytes")
struct MergedSaveBytesTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0))
    fileprivate let value = NoteV0(text: "changed", style: NoteStyle(font: "mono"))

    @Test("the newer release's unknown keys and values, at every depth, are written back byte for byte")
    func unknownValuesKeptExactly() throws {
        let store = InMemoryStore(contents: ["note": Data(newerRecord.utf8)])
        try Vault(store: store, context: context).save(value, in: olderRelease)
        #expect(String(decoding: try #require(try store.data(forKey: "note")), as: UTF8.self) == merged)
        guard
            case let .newerReadable(record) = olderRelease.outcome(of: try store.data(forKey: "note"), context: context)
        else {
            Issue.record("not read back as the newer record")
            return
        }
        #expect(record.value == value)
    }

    @Test("a record stored as a JSON string stays one, holding the merged record")
    func stringWrappedStaysWrapped() throws {
        var wrapped = Data()
        wrapped.append(contentsOf: try JSONEncoder().encode(newerRecord))
        let store = InMemoryStore(contents: ["note": wrapped])
        try Vault(store: store, context: context).save(value, in: olderRelease)
        let saved = try #require(try store.data(forKey: "note"))
        #expect(saved.first == UInt8(ascii: "\""))
        #expect(try JSONDecoder().decode(String.self, from: saved) == merged)
    }
}
