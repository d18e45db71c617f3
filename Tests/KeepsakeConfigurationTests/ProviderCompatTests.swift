import Configuration
import ConfigurationTesting
import Foundation
import Keepsake
import KeepsakeConfiguration
import KeepsakeDefaults
import KeepsakeMemory
import Testing

/// A record holding the values swift-configuration's conformance kit expects, laid out so that
/// its keys (`string`, `other.int`, `inty.array`, …) are fields of the record served at the top
/// level. Bytes appear both ways a model stores them: `Data` (base64) and `[UInt8]` (integers).
struct CompatV0: ModelVersion, Equatable {
    static let version = 0

    struct Arrays<Element: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
        let array: [Element]
    }

    struct Other: Codable, Sendable, Equatable {
        let string: String
        let int: Int
        let double: Double
        let bool: Bool
        let bytes: [UInt8]
        let stringy: Arrays<String>
        let inty: Arrays<Int>
        let doubly: Arrays<Double>
        let booly: Arrays<Bool>
        let byteChunky: Arrays<[UInt8]>
    }

    let string: String
    let int: Int
    let double: Double
    let bool: Bool
    let bytes: Data
    let stringy: Arrays<String>
    let inty: Arrays<Int>
    let doubly: Arrays<Double>
    let booly: Arrays<Bool>
    let byteChunky: Arrays<Data>
    let other: Other

    static let magic: [UInt8] = Array("magic".utf8)
    static let magic2: [UInt8] = Array("magic2".utf8)

    /// The values `ProviderCompatTest` expects.
    static let expected = CompatV0(
        string: "Hello", int: 42, double: 3.14, bool: true, bytes: Data(magic),
        stringy: .init(array: ["Hello", "World"]), inty: .init(array: [42, 24]), doubly: .init(array: [3.14, 2.72]),
        booly: .init(array: [true, false]), byteChunky: .init(array: [Data(magic), Data(magic2)]),
        other: Other(
            string: "Other Hello", int: 24, double: 2.72, bool: false, bytes: magic2,
            stringy: .init(array: ["Hello", "Swift"]), inty: .init(array: [16, 32]), doubly: .init(array: [0.9, 1.8]),
            booly: .init(array: [false, true, true]), byteChunky: .init(array: [magic, magic2, magic])))

    static let chain = ModelChain<CompatV0>(name: "Compat", defaultKeys: ["compat"])
}

@Suite("swift-configuration's provider conformance kit")
struct ProviderCompatTests {
    @Test("KeepsakeProvider passes ProviderCompatTest on an in-memory store")
    func inMemory() async throws {
        let vault = Vault(store: InMemoryStore())
        try await vault.save(CompatV0.expected, in: CompatV0.chain)
        let provider = KeepsakeProvider(vault: vault, records: [.init(CompatV0.chain, at: ConfigKey([]))])
        try await ProviderCompatTest(provider: provider).runTest()
    }

    @Test("KeepsakeProvider passes ProviderCompatTest on a defaults suite, whose watches are inotify's")
    func defaultsSuite() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let vault = Vault(store: DefaultsStore(path: directory.path + "/suite.json"))
        try await vault.save(CompatV0.expected, in: CompatV0.chain)
        let provider = KeepsakeProvider(vault: vault, records: [.init(CompatV0.chain, at: ConfigKey([]))])
        try await ProviderCompatTest(provider: provider).runTest()
    }
}
