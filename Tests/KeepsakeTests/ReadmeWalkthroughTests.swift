// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeTesting
import Testing

// README.md's "A model of your own, in two versions" and the Define your own model article, verbatim:
// ReadmeTests and DocumentationExampleTests check that every Swift block of the README and of the
// DocC catalogs appears in a compiled file, and the tests below run it.

// SettingsV0.swift — released in 1.0. Frozen: never edit a released version.
public struct SettingsV0: ModelVersion {
    public static let version = 0
    public static let dateEncoding = DateEncoding.secondsSince1970  // how 1.0's JSONEncoder wrote dates
    public var id: UUID
    public var darkMode: Bool
    public var lastOpened: Date
}

// SettingsV1.swift — released in 1.1.
public enum Theme: String, Codable, Sendable, CaseIterable { case light, dark, system }

public struct SettingsV1: ModelVersion, Equatable {
    public typealias Predecessor = SettingsV0
    public static let version = 1

    public struct Window: Codable, Sendable, Equatable {
        public var width: Int
        public var height: Int
    }

    public var id: UUID
    public var theme: Theme
    public var window: Window?
    public var lastOpened: Date?

    public init(id: UUID, theme: Theme, window: Window? = nil, lastOpened: Date? = nil) {
        self.id = id
        self.theme = theme
        self.window = window
        self.lastOpened = lastOpened
    }

    public init(migrating previous: SettingsV0, context: MigrationContext) {
        self.init(id: previous.id, theme: previous.darkMode ? .dark : .light, lastOpened: previous.lastOpened)
    }
}

// Settings.swift — the one line that changes with each release is `Latest`.
public enum Settings {
    public typealias Latest = SettingsV1
    public static let chain = ModelChain<Latest>(name: "Settings", defaultKeys: ["settings"])
}

extension RecordKeys {
    public static let settings = RecordKey(chain: Settings.chain, default: SettingsV1(id: UUID(), theme: .system))
}

@Test func settingsChainIsValid() throws {
    try ChainValidation.validate(Settings.chain)
}

/// The walkthrough chain's committed snapshot folder.
private let schemas = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures").appendingPathComponent("Schemas")

// The Define your own model article's next release, which only adds an optional key: valid
// because it says it was never stored bare.
// SettingsV2.swift — released in 1.2, with Keepsake: never stored bare.
public struct SettingsV2: ModelVersion {
    public typealias Predecessor = SettingsV1
    public static let version = 2
    public static let storedWithoutVersion = false
    public var id: UUID
    public var theme: Theme
    public var window: SettingsV1.Window?
    public var lastOpened: Date?
    public var fontSize: Int?   // the only change: an optional key

    public init(migrating previous: SettingsV1, context: MigrationContext) {
        id = previous.id
        theme = previous.theme
        window = previous.window
        lastOpened = previous.lastOpened
    }
}

@Test func nextReleaseWithOnlyAnOptionalKeyIsValid() throws {
    let chain = ModelChain<SettingsV2>(name: "Settings", defaultKeys: ["settings"])
    try ChainValidation.validate(chain)
    let stored = try chain.read(Data(#"{"id":"8D3E2F8A-6F0B-4C1E-9F5A-2B7C1D0E4F31","theme":"dark"}"#.utf8), context: .fixed(now: Date()))
    #expect(stored.storedVersion == 1 && stored.value.theme == .dark && stored.value.fontSize == nil)
}

@Test func releasedVersionsAreFrozen() throws {
    try SchemaSnapshot.check(Settings.chain, file: schemas.appendingPathComponent("Settings.json"))
}

// In the serialized README suite: these tests set XDG_CONFIG_HOME, which the suite's other tests read.
extension ReadmeTests {
    func app() throws {
        let vault = Vault(store: try DefaultsStore(suite: "main", app: "com.example.notes"))
        var settings = try vault.value(.settings)   // a 1.0 record comes back as SettingsV1
        settings.theme = .dark
        try vault.save(settings, for: .settings)     // {"data":{…},"schema":"Settings","version":1}
    }

    @Test("a 1.0 record is read as SettingsV1, its id kept, and the app's change saved as version 1")
    func walkthroughRuns() throws {
        let config = try temporaryDirectory()
        setenv("XDG_CONFIG_HOME", config, 1)
        defer { unsetenv("XDG_CONFIG_HOME") }
        let suite = config + "/com.example.notes/main.json"
        try FileManager.default.createDirectory(atPath: config + "/com.example.notes", withIntermediateDirectories: true)
        try bytes(#"{"settings":{"id":"6F1C2B9A-7E55-4D7B-9B0E-2F4C1A3D5E6F","darkMode":false,"lastOpened":1714557600}}"#)
            .write(to: URL(fileURLWithPath: suite))
        try app()
        // 1714557600 seconds since 1970 is 2024-05-01T10:00:00Z, exactly (not 2055, as seconds since 2001).
        #expect(try DefaultsStore(path: suite).data(forKey: "settings") == bytes(
            #"{"data":{"id":"6F1C2B9A-7E55-4D7B-9B0E-2F4C1A3D5E6F","lastOpened":"2024-05-01T10:00:00.000Z","theme":"dark"},"schema":"Settings","version":1}"#))
        let saved = try Vault(store: DefaultsStore(path: suite)).value(.settings)
        #expect(saved.lastOpened == Date(timeIntervalSince1970: 1_714_557_600))
    }

    @Test("with nothing stored, the key's default is used and the app's change saved")
    func walkthroughFromNothing() throws {
        let config = try temporaryDirectory()
        setenv("XDG_CONFIG_HOME", config, 1)
        defer { unsetenv("XDG_CONFIG_HOME") }
        try app()
        let saved = try Vault(store: DefaultsStore(path: config + "/com.example.notes/main.json")).load(.settings)
        #expect(saved?.value.theme == .dark)
        #expect(saved?.wasMigrated == false)
    }

    @Test("update changes the stored value in place")
    func walkthroughUpdate() throws {
        let vault = Vault(store: InMemoryStore())
        try vault.save(SettingsV1(id: UUID(), theme: .light), for: .settings)
        try vault.update(.settings) { $0.theme = .dark }
        #expect(try vault.value(.settings).theme == .dark)
    }
}
