import Foundation
import Keepsake
import KeepsakeTesting
import Migrations
import Testing

/// The committed snapshots of the sample chains: `Migrations/Schemas`.
private let schemasURL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Migrations").appendingPathComponent("Schemas")

// A small chain with a field of every kind, named "Sample".
private enum Kind: String, Codable, CaseIterable { case note, task }
private struct Owner: Codable, Equatable {
    let name: String
    let id: UUID
}
private struct SampleV0: ModelVersion {
    static let version = 0
    let title: String
    let count: Int
}
private struct SampleV1: ModelVersion {
    typealias Predecessor = SampleV0
    static let version = 1
    let title: String
    let owner: Owner
    let tags: [String]
    let scores: [String: Double]
    let kind: Kind
    let createdAt: Date
    let note: String?
    init(migrating previous: SampleV0, context: MigrationContext) {
        title = previous.title
        owner = Owner(name: "", id: UUID())
        tags = []
        scores = [:]
        kind = .note
        createdAt = context.now
        note = nil
    }
}
private let sampleChain = ModelChain<SampleV1>(name: "Sample", defaultKeys: ["sample"])

// Version 1 of "Sample" as a later edit left it: a field added, one removed, one retyped (in a
// nested struct), one made required.
private struct AddedV1: ModelVersion {
    typealias Predecessor = SampleV0
    static let version = 1
    let title: String
    let owner: Owner
    let tags: [String]
    let scores: [String: Double]
    let kind: Kind
    let createdAt: Date
    let note: String?
    let priority: Int
    init(migrating previous: SampleV0, context: MigrationContext) { fatalError("never migrated") }
}
private struct RemovedV1: ModelVersion {
    typealias Predecessor = SampleV0
    static let version = 1
    let title: String
    let owner: Owner
    let tags: [String]
    let scores: [String: Double]
    let createdAt: Date
    let note: String?
    init(migrating previous: SampleV0, context: MigrationContext) { fatalError("never migrated") }
}
private struct OwnerByName: Codable {
    let name: String
    let id: String
}
private struct RetypedV1: ModelVersion {
    typealias Predecessor = SampleV0
    static let version = 1
    let title: String
    let owner: OwnerByName
    let tags: [String]
    let scores: [String: Int]
    let kind: Kind
    let createdAt: Date
    let note: String?
    init(migrating previous: SampleV0, context: MigrationContext) { fatalError("never migrated") }
}
private struct RequiredNoteV1: ModelVersion {
    typealias Predecessor = SampleV0
    static let version = 1
    let title: String
    let owner: Owner
    let tags: [String]
    let scores: [String: Double]
    let kind: Kind
    let createdAt: Date
    let note: String
    init(migrating previous: SampleV0, context: MigrationContext) { fatalError("never migrated") }
}

// Two versions one bare record could match.
private struct TwinV0: ModelVersion {
    static let version = 0
    let name: String
}
private struct TwinV1: ModelVersion {
    typealias Predecessor = TwinV0
    static let version = 1
    let name: String
    let nickname: String?
    init(migrating previous: TwinV0, context: MigrationContext) {
        name = previous.name
        nickname = nil
    }
}

// A version whose init(from:) refuses the probe's placeholders, with declared keys: no shape.
private struct OpaqueV0: ModelVersion {
    static let version = 0
    static let storedKeys = StoredKeys(required: ["code"])
    let code: String
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decode(String.self, forKey: .code)
        guard code.hasPrefix("#") else {
            throw DecodingError.dataCorruptedError(forKey: .code, in: container, debugDescription: "not a #code")
        }
    }
}
private struct OpaqueMoreKeysV0: ModelVersion {
    static let version = 0
    static let storedKeys = StoredKeys(required: ["code"], optional: ["note"])
    let code: String
    init(from decoder: any Decoder) throws { throw CancellationError() }
}

