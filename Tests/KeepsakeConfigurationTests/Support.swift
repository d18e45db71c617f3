import Foundation
import Keepsake
import KeepsakeMemory
import KeepsakeTesting
import Synchronization

/// Window settings as the first release stored them: `{"width", "height", "theme"}`, no version.
struct SettingsV0: ModelVersion, Equatable {
    static let version = 0
    let width: Int
    let height: Int
    let theme: String
}

/// Settings with the window's size nested, and the fields each configuration type reads.
struct SettingsV1: ModelVersion, Equatable {
    typealias Predecessor = SettingsV0
    static let version = 1

    struct Window: Codable, Equatable {
        let width: Int
        let height: Int
        let scale: Double
    }

    let window: Window
    let theme: String
    let recentFiles: [String]
    let pinned: [Int]
    let icon: Data

    init(window: Window, theme: String, recentFiles: [String] = [], pinned: [Int] = [], icon: Data = Data()) {
        self.window = window
        self.theme = theme
        self.recentFiles = recentFiles
        self.pinned = pinned
        self.icon = icon
    }

    init(migrating previous: SettingsV0, context: MigrationContext) {
        self.init(window: Window(width: previous.width, height: previous.height, scale: 1), theme: previous.theme)
    }
}

/// An API client's endpoint and credentials.
struct APIClientV0: ModelVersion, Equatable {
    static let version = 0
    let endpoint: String
    let token: String
    let retries: Int
}

enum TestChains {
    static let settings = ModelChain<SettingsV1>(name: "Settings", defaultKeys: ["settings"])
    static let apiClient = ModelChain<APIClientV0>(name: "APIClient", defaultKeys: ["api"])
}

extension RecordKeys {
    static let settings = RecordKey("settings", chain: TestChains.settings)
    static let apiClient = RecordKey("api", chain: TestChains.apiClient)
}

/// A fresh temporary directory for one test; the test removes it (`defer { directory.remove() }`),
/// which also keeps it until the test ends.
struct TemporaryDirectory: Sendable {
    let path: String

    init(function: String = #function) throws {
        path =
            FileManager.default.temporaryDirectory.path + "/keepsake-configuration-tests/"
            + function.filter { $0.isLetter } + "-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() {
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            // A leftover temporary directory is harmless; the test's own checks decide.
        }
    }
}

/// The built `migrate` binary, beside the test bundle (or `$MIGRATE_BINARY`).
let migrate = BuiltExecutable(named: "migrate", overriddenBy: "MIGRATE_BINARY")

/// A store that answers every read with `error`: a locked keyring, a store that cannot be read.
struct FailingStore: RecordStore {
    let error: KeepsakeError
    var uri: String { "memory:failing" }
    var capabilities: StoreCapabilities { [] }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { throw error }
    func keys() throws(KeepsakeError) -> [String] { throw error }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { throw error }
}

/// A store over `base` that counts reads and runs `afterRead` after each one, to change the
/// store between two reads of a snapshot.
final class InterleavingStore: RecordStore {
    let base: InMemoryStore
    let afterRead: @Sendable (_ key: String, _ read: Int) -> Void
    private let count = Mutex(0)

    init(base: InMemoryStore, afterRead: @escaping @Sendable (_ key: String, _ read: Int) -> Void) {
        self.base = base
        self.afterRead = afterRead
    }

    /// How many reads of one key were made.
    var reads: Int { count.withLock { $0 } }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? {
        let data = try base.data(forKey: key)
        afterRead(
            key,
            count.withLock {
                $0 += 1
                return $0
            })
        return data
    }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] { try base.commit(writes) }
}
