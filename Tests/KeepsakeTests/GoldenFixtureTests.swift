import Foundation
import Keepsake
import KeepsakeTesting
import Migrations
import Testing

@Suite("Golden fixtures")
struct GoldenFixtureTests {
    static func fixtures(_ model: String) throws -> [GoldenFixture] {
        try GoldenFixture.all(in: fixturesURL.appendingPathComponent(model))
    }

    @Test("every version and read form of both models has a fixture")
    func fixtureSetIsComplete() throws {
        // 4 versions × (bare, inline, envelope) × (plain, in a JSON string)
        #expect(try Self.fixtures("Person").count == 24)
        // 3 versions × (inline, envelope) × (plain, in a JSON string) × (numeric, ISO, ISO with offset)
        #expect(try Self.fixtures("TrialInfo").count == 36)
    }

    @Test("a stored Person migrates to the expected latest record", arguments: try fixtures("Person"))
    func person(_ fixture: GoldenFixture) throws {
        let result = try fixture.verify(Person.chain, context: fixtureContext)
        #expect(result.loaded.alias == result.expected.alias)
        #expect(result.loaded.email == result.expected.email)
        let storedVersion = Int(fixture.name.dropFirst().prefix(1))!
        #expect(result.load.storedVersion == storedVersion)
        #expect(result.load.record.latestVersion == 3)
        #expect(result.load.writeBack == (storedVersion == 3 ? .notNeeded : .written))
    }

    @Test(
        "a stored TrialInfo migrates to the expected latest record, start date intact",
        arguments: try fixtures("TrialInfo"))
    func trialInfo(_ fixture: GoldenFixture) throws {
        let result = try fixture.verify(TrialInfo.chain, context: fixtureContext)
        #expect(result.loaded.version == 2)
        #expect(result.loaded.version == result.expected.version)
        #expect(result.loaded.deviceId == result.expected.deviceId)
        #expect(abs(result.loaded.startDate.timeIntervalSince(fixtureStartDate)) < 0.000_5)
        #expect(abs(result.loaded.startDate.timeIntervalSince(result.expected.startDate)) < 0.000_5)
        let storedVersion = Int(fixture.name.dropFirst().prefix(1))!
        if storedVersion == 0 {
            #expect(result.loaded.deviceId == "fixture-device", "V0 → V1 takes the device identity from the context")
        } else {
            #expect(result.loaded.deviceId == "device-of-v\(storedVersion)", "a stored deviceId is kept")
        }
    }
}
