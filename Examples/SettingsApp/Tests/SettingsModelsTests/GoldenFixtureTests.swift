import Foundation
import Keepsake
import KeepsakeTesting
import SettingsModels
import Testing

/// Records as each release stored them (`Fixtures/NAME.json`, committed, never regenerated) and
/// the exact latest envelope each must become (`NAME.expected.json`, written by hand).
@Suite("Golden fixtures of the frozen versions")
struct GoldenFixtureTests {
    @Test("every fixture is there: bare and string-wrapped V0, inline and envelope V1, envelope V2")
    func fixtureSet() throws {
        #expect(
            try GoldenFixture.all(in: fixturesDirectory).map(\.name)
                == ["v0-bare", "v0-string-wrapped", "v1-envelope", "v1-inline", "v2-envelope"])
    }

    @Test(
        "each fixture loads and is written back as exactly its expected envelope",
        arguments: try GoldenFixture.all(in: fixturesDirectory))
    func verify(_ fixture: GoldenFixture) throws {
        let result = try fixture.verify(Settings.chain, context: fixedContext())
        #expect(result.loaded == result.expected)
        #expect(result.written == fixture.expected)
        #expect(result.load.storedVersion == Int(fixture.name.dropFirst().prefix(1)))
        #expect(result.load.wasMigrated == (result.load.storedVersion < 2))
        #expect(result.load.writeBack == (result.load.wasMigrated ? .written : .notNeeded))
    }

    @Test("the V0 fixtures get the fixed clock's install date and the identity hashed from id-1")
    func v0Values() throws {
        for name in ["v0-bare", "v0-string-wrapped"] {
            let fixture = try #require(try GoldenFixture.all(in: fixturesDirectory).first { $0.name == name })
            let loaded = try fixture.verify(Settings.chain, context: fixedContext()).loaded
            #expect(loaded.installID == installIDFromID1)
            #expect(loaded.installedAt == fixedNow)
            #expect(loaded.theme == (name == "v0-bare" ? .dark : .light))
            #expect(loaded.textSize == (name == "v0-bare" ? 13 : 11))
        }
    }

    @Test("a V1 envelope keeps its identity and its install date, moved from +01:00 to UTC")
    func v1Values() throws {
        let fixture = try #require(try GoldenFixture.all(in: fixturesDirectory).first { $0.name == "v1-envelope" })
        let loaded = try fixture.verify(Settings.chain, context: fixedContext()).loaded
        #expect(loaded.installID == UUID(uuidString: "B3A1F0E2-9C4D-4E7A-8F61-2D5C7A9E0B14"))
        #expect(milliseconds(loaded.installedAt) == 1_705_309_200_500)
        #expect(loaded.theme == .dark)
        #expect(loaded.textSize == 16)
        #expect(loaded.window == .standard)
    }

    @Test("the V2 envelope is current, with its optional sync date and its own window")
    func v2Values() throws {
        let fixture = try #require(try GoldenFixture.all(in: fixturesDirectory).first { $0.name == "v2-envelope" })
        let loaded = try fixture.verify(Settings.chain, context: fixedContext()).loaded
        #expect(loaded.window == SettingsV2.Window(width: 1440, height: 900))
        #expect(loaded.lastSyncedAt.map(milliseconds) == 1_709_208_000_125)
        #expect(milliseconds(loaded.installedAt) == 1_688_169_599_999)
    }
}
