import Foundation
import Keepsake
import KeepsakeSodium
import KeepsakeStores

/// The app both test releases are built from: the same code, given the Person chain as each
/// release has it. TwoReleaseTests runs the two builds in turn against one store.
///
///     person-release-N save ALIAS EMAIL [PHONE] --store URI [--key-file PATH]
///     person-release-N rename ALIAS --store URI [--key-file PATH]
///     person-release-N read --store URI [--key-file PATH]
///
/// `read` prints one JSON object: the stored and latest versions, whether the record is newer
/// than this release, and the fields this release knows.
public struct ReleaseApp<Latest: ModelVersion> {
    public let chain: ModelChain<Latest>
    /// A new record from the `save` arguments.
    public let make: ([String]) -> Latest?
    /// The record with another alias.
    public let renamed: (Latest, String) -> Latest
    /// The fields this release knows, for `read`.
    public let fields: (Latest) -> [String: String]

    public init(
        chain: ModelChain<Latest>, make: @escaping ([String]) -> Latest?,
        renamed: @escaping (Latest, String) -> Latest, fields: @escaping (Latest) -> [String: String]
    ) {
        self.chain = chain
        self.make = make
        self.renamed = renamed
        self.fields = fields
    }

    public func main(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        var words: [String] = []
        var storeText: String?
        var keyFile: String?
        var iterator = arguments.makeIterator()
        while let word = iterator.next() {
            switch word {
            case "--store": storeText = iterator.next()
            case "--key-file": keyFile = iterator.next()
            default: words.append(word)
            }
        }
        guard let command = words.first, let storeText else { fail("usage: save|rename|read … --store URI", 64) }
        do {
            let store = try StoreURI(parsing: storeText)
                .open(options: StoreOpenOptions(masterKey: keyFile.map { .keyFile(path: $0) }))
            let vault = Vault(store: store, context: .live(deviceIdentity: "two-releases"))
            let arguments = Array(words.dropFirst())
            switch command {
            case "save":
                guard let value = make(arguments) else { fail("save takes ALIAS EMAIL [PHONE]", 64) }
                try vault.save(value, in: chain)
            case "rename":
                guard let alias = arguments.first else { fail("rename takes ALIAS", 64) }
                guard let loaded = try vault.load(chain) else { fail("no record", 66) }
                try vault.save(renamed(loaded.value, alias), in: chain)
            case "read":
                guard let loaded = try vault.load(chain) else { fail("no record", 66) }
                var object: [String: Any] = fields(loaded.value)
                object["storedVersion"] = loaded.storedVersion
                object["latestVersion"] = loaded.record.latestVersion
                object["newer"] = loaded.record.isNewer
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            default:
                fail("unknown command \(command)", 64)
            }
            exit(0)
        } catch let error as KeepsakeError {
            fail("error: \(error.code): \(error)", error.code == .newerVersion ? 67 : 1)
        } catch {
            fail("error: \(error)", 1)
        }
    }

    private func fail(_ message: String, _ status: Int32) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(status)
    }
}