/// The exact file `SchemaSnapshot` writes for the Sample chain.
private let sampleSnapshotJSON = """
    {
      "chain" : "Sample",
      "versions" : [
        {
          "keys" : [
            "count",
            "title"
          ],
          "oldestReader" : 0,
          "optionalKeys" : [

          ],
          "shape" : {
            "count" : {
              "required" : true,
              "type" : "integer"
            },
            "title" : {
              "required" : true,
              "type" : "string"
            }
          },
          "type" : "SampleV0",
          "version" : 0
        },
        {
          "keys" : [
            "createdAt",
            "kind",
            "owner",
            "scores",
            "tags",
            "title"
          ],
          "oldestReader" : 1,
          "optionalKeys" : [
            "note"
          ],
          "shape" : {
            "createdAt" : {
              "required" : true,
              "type" : "date"
            },
            "kind" : {
              "required" : true,
              "type" : {
                "enum" : {
                  "raw" : "string",
                  "values" : [
                    "note",
                    "task"
                  ]
                }
              }
            },
            "note" : {
              "required" : false,
              "type" : "string"
            },
            "owner" : {
              "required" : true,
              "type" : {
                "object" : {
                  "id" : {
                    "required" : true,
                    "type" : "uuid"
                  },
                  "name" : {
                    "required" : true,
                    "type" : "string"
                  }
                }
              }
            },
            "scores" : {
              "required" : true,
              "type" : {
                "map" : "number"
              }
            },
            "tags" : {
              "required" : true,
              "type" : {
                "array" : "string"
              }
            },
            "title" : {
              "required" : true,
              "type" : "string"
            }
          },
          "type" : "SampleV1",
          "version" : 1
        }
      ]
    }

    """

/// A snapshot file in a new temporary directory (not yet written).
private func temporarySnapshotFile(_ function: String = #function) throws -> URL {
    URL(fileURLWithPath: try temporaryDirectory(function)).appendingPathComponent("Sample.json")
}

private func contents(_ file: URL) throws -> String {
    try String(contentsOf: file, encoding: .utf8)
}

/// The error `check` throws, or a test failure when it passes.
private func snapshotFailure(
    _ chain: AnyModelChain, file: URL, record: SchemaSnapshot.RecordMode = .missing
) throws -> SchemaSnapshotError {
    do {
        let report = try SchemaSnapshot.check(chain, file: file, record: record)
        Issue.record("the check passed: \(report)")
        throw CancellationError()
    } catch let error as SchemaSnapshotError {
        return error
    }
}

@Suite("Schema snapshots: a released version is frozen")
struct SchemaSnapshotTests {
    // MARK: The committed snapshots

    @Test(
        "the committed snapshot of each sample chain (Migrations/Schemas/NAME.json) matches the chain",
        arguments: ["Person", "TrialInfo"])
    func committedSnapshots(_ name: String) throws {
        let chain = try #require(SampleModels.all.first { $0.name == name })
        let file = schemasURL.appendingPathComponent(name + ".json")
        let report = try SchemaSnapshot.check(chain, file: file)
        // Every version was in the committed file; a new one is recorded for the next commit.
        #expect(report.checked.first == 0)
        #expect(Set(report.checked + report.recorded) == Set(0...chain.latestVersion))
        #expect(!report.createdFile)
        #expect(try Data(contentsOf: file) == SchemaSnapshot(chain).encoded())
    }

