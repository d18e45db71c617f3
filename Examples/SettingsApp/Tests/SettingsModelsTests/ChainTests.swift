import Foundation
import Keepsake
import KeepsakeTesting
import SettingsModels
import Testing

@Suite("The Settings chain")
struct ChainTests {
    @Test("the chain validates: contiguous versions, knowable keys, no two versions one bare record could match")
    func validates() throws {
        try ChainValidation.validate(Settings.chain)
        #expect(ChainValidation.indistinguishableBareVersions(Settings.chain).isEmpty)
        #expect(Settings.chain.name == "Settings")
        #expect(Settings.chain.defaultKeys == ["settings"])
        #expect(Settings.chain.latestVersion == 2)
    }

    @Test("each version's stored keys, read off Decodable, are exactly its fields, the optional one optional")
    func storedKeys() {
        let summaries = Settings.chain.versionSummaries
        #expect(summaries.map(\.version) == [0, 1, 2])
        #expect(summaries.map(\.typeName) == ["SettingsV0", "SettingsV1", "SettingsV2"])
        #expect(
            summaries.map(\.storedKeys) == [
                StoredKeys(required: ["darkMode", "fontSize"]),
                StoredKeys(required: ["theme", "fontSize", "installID", "installedAt"]),
                StoredKeys(
                    required: ["theme", "textSize", "installID", "installedAt", "window"], optional: ["lastSyncedAt"])
            ])
    }

    @Test("a bare V0 record goes through both steps: dark mode becomes the dark theme, fontSize becomes textSize")
    func bareV0() throws {
        let record = try Settings.chain.read(Data(#"{"darkMode":true,"fontSize":13}"#.utf8), context: fixedContext())
        #expect(record.storedVersion == 0)
        #expect(record.form == .bare)
        #expect(record.steps == [1, 2])
        #expect(
            record.value
                == SettingsV2(
                    theme: .dark, textSize: 13, installID: installIDFromID1,
                    installedAt: fixedNow, window: SettingsV2.Window(width: 800, height: 600),
                    lastSyncedAt: nil))
    }

    @Test("light mode in V0 becomes the light theme")
    func lightMode() throws {
        let record = try Settings.chain.read(Data(#"{"darkMode":false,"fontSize":9}"#.utf8), context: fixedContext())
        #expect(record.value.theme == .light)
        #expect(record.value.textSize == 9)
    }

    @Test("the install identity is the context's identifier when that is a UUID, as a live context makes")
    func installIDFromLiveIdentifier() throws {
        let identifier = "9A7B3C2D-1E4F-4A5B-8C6D-7E8F9A0B1C2D"
        let context = MigrationContext(clock: { fixedNow }, makeIdentifier: { identifier })
        let record = try Settings.chain.read(Data(#"{"darkMode":true,"fontSize":13}"#.utf8), context: context)
        #expect(record.value.installID == UUID(uuidString: identifier))

        // A live context: a random (version 4) UUID, different each time.
        let first = try Settings.chain.read(Data(#"{"darkMode":true,"fontSize":13}"#.utf8), context: .live())
        let second = try Settings.chain.read(Data(#"{"darkMode":true,"fontSize":13}"#.utf8), context: .live())
        #expect(first.value.installID != second.value.installID)
        #expect(first.value.installID.uuidString.dropFirst(14).first == "4")
    }

    @Test("under a fixed context the install identity is the same every run: a version-8 UUID hashed from id-1, id-2")
    func installIDIsDeterministic() throws {
        let context = fixedContext()
        let bare = Data(#"{"darkMode":true,"fontSize":13}"#.utf8)
        let first = try Settings.chain.read(bare, context: context)
        let second = try Settings.chain.read(bare, context: context)
        #expect(first.value.installID == installIDFromID1)
        #expect(second.value.installID == UUID(uuidString: "6BE78B62-13B1-8F60-B82A-C0EAD9B0B80C"))
    }

    @Test("the latest envelope is written with sorted keys, millisecond UTC dates, and no key for a nil optional")
    func encoding() throws {
        var settings = SettingsV2(theme: .system, textSize: 14, installID: installIDFromID1, installedAt: fixedNow)
        #expect(
            text(try Settings.chain.encode(settings)) == """
                {"data":{"installID":"63B8799E-21DD-8D80-96C2-C5397006E13B","installedAt":"2024-03-01T09:30:00.250Z",\
                "textSize":14,"theme":"system","window":{"height":600,"width":800}},"schema":"Settings","version":2}
                """)
        settings.lastSyncedAt = Date(timeIntervalSince1970: 0)
        #expect(text(try Settings.chain.encode(settings)).contains(#""lastSyncedAt":"1970-01-01T00:00:00.000Z""#))
    }

    @Test("a theme a version does not know is a corrupt record, not a crash")
    func unknownTheme() {
        let stored = Data(
            #"{"version":1,"theme":"sepia","fontSize":12,"installID":"0F8C1D52-3B1E-4F0A-9D8E-6A2B7C4E5F10","installedAt":"2023-11-14T22:13:20Z"}"#
                .utf8)
        let outcome = Settings.chain.outcome(of: stored, context: fixedContext())
        #expect(outcome.error?.code == .corruptRecord)
        #expect(outcome.stored?.version == 1)
    }

    @Test("a record of a newer release is refused, not migrated")
    func newerRecord() {
        let stored = Data(#"{"data":{},"schema":"Settings","version":3}"#.utf8)
        guard case let .newer(error, _) = Settings.chain.outcome(of: stored, context: fixedContext()) else {
            Issue.record("expected .newer")
            return
        }
        #expect(error.code == .newerVersion)
    }

    @Test("the typed key is 'settings', on the Settings chain, with fresh-install defaults")
    func recordKey() throws {
        #expect(RecordKeys.settings.name == "settings")
        #expect(RecordKeys.settings.chain.name == "Settings")
        let defaults = try #require(RecordKeys.settings.defaultValue)
        #expect(defaults.theme == .system)
        #expect(defaults.textSize == 14)
        #expect(defaults.window == SettingsV2.Window(width: 800, height: 600))
        #expect(defaults.lastSyncedAt == nil)
    }
}
