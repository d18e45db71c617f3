import Foundation
import Keepsake
import KeepsakeTesting
import Testing

// A released version storing every kind of enum: one with associated values that declares its
// cases, a CaseIterable raw-value enum, one that declares nothing, and a recursive one.
private enum Credential: Codable, Sendable, DeclaredCases {
    case password(hash: String)
    case passkey(id: UUID, createdAt: Date?)
    case none
    static let declaredCases: [Credential] = [.password(hash: ""), .passkey(id: UUID(), createdAt: nil), .none]
}
private enum Role: Int, Codable, Sendable, CaseIterable {
    case user = 0
    case admin = 1
}
private enum Status: Int, Codable, Sendable {
    case active = 1
    case closed = 2
}
private indirect enum Rule: Codable, Sendable, DeclaredCases {
    case allow(String)
    case all([Rule])
    static let declaredCases: [Rule] = [.allow(""), .all([])]
}

private struct LoginV0: ModelVersion {
    static let version = 0
    let credential: Credential
    let role: Role
    let status: Status
    let rule: Rule
}
private let loginChain = ModelChain<LoginV0>(name: "Login", defaultKeys: [])

// The same released version after edits to its enums.
private enum DigestCredential: Codable, Sendable, DeclaredCases {
    case password(digest: String)
    case passkey(id: UUID, createdAt: Date?)
    case none
    static let declaredCases: [DigestCredential] = [.password(digest: ""), .passkey(id: UUID(), createdAt: nil), .none]
}
private enum SecretCredential: Codable, Sendable, DeclaredCases {
    case secret(hash: String)
    case passkey(id: UUID, createdAt: Date?)
    case none
    static let declaredCases: [SecretCredential] = [.secret(hash: ""), .passkey(id: UUID(), createdAt: nil), .none]
}
private enum NumericCredential: Codable, Sendable, DeclaredCases {
    case password(hash: Int)
    case passkey(id: UUID, createdAt: Date?)
    case none
    static let declaredCases: [NumericCredential] = [.password(hash: 0), .passkey(id: UUID(), createdAt: nil), .none]
}
private enum UndeclaredCredential: Codable, Sendable {
    case password(hash: String)
    case passkey(id: UUID, createdAt: Date?)
    case none
}
private enum UserOnlyRole: Int, Codable, Sendable, CaseIterable {
    case user = 0
}

private struct EditedV0<C: Codable & Sendable, R: Codable & Sendable>: ModelVersion {
    static var version: Int { 0 }
    let credential: C
    let role: R
    let status: Status
    let rule: Rule
}

/// What checking `Latest`'s chain, named "Login", against `file` throws.
private func failure<Latest: ModelVersion>(_ latest: Latest.Type, file: URL) throws -> SchemaSnapshotError {
    do {
        let report = try SchemaSnapshot.check(
            ModelChain<Latest>(name: "Login", defaultKeys: []), file: file, record: .never)
        Issue.record("the check passed: \(report)")
        throw CancellationError()
    } catch let error as SchemaSnapshotError {
        return error
    }
}

private func recordedFile() throws -> URL {
    let file = URL(fileURLWithPath: try temporaryDirectory()).appendingPathComponent("Login.json")
    try SchemaSnapshot.check(loginChain, file: file, record: .missing)
    return file
}

