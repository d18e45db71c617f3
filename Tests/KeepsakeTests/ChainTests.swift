import Foundation
import Keepsake
import KeepsakeTesting
import Migrations
import Testing

// Deliberately broken chains.
private struct GapV0: ModelVersion {
    static let version = 0
    let a: String
}
private struct GapV2: ModelVersion {
    typealias Predecessor = GapV0
    static let version = 2
    let a: String
    init(migrating previous: GapV0, context: MigrationContext) { a = previous.a }
}
private struct StartsAtOne: ModelVersion {
    static let version = 1
    let a: String
}
private struct DupV0: ModelVersion {
    static let version = 0
    let a: String
}
private struct DupV0Again: ModelVersion {
    typealias Predecessor = DupV0
    static let version = 0
    let a: String
    init(migrating previous: DupV0, context: MigrationContext) { a = previous.a }
}
private struct OptionalFields: ModelVersion {
    static let version = 0
    let name: String
    let nickname: String?
    let tags: [String]
    let joined: Date
}

@Suite("Model chains")
struct ChainTests {
    @Test("the sample chains are valid")
    func sampleChainsAreValid() throws {
        try ChainValidation.validate(PersonV3.self, name: "Person")
        try ChainValidation.validate(TrialInfoV2.self, name: "TrialInfo")
        #expect(ChainValidation.indistinguishableBareVersions(Person.chain).isEmpty)
        #expect(ChainValidation.indistinguishableBareVersions(TrialInfo.chain).isEmpty)
    }

    @Test("the sample chains have their documented names, keys and versions")
    func sampleChainShape() {
        #expect(Person.chain.name == "Person")
        #expect(Person.chain.defaultKeys == ["person"])
        #expect(Person.chain.versionSummaries.map(\.version) == [0, 1, 2, 3])
        #expect(
            Person.chain.versionSummaries.map(\.storedKeys?.required) == [
                ["name", "age"], ["name", "age", "email"], ["alias", "age", "email"], ["alias", "email"]
            ])
        #expect(TrialInfo.chain.name == "TrialInfo")
        #expect(TrialInfo.chain.defaultKeys == ["trialInfo"])
        #expect(
            TrialInfo.chain.versionSummaries.map(\.storedKeys?.required) == [
                ["version", "startDate"], ["version", "startDate", "deviceId", "userId"],
                ["version", "startDate", "deviceId"]
            ])
    }

    @Test("a gap between versions is rejected, naming the chain and the version")
    func gapIsRejected() {
        #expect {
            try ChainValidation.validate(GapV2.self, name: "Gappy")
        } throws: { error in
            let error = error as! ChainError
            return error.chain == "Gappy" && error.version == 2
                && error.description.contains("predecessor version 0")
        }
    }

    @Test("a chain that does not start at version 0 is rejected")
    func mustStartAtZero() {
        #expect {
            try ChainValidation.validate(StartsAtOne.self, name: "Late")
        } throws: { error in
            let error = error as! ChainError
            return error.chain == "Late" && error.version == 1 && error.description.contains("start at 0")
        }
    }

    @Test("a version number used twice is rejected")
    func duplicateIsRejected() {
        #expect {
            try ChainValidation.validate(DupV0Again.self, name: "Twice")
        } throws: { error in
            let error = error as! ChainError
            return error.chain == "Twice" && error.version == 0 && error.description.contains("appears twice")
        }
    }

    @Test("stored keys are read off the Decodable conformance, optionals as optional")
    func storedKeysAreProbed() throws {
        let keys = try StoredKeys.of(OptionalFields.self)
        #expect(keys == StoredKeys(required: ["name", "tags", "joined"], optional: ["nickname"]))
        #expect(keys.matches(["name", "tags", "joined"]))
        #expect(keys.matches(["name", "tags", "joined", "nickname"]))
        #expect(!keys.matches(["name", "tags"]))
        #expect(!keys.matches(["name", "tags", "joined", "extra"]))
    }

    @Test("the sample steps take identities from the context")
    func stepSemantics() throws {
        let context = MigrationContext.fixed(now: Date(), deviceIdentity: "this-device", identifierPrefix: "user")
        let start = Date(timeIntervalSinceReferenceDate: 123_456_789.987_654)
        let v1 = TrialInfoV1(migrating: TrialInfoV0(startDate: start), context: context)
        #expect(v1.startDate == start)
        #expect(v1.deviceId == "this-device")
        #expect(v1.userId == "user-1")
        #expect(v1.version == 1)
        let v2 = TrialInfoV2(migrating: v1, context: context)
        #expect(v2 == TrialInfoV2(startDate: start, deviceId: "this-device"))
        #expect(v2.version == 2)

        let p1 = PersonV1(migrating: PersonV0(name: "Grace", age: "85"), context: context)
        #expect(p1 == PersonV1(name: "Grace", age: "85", email: "---"))
        let p2 = PersonV2(migrating: p1, context: context)
        #expect(p2 == PersonV2(alias: "Grace", age: "85", email: "---"))
        #expect(PersonV3(migrating: p2, context: context) == PersonV3(alias: "Grace", email: "---"))
    }

    @Test("a fixed context hands out identifiers in order")
    func fixedContextIdentifiers() {
        let context = MigrationContext.fixed(
            now: Date(timeIntervalSince1970: 5), deviceIdentity: "d", identifierPrefix: "x")
        #expect(context.makeIdentifier() == "x-1")
        #expect(context.makeIdentifier() == "x-2")
        #expect(context.now == Date(timeIntervalSince1970: 5))
    }
}