    @Test("the committed Person snapshot holds each version's keys and string fields")
    func personSnapshotValues() throws {
        let data = try Data(contentsOf: schemasURL.appendingPathComponent("Person.json"))
        let snapshot = try JSONDecoder().decode(SchemaSnapshot.self, from: data)
        #expect(snapshot.chain == "Person")
        #expect(Array(snapshot.versions.map(\.type).prefix(4)) == ["PersonV0", "PersonV1", "PersonV2", "PersonV3"])
        #expect(snapshot.versions[1].keys == ["age", "email", "name"])
        #expect(
            snapshot.versions[1].shape
                == RecordShape(fields: [
                    "name": .required(.string), "age": .required(.string), "email": .required(.string)
                ]))
        #expect(
            snapshot.versions[3].shape
                == RecordShape(fields: ["alias": .required(.string), "email": .required(.string)]))
        let trial = try JSONDecoder().decode(
            SchemaSnapshot.self, from: Data(contentsOf: schemasURL.appendingPathComponent("TrialInfo.json")))
        #expect(
            trial.versions[2].shape
                == RecordShape(fields: [
                    "version": .required(.integer), "startDate": .required(.date), "deviceId": .required(.string)
                ]))
    }

    // MARK: Exporting

    @Test("a missing file is written: every version's number, type, oldest reader, keys and shape, exactly")
    func exportsExactJSON() throws {
        let file = try temporarySnapshotFile()
        let report = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        #expect(report.createdFile)
        #expect(report.checked == [])
        #expect(report.recorded == [0, 1])
        #expect(report.notes == ["Sample.json did not exist and was written; commit it"])
        #expect(try contents(file) == sampleSnapshotJSON)
        #expect(try SchemaSnapshot(sampleChain).encoded() == Data(sampleSnapshotJSON.utf8))
    }

    @Test("checking an unchanged chain again passes, checks every version and leaves the file as it was")
    func unchangedChainPasses() throws {
        let file = try temporarySnapshotFile()
        _ = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        let before = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date
        let report = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        #expect(
            report
                == SchemaSnapshot.Report(chain: "Sample", checked: [0, 1], recorded: [], createdFile: false, notes: []))
        #expect(try contents(file) == sampleSnapshotJSON)
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date == before)
    }

    @Test("the file decodes back to the snapshot it was written from")
    func roundTrips() throws {
        let snapshot = SchemaSnapshot(sampleChain)
        #expect(try JSONDecoder().decode(SchemaSnapshot.self, from: snapshot.encoded()) == snapshot)
        #expect(
            snapshot.versions[1].shape?.description == """
                {createdAt: date, kind: string enum (note, task), note?: string, owner: {id: uuid, name: string}, scores: [string: number], \
                tags: [string], title: string}
                """)
    }

    // MARK: Failing on a changed released version

    @Test("a field added to a released version fails, naming the chain, the version and the key")
    func addedFieldFails() throws {
        let file = try temporarySnapshotFile()
        _ = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        let error = try snapshotFailure(ModelChain<AddedV1>(name: "Sample", defaultKeys: []).erased, file: file)
        #expect(error.chain == "Sample")
        #expect(
            error.changes == [
                .init(
                    kind: .shapeChanged, version: 1, typeName: "AddedV1", key: "priority",
                    reason: "added (now: required integer)")
            ])
        #expect(
            error.description.hasPrefix(
                """
                Schema snapshot Sample.json of chain 'Sample' does not match the chain: version 1 (AddedV1), \
                key 'priority': added (now: required integer). A released version is frozen
                """))
        #expect(error.description.contains("make the change in a new version"))
        #expect(try contents(file) == sampleSnapshotJSON, "a failing check leaves the file as it was")
    }

    @Test("a field removed from a released version fails, naming the key")
    func removedFieldFails() throws {
        let file = try temporarySnapshotFile()
        _ = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        let error = try snapshotFailure(ModelChain<RemovedV1>(name: "Sample", defaultKeys: []).erased, file: file)
        #expect(
            error.changes == [
                .init(
                    kind: .shapeChanged, version: 1, typeName: "RemovedV1", key: "kind",
                    reason: "removed (was: required string enum (note, task))")
            ])
        #expect(
            error.description.contains(
                "version 1 (RemovedV1), key 'kind': removed (was: required string enum (note, task))"))
    }

    @Test("a retyped field fails, naming the path to it, nested and in a map")
    func retypedFieldFails() throws {
        let file = try temporarySnapshotFile()
        _ = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        let error = try snapshotFailure(ModelChain<RetypedV1>(name: "Sample", defaultKeys: []).erased, file: file)
        #expect(error.changes.map(\.key) == ["owner.id", "scores[*]"])
        #expect(
            error.changes.map(\.reason) == ["type changed from uuid to string", "type changed from number to integer"])
        #expect(error.changes.allSatisfy { $0.version == 1 && $0.typeName == "RetypedV1" })
    }

    @Test("an optional field made required fails")
    func optionalMadeRequiredFails() throws {
        let file = try temporarySnapshotFile()
        _ = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        let error = try snapshotFailure(ModelChain<RequiredNoteV1>(name: "Sample", defaultKeys: []).erased, file: file)
        #expect(
            error.changes.map(\.description) == ["version 1 (RequiredNoteV1), key 'note': made required (was optional)"]
        )
    }

    @Test("a snapshot whose released shape was edited by hand fails the same way (a key made optional)")
    func editedSnapshotFails() throws {
        let file = try temporarySnapshotFile()
        var snapshot = SchemaSnapshot(sampleChain)
        snapshot.versions[0].shape?.fields["count"]?.required = false
        snapshot.versions[0].keys = ["title"]
        snapshot.versions[0].optionalKeys = ["count"]
        try snapshot.write(to: file)
        let error = try snapshotFailure(sampleChain.erased, file: file)
        #expect(error.changes.map(\.description) == ["version 0 (SampleV0), key 'count': made required (was optional)"])
    }

    @Test("a version that left the chain fails, naming it")
    func removedVersionFails() throws {
        let file = try temporarySnapshotFile()
        _ = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        let error = try snapshotFailure(ModelChain<SampleV0>(name: "Sample", defaultKeys: []).erased, file: file)
        #expect(
            error.changes == [
                .init(
                    kind: .versionRemoved, version: 1, typeName: "SampleV1", key: nil,
                    reason: """
                        the version is in the snapshot but no longer in the chain, so its records can no longer be read
                        """)
            ])
        #expect(
            error.description.contains(
                "version 1 (SampleV1): the version is in the snapshot but no longer in the chain"))
    }

    @Test("another chain's file fails: a chain's name is in every envelope")
    func renamedChainFails() throws {
        let file = try temporarySnapshotFile()
        _ = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        let error = try snapshotFailure(ModelChain<SampleV1>(name: "Sampler", defaultKeys: []).erased, file: file)
        #expect(error.changes.map(\.kind) == [.chainRenamed])
        #expect(error.description.contains("chain 'Sampler'"))
    }

    // MARK: Recording new versions

    @Test("a version not yet in the file is new: it is written into the file and the check passes")
    func newVersionIsRecorded() throws {
        let file = try temporarySnapshotFile()
        let first = try SchemaSnapshot.check(
            ModelChain<SampleV0>(name: "Sample", defaultKeys: []), file: file, record: .missing)
        #expect(first.recorded == [0])
        let report = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        #expect(report.checked == [0])
        #expect(report.recorded == [1])
        #expect(!report.createdFile)
        #expect(report.notes == ["Sample.json was updated with the new versions; commit it"])
        #expect(try contents(file) == sampleSnapshotJSON)
        // And from then on version 1 is released.
        #expect(try SchemaSnapshot.check(sampleChain, file: file, record: .missing).checked == [0, 1])
    }

    @Test(
        "a renamed version type is not a change to its records: the check passes and writes nothing; refine updates it"
    )
    func renamedTypeIsUpdated() throws {
        let file = try temporarySnapshotFile()
        var snapshot = SchemaSnapshot(sampleChain)
        snapshot.versions[1].type = "OldSampleV1"
        try snapshot.write(to: file)
        let committed = try contents(file)
        let report = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        #expect(report.checked == [0, 1])
        #expect(report.notes.count == 1)
        #expect(report.notes.first?.contains("version 1 is now SampleV1 (was OldSampleV1)") == true)
        #expect(
            report.notes.first?.contains("was left as it is; refine it with KEEPSAKE_RECORD_SNAPSHOTS=refine") == true)
        #expect(try contents(file) == committed, "a check never rewrites a version already in the file")
        let refined = try SchemaSnapshot.check(sampleChain, file: file, record: .refine)
        #expect(
            refined.notes == [
                "Sample.json was refined (version 1 is now SampleV1 (was OldSampleV1)); review its diff and commit it"
            ])
        #expect(try contents(file) == sampleSnapshotJSON)
    }

    @Test("a shape recorded as unknown matches what the probe reads now: refined in the file only when asked")
    func unknownIsRefined() throws {
        let file = try temporarySnapshotFile()
        var snapshot = SchemaSnapshot(sampleChain)
        snapshot.versions[1].shape?.fields["owner"]?.type = .unknown
        try snapshot.write(to: file)
        let committed = try contents(file)
        let report = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        #expect(report.checked == [0, 1])
        #expect(report.notes.first?.contains("version 1's shape is read further than when it was recorded") == true)
        #expect(try contents(file) == committed)
        try SchemaSnapshot.check(sampleChain, file: file, record: .refine)
        #expect(try contents(file) == sampleSnapshotJSON)
    }

    @Test(
        "a stale snapshot fails where CI is set (new-versions) and under never, naming what is stale and refine; nothing is written",
        arguments: [SchemaSnapshot.RecordMode.never, .newVersions])
    func staleFailsInCI(_ mode: SchemaSnapshot.RecordMode) throws {
        let file = try temporarySnapshotFile("staleFailsInCI-\(mode.rawValue)")
        var snapshot = SchemaSnapshot(sampleChain)
        snapshot.versions[1].type = "OldSampleV1"
        snapshot.versions[1].shape?.fields["owner"]?.type = .unknown
        try snapshot.write(to: file)
        let committed = try contents(file)
        let error = try snapshotFailure(sampleChain.erased, file: file, record: mode)
        #expect(error.changes.map(\.kind) == [.stale])
        #expect(error.description.contains("version 1 is now SampleV1 (was OldSampleV1)"), "\(error)")
        #expect(error.description.contains("KEEPSAKE_RECORD_SNAPSHOTS=refine"))
        #expect(try contents(file) == committed)
        #expect(try SchemaSnapshot.RecordMode.fromEnvironment(["CI": "true"]) == .newVersions)
    }

    @Test("a new version beside a stale entry: the new one is added, the stale one left as committed")
    func newVersionBesideStaleEntry() throws {
        let file = try temporarySnapshotFile()
        var snapshot = SchemaSnapshot(ModelChain<SampleV0>(name: "Sample", defaultKeys: []))
        snapshot.versions[0].type = "OldSampleV0"
        try snapshot.write(to: file)
        let report = try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        #expect(report.recorded == [1])
        let written = try JSONDecoder().decode(SchemaSnapshot.self, from: Data(contentsOf: file))
        #expect(written.versions.map(\.type) == ["OldSampleV0", "SampleV1"])
        #expect(written.versions[1] == SchemaSnapshot(sampleChain).versions[1])
    }

    @Test("a version whose shape cannot be probed is recorded without one, and its declared keys are checked")
    func keysOnlyVersion() throws {
        let file = try temporarySnapshotFile()
        let report = try SchemaSnapshot.check(
            ModelChain<OpaqueV0>(name: "Opaque", defaultKeys: []), file: file, record: .missing)
        #expect(
            report.notes == [
                "version 0's shape cannot be read off OpaqueV0's Decodable conformance; only its keys are checked",
                "Sample.json did not exist and was written; commit it"
            ])
        let snapshot = try JSONDecoder().decode(SchemaSnapshot.self, from: Data(contentsOf: file))
        #expect(
            snapshot.versions == [
                .init(version: 0, type: "OpaqueV0", oldestReader: 0, keys: ["code"], optionalKeys: [], shape: nil)
            ])
        let again = try SchemaSnapshot.check(
            ModelChain<OpaqueV0>(name: "Opaque", defaultKeys: []), file: file, record: .missing)
        #expect(
            again.notes == [
                "version 0's shape cannot be read off OpaqueV0's Decodable conformance; only its keys are checked"
            ])
        let error = try snapshotFailure(
            ModelChain<OpaqueMoreKeysV0>(name: "Opaque", defaultKeys: []).erased, file: file)
        #expect(error.changes.map(\.description) == ["version 0 (OpaqueMoreKeysV0), key 'note': added (now: optional)"])
    }

    // MARK: Record modes

    @Test("what the check may write is chosen by KEEPSAKE_RECORD_SNAPSHOTS, then by CI, else a missing file is written")
    func recordModeFromEnvironment() throws {
        typealias Mode = SchemaSnapshot.RecordMode
        #expect(try Mode.fromEnvironment([:]) == .missing)
        #expect(try Mode.fromEnvironment(["CI": "true"]) == .newVersions)
        #expect(try Mode.fromEnvironment(["CI": "1"]) == .newVersions)
        #expect(try Mode.fromEnvironment(["CI": "false"]) == .missing)
        #expect(try Mode.fromEnvironment(["CI": ""]) == .missing)
        #expect(try Mode.fromEnvironment(["CI": "true", "KEEPSAKE_RECORD_SNAPSHOTS": "missing"]) == .missing)
        #expect(try Mode.fromEnvironment(["CI": "true", "KEEPSAKE_RECORD_SNAPSHOTS": "1"]) == .missing)
        #expect(try Mode.fromEnvironment(["KEEPSAKE_RECORD_SNAPSHOTS": "never"]) == .never)
        #expect(try Mode.fromEnvironment(["KEEPSAKE_RECORD_SNAPSHOTS": "new-versions"]) == .newVersions)
        #expect(try Mode.fromEnvironment(["KEEPSAKE_RECORD_SNAPSHOTS": "ALL"]) == .all)
        #expect(Mode.variable == "KEEPSAKE_RECORD_SNAPSHOTS")
        // A misspelt mode is an error, never a guess (and never a trap).
        #expect(throws: Mode.UnknownModeError(value: "mising")) {
            try Mode.fromEnvironment(["KEEPSAKE_RECORD_SNAPSHOTS": "mising"])
        }
    }

    @Test(
        "a missing file fails where it may not be written (never; new-versions, CI's default), naming the file; nothing is written",
        arguments: [SchemaSnapshot.RecordMode.never, .newVersions])
    func missingFileFails(_ mode: SchemaSnapshot.RecordMode) throws {
        let file = try temporarySnapshotFile("missingFileFails-\(mode.rawValue)")
        let error = try snapshotFailure(sampleChain.erased, file: file, record: mode)
        #expect(error.changes.map(\.kind) == [.notRecorded])
        #expect(error.file == "Sample.json")
        #expect(
            error.description.contains(
                "the snapshot file is missing and record mode '\(mode.rawValue)' does not write one"))
        #expect(error.description.contains("KEEPSAKE_RECORD_SNAPSHOTS=missing"))
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    @Test("a new version is written by new-versions, and fails under never with the file left as it was")
    func newVersionUnderEachMode() throws {
        let file = try temporarySnapshotFile()
        try SchemaSnapshot.check(ModelChain<SampleV0>(name: "Sample", defaultKeys: []), file: file, record: .missing)
        let before = try contents(file)
        let error = try snapshotFailure(sampleChain.erased, file: file, record: .never)
        #expect(error.changes.map(\.kind) == [.notRecorded])
        #expect(error.changes.first?.version == 1 && error.changes.first?.typeName == "SampleV1")
        #expect(try contents(file) == before)
        let report = try SchemaSnapshot.check(sampleChain, file: file, record: .newVersions)
        #expect(report.checked == [0] && report.recorded == [1])
        #expect(try contents(file) == sampleSnapshotJSON)
        // Nothing left to write: never passes now.
        #expect(try SchemaSnapshot.check(sampleChain, file: file, record: .never).checked == [0, 1])
    }

    @Test("all rewrites the file from the chain without comparing, and says to review it")
    func recordAllRewrites() throws {
        let file = try temporarySnapshotFile()
        try SchemaSnapshot.check(sampleChain, file: file, record: .missing)
        // A released version 1 edited: a plain check fails, a re-recording replaces it.
        let edited = ModelChain<AddedV1>(name: "Sample", defaultKeys: []).erased
        _ = try snapshotFailure(edited, file: file)
        let report = try SchemaSnapshot.check(edited, file: file, record: .all)
        #expect(report.checked == [] && report.recorded == [0, 1] && !report.createdFile)
        #expect(report.notes.last?.contains("review its diff before committing") == true)
        #expect(try Data(contentsOf: file) == SchemaSnapshot(edited).encoded())
    }

    @Test(
        "every committed snapshot exists and passes writing nothing, as CI checks them",
        arguments: ["Person", "TrialInfo"])
    func committedSnapshotsWithoutRecording(_ name: String) throws {
        let chain = try #require(SampleModels.all.first { $0.name == name })
        let report = try SchemaSnapshot.check(
            chain, file: schemasURL.appendingPathComponent(name + ".json"), record: .never)
        #expect(report.checked == Array(0...chain.latestVersion))
    }

    @Test("the README walkthrough's and the example app's committed snapshots exist")
    func otherCommittedSnapshots() throws {
        let root = schemasURL.deletingLastPathComponent().deletingLastPathComponent()
        let readme = root.appendingPathComponent("Tests/KeepsakeTests/Fixtures/Schemas/Settings.json")
        #expect(try SchemaSnapshot.check(Settings.chain, file: readme, record: .never).checked == [0, 1])
        let example = root.appendingPathComponent("Examples/SettingsApp/Schemas/Settings.json")
        let exampleSnapshot = try JSONDecoder().decode(SchemaSnapshot.self, from: Data(contentsOf: example))
        #expect(exampleSnapshot.chain == "Settings")
        // In the current format: the bytes the check writes.
        #expect(try exampleSnapshot.encoded() == Data(contentsOf: example))
    }

    // MARK: Ambiguous chains

    @Test("a chain with two versions one bare record could match fails, naming both, even without a file")
    func ambiguousChainFails() throws {
        let file = try temporarySnapshotFile()
        let error = try snapshotFailure(ModelChain<TwinV1>(name: "Twins", defaultKeys: []).erased, file: file)
        #expect(
            error.changes == [
                .init(
                    kind: .ambiguous, version: 1, typeName: "TwinV1", key: nil,
                    reason: """
                        versions 0 (TwinV0) and 1 (TwinV1) could both match one record stored without a version; give one \
                        a required key the other cannot have, declare `storedWithoutVersion = false` in one that was only \
                        ever stored with its version, or declare the earlier one's readers compatible (oldestReader)
                        """)
            ])
        #expect(!FileManager.default.fileExists(atPath: file.path), "nothing is written for a failing chain")
    }

    @Test("an unreadable file fails instead of being overwritten")
    func unreadableFileFails() throws {
        let file = try temporarySnapshotFile()
        try Data("not json".utf8).write(to: file)
        let error = try snapshotFailure(sampleChain.erased, file: file)
        #expect(error.changes.map(\.kind) == [.unreadable])
        #expect(try contents(file) == "not json")
    }
}