@Suite("Enum cases in schema snapshots")
struct EnumShapeTests {
    @Test("the shape records each enum's cases: payload keys and shapes, raw values, not declared, recursion once")
    func recorded() throws {
        let shape = try #require(loginChain.shapes[0])
        #expect(
            shape.fields["credential"]
                == .required(
                    .taggedEnum(cases: [
                        "password": .object(RecordShape(fields: ["hash": .required(.string)])),
                        "passkey": .object(
                            RecordShape(fields: ["id": .required(.uuid), "createdAt": .optional(.date)])),
                        "none": .object(RecordShape(fields: [:]))
                    ])))
        #expect(shape.fields["role"] == .required(.rawEnum(.integer, values: ["0", "1"])))
        #expect(shape.fields["status"] == .required(.rawEnum(.integer, values: nil)))
        #expect(
            shape.fields["rule"]
                == .required(
                    .taggedEnum(cases: [
                        "allow": .object(RecordShape(fields: ["_0": .required(.string)])),
                        "all": .object(RecordShape(fields: ["_0": .required(.array(.unknown))]))
                    ])))
    }

    @Test("the snapshot's JSON names cases and 'not declared', reads back, and the check notes an undeclared enum")
    func json() throws {
        let file = try recordedFile()
        let text = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        #expect(text.contains(#""values" : "not declared""#))
        #expect(text.contains(#""password" : {"#))
        #expect(try JSONDecoder().decode(SchemaSnapshot.self, from: Data(text.utf8)) == SchemaSnapshot(loginChain))
        let report = try SchemaSnapshot.check(loginChain, file: file, record: .never)
        #expect(report.checked == [0])
        #expect(
            report.notes == [
                """
                version 0 (LoginV0), key 'status': an enum whose cases are not declared, so they are not frozen; \
                make it CaseIterable or DeclaredCases
                """
            ])
    }

    @Test("a renamed associated value of a released version's case fails, naming version, key and case")
    func payloadKeyRenamed() throws {
        let error = try failure(EditedV0<DigestCredential, Role>.self, file: recordedFile())
        #expect(
            error.changes.map(\.description) == [
                "version 0 (EditedV0<DigestCredential, Role>), key 'credential(password).digest': case 'password': added (now: required string)",
                "version 0 (EditedV0<DigestCredential, Role>), key 'credential(password).hash': case 'password': removed (was: required string)"
            ])
    }

    @Test("a renamed case fails, naming both names")
    func caseRenamed() throws {
        let error = try failure(EditedV0<SecretCredential, Role>.self, file: recordedFile())
        #expect(error.changes.map(\.key) == ["credential"])
        #expect(error.changes.map(\.reason) == ["case 'password' renamed to 'secret' (or removed and another added)"])
    }

    @Test("a retyped associated value fails")
    func payloadRetyped() throws {
        let error = try failure(EditedV0<NumericCredential, Role>.self, file: recordedFile())
        #expect(error.changes.map(\.key) == ["credential(password).hash"])
        #expect(error.changes.map(\.reason) == ["case 'password': type changed from string to integer"])
    }

    @Test("a removed raw-value case fails, naming its raw value")
    func rawCaseRemoved() throws {
        let error = try failure(EditedV0<Credential, UserOnlyRole>.self, file: recordedFile())
        #expect(
            error.changes.map(\.description) == [
                "version 0 (EditedV0<Credential, UserOnlyRole>), key 'role': case '1' removed"
            ])
    }

    @Test("cases that are no longer declared fail")
    func noLongerDeclared() throws {
        let error = try failure(EditedV0<UndeclaredCredential, Role>.self, file: recordedFile())
        #expect(error.changes.map(\.key) == ["credential"])
        #expect(error.changes.first?.reason.hasPrefix("its cases are no longer declared") == true)
    }

    @Test("a snapshot recorded before cases were, with the raw type or unknown, passes; refine records the cases")
    func olderSnapshotRefined() throws {
        let file = try recordedFile()
        var snapshot = SchemaSnapshot(loginChain)
        snapshot.versions[0].shape?.fields["role"]?.type = .integer
        snapshot.versions[0].shape?.fields["credential"]?.type = .unknown
        try snapshot.write(to: file)
        let committed = try Data(contentsOf: file)
        let report = try SchemaSnapshot.check(loginChain, file: file, record: .missing)
        #expect(report.checked == [0])
        #expect(try Data(contentsOf: file) == committed, "a check leaves a released version's entry as committed")
        try SchemaSnapshot.check(loginChain, file: file, record: .refine)
        #expect(try Data(contentsOf: file) == SchemaSnapshot(loginChain).encoded())
    }

    @Test(
        "a compatibility claim over an enum whose cases are not declared fails, naming the key and both ways out",
        arguments: [true, false])
    func undeclaredEnumClaim(_ tagged: Bool) {
        let problems =
            tagged
            ? ModelChain<PlanV1>(name: "Plans", defaultKeys: []).problems
            : ModelChain<LevelV1>(name: "Levels", defaultKeys: []).problems
        let problem = problems.first { $0.field == (tagged ? "plan" : "level") }
        #expect(problem?.version == 1, "\(problems)")
        #expect(problem?.reason.contains("is an enum whose cases are not declared") == true, "\(problems)")
        #expect(problem?.reason.contains("version 0 (\(tagged ? "PlanV0" : "LevelV0")) knows every case") == true)
        #expect(
            problem?.reason.contains("CaseIterable for raw values, DeclaredCases for cases with associated") == true)
        #expect(problem?.reason.contains("or declare no older readers compatible (oldestReader = 1)") == true)
        #expect(throws: ChainError.self) {
            if tagged {
                try ChainValidation.validate(ModelChain<PlanV1>(name: "Plans", defaultKeys: []))
            } else {
                try ChainValidation.validate(ModelChain<LevelV1>(name: "Levels", defaultKeys: []))
            }
        }
    }

    @Test("validation refuses a version older readers read compatibly that stores a case they do not know")
    func compatibleReaderMissesCase() {
        #expect(
            ModelChain<RoleV1>(name: "Roles", defaultKeys: []).problems.contains {
                $0.field == "role" && $0.reason.contains("does not know the stored case '2'")
            })
    }
}

private struct RoleV0: ModelVersion {
    static let version = 0
    let role: Role
}
private enum WiderRole: Int, Codable, Sendable, CaseIterable {
    case user = 0
    case admin = 1
    case owner = 2
}
private struct RoleV1: ModelVersion {
    typealias Predecessor = RoleV0
    static let version = 1
    static let oldestReader = 0
    let role: WiderRole
    let since: Int?
    init(migrating previous: RoleV0, context: MigrationContext) {
        role = WiderRole(rawValue: previous.role.rawValue) ?? .user
        since = nil
    }
}

/// An enum with associated values that declares no cases, gaining one in version 1.
private enum Plan: Codable, Sendable {
    case local(minutes: Int)
}
private enum WiderPlan: Codable, Sendable {
    case local(minutes: Int)
    case cloud(account: String, minutes: Int)
}
private struct PlanV0: ModelVersion {
    static let version = 0
    let plan: Plan
}
private struct PlanV1: ModelVersion {
    typealias Predecessor = PlanV0
    static let version = 1
    static let oldestReader = 0
    let plan: WiderPlan
    init(migrating previous: PlanV0, context: MigrationContext) {
        switch previous.plan {
        case let .local(minutes): plan = .local(minutes: minutes)
        }
    }
}
/// A raw-value enum that is not CaseIterable, gaining a case in version 1.
private enum Level: String, Codable, Sendable {
    case low
}
private enum WiderLevel: String, Codable, Sendable {
    case low, high
}
private struct LevelV0: ModelVersion {
    static let version = 0
    let level: Level
}
private struct LevelV1: ModelVersion {
    typealias Predecessor = LevelV0
    static let version = 1
    static let oldestReader = 0
    let level: WiderLevel
    init(migrating previous: LevelV0, context: MigrationContext) { level = .low }
}
