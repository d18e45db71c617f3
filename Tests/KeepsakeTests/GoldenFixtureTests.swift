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

    @Test("a mismatch names the first differing byte, and an expected file's trailing newline")
    func mismatchMessages() throws {
        let person = try #require(try Self.fixtures("Person").first { $0.name.hasPrefix("v0") })
        var withNewline = person.expected
        withNewline.append(UInt8(ascii: "\n"))
        let edited = GoldenFixture(name: person.name, stored: person.stored, expected: withNewline)
        let newline = try #require(throws: GoldenFixtureMismatch.self) {
            _ = try edited.verify(Person.chain, context: fixtureContext)
        }
        #expect(newline.description.contains("the expected bytes end with a trailing newline the other does not have"))

        var changed = person.expected
        let offset = try #require(changed.firstIndex(of: UInt8(ascii: "A")))
        changed[offset] = UInt8(ascii: "B")
        let differing = GoldenFixture(name: person.name, stored: person.stored, expected: changed)
        let byte = try #require(throws: GoldenFixtureMismatch.self) {
            _ = try differing.verify(Person.chain, context: fixtureContext)
        }
        #expect(
            byte.description.contains("they differ first at byte \(offset): written 'A' (0x41), expected 'B' (0x42)"))
        #expect(
            GoldenFixtureMismatch.difference(written: Data("ab".utf8), expected: Data("abc".utf8))
                == "the expected bytes go on after byte 2 with 1 more, from 'c' (0x63)")
    }
}