// MARK: - Shapes

private enum Level: Int, Codable {
    case low = 1
    case high = 2
}
private enum Payload: Codable {
    case text(String)
    case number(Int)
}
private struct Node: Codable {
    let name: String
    let children: [Node]
    let parent: Box?
}
private final class Box: Codable {
    let node: Node
}
private struct Everything: Codable {
    let flag: Bool
    let ratio: Float
    let small: UInt8
    let level: Level
    let payload: Payload
    let blob: Data
    let link: URL
    let amount: Decimal
    let grid: [[Int]]
    let maybes: [String?]
    let byNumber: [Int: String]
    let nestedMaps: [String: [String: Bool]]
    let tree: Node
    let when: Date?
}
/// A hand-written decoder: a nested container, a key that may be null, a key read only if present.
private struct Custom: Decodable {
    let width: Int
    let label: String?
    let extra: Bool
    enum Keys: String, CodingKey { case size, width, label, extra }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let size = try container.nestedContainer(keyedBy: Keys.self, forKey: .size)
        width = try size.decode(Int.self, forKey: .width)
        label = try container.decodeNil(forKey: .label) ? nil : container.decode(String.self, forKey: .label)
        extra = container.contains(.extra) ? try container.decode(Bool.self, forKey: .extra) : false
    }
}

@Suite("Record shapes, read off Decodable")
struct RecordShapeTests {
    @Test("every kind of field: plain values, raw-value enums, Foundation types, nested arrays and maps")
    func everyKind() throws {
        let shape = try #require(RecordShape.of(Everything.self))
        #expect(
            shape
                == RecordShape(fields: [
                    "flag": .required(.bool),
                    "ratio": .required(.number),
                    "small": .required(.integer),
                    "level": .required(.rawEnum(.integer, values: nil)),
                    "payload": .required(.taggedEnum(cases: nil)),
                    "blob": .required(.data),
                    "link": .required(.url),
                    "amount": .required(.decimal),
                    "grid": .required(.array(.array(.integer))),
                    "maybes": .required(.array(.nullable(.string))),
                    "byNumber": .required(.map(.string)),
                    "nestedMaps": .required(.map(.map(.bool))),
                    "tree": .required(
                        .object(
                            RecordShape(fields: [
                                "name": .required(.string),
                                "children": .required(.array(.unknown)),
                                "parent": .optional(.object(RecordShape(fields: ["node": .required(.unknown)])))
                            ]))),
                    "when": .optional(.date)
                ]))
    }

    @Test("a hand-written init(from:): nested containers, nullable and present-only keys")
    func handWritten() throws {
        let shape = try #require(RecordShape.of(Custom.self))
        #expect(
            shape
                == RecordShape(fields: [
                    "size": .required(.object(RecordShape(fields: ["width": .required(.integer)]))),
                    "label": .required(.nullable(.string)),
                    "extra": .required(.bool)
                ]))
    }

    @Test("a type that is not a JSON object, or cannot be probed, has no shape")
    func noShape() {
        #expect(RecordShape.of([String].self) == nil)
        #expect(RecordShape.of(Date.self) == nil)
        #expect(RecordShape.of(Payload.self) == nil)
    }

    @Test("the chain's shapes, typed and erased, are each version's")
    func chainShapes() {
        #expect(Person.chain.shapes[0] == RecordShape(fields: ["name": .required(.string), "age": .required(.string)]))
        #expect(Person.chain.shapes == Person.chain.erased.shapes)
        #expect(Person.chain.shapes.keys.sorted() == [0, 1, 2, 3])
        #expect(sampleChain.shapes[1]?.optionalKeys == ["note"])
        #expect(sampleChain.shapes[1]?.requiredKeys == ["title", "owner", "tags", "scores", "kind", "createdAt"])
    }

    @Test("a shape's JSON: plain types by name, compound ones as one-key objects, and back")
    func json() throws {
        let shape = RecordShape(fields: [
            "a": .optional(.nullable(.array(.map(.uuid)))),
            "b": .required(.object(RecordShape(fields: ["c": .required(.unknown)])))
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(shape), as: UTF8.self)
        #expect(
            text == #"""
                {"a":{"required":false,"type":{"nullable":{"array":{"map":"uuid"}}}},"b":{"required":true,"type":{"object":{"c":{"required":true,"type":"unknown"}}}}}
                """#)
        #expect(try JSONDecoder().decode(RecordShape.self, from: Data(text.utf8)) == shape)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(RecordShape.self, from: Data(#"{"a":{"required":true,"type":"text"}}"#.utf8))
        }
    }
}
