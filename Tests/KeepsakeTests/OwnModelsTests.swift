import Foundation
import Keepsake
import KeepsakeTesting
import Testing

// An app's own model, written the way an app developer would: ordinary Codable field types and
// no key list anywhere.

private enum Appearance: String, Codable, Sendable { case light, dark, system }  // not CaseIterable
private enum Density: Int, Codable, Sendable, CaseIterable {
    case compact = 1
    case regular = 2
}
private enum Sync: Codable, Sendable, Equatable {  // associated values
    case off
    case every(minutes: Int)
    case server(URL, token: String)
}
private struct Window: Codable, Sendable, Equatable {
    var width: Int
    var height: Int
    var theme: Appearance
}

private struct ProfileV0: ModelVersion, Equatable {
    static let version = 0
    var id: UUID
    var name: String
    var theme: Appearance
}

private struct ProfileV1: ModelVersion, Equatable {
    typealias Predecessor = ProfileV0
    static let version = 1
    var id: UUID
    var displayName: String
    var theme: Appearance
    var density: Density
    var homepage: URL?
    var created: Date
    var avatar: Data
    var balance: Decimal
    var window: Window
    var sync: Sync
    var tags: [String]
    var limits: [String: Int]
    var nickname: String?

    init(
        id: UUID, displayName: String, theme: Appearance, density: Density, homepage: URL?, created: Date, avatar: Data,
        balance: Decimal, window: Window, sync: Sync, tags: [String], limits: [String: Int], nickname: String?
    ) {
        self.id = id
        self.displayName = displayName
        self.theme = theme
        self.density = density
        self.homepage = homepage
        self.created = created
        self.avatar = avatar
        self.balance = balance
        self.window = window
        self.sync = sync
        self.tags = tags
        self.limits = limits
        self.nickname = nickname
    }

    init(migrating previous: ProfileV0, context: MigrationContext) {
        self.init(
            id: previous.id, displayName: previous.name, theme: previous.theme, density: .regular, homepage: nil,
            created: context.now, avatar: Data(), balance: 0, window: Window(width: 800, height: 600, theme: .system),
            sync: .off, tags: [], limits: [:], nickname: nil)
    }
}

/// Custom CodingKeys and a hand-written `init(from:)` that fills a default.
private struct ProfileV2: ModelVersion, Equatable {
    typealias Predecessor = ProfileV1
    static let version = 2
    var id: UUID
    var displayName: String
    var theme: Appearance
    var window: Window
    var sync: Sync
    var locale: String

    enum CodingKeys: String, CodingKey {
        case id = "profile_id"
        case displayName = "display_name"
        case theme, window, sync, locale
    }

    init(id: UUID, displayName: String, theme: Appearance, window: Window, sync: Sync, locale: String) {
        self.id = id
        self.displayName = displayName
        self.theme = theme
        self.window = window
        self.sync = sync
        self.locale = locale
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        displayName = try container.decode(String.self, forKey: .displayName)
        theme = try container.decode(Appearance.self, forKey: .theme)
        window = try container.decode(Window.self, forKey: .window)
        sync = try container.decode(Sync.self, forKey: .sync)
        locale = try container.decodeIfPresent(String.self, forKey: .locale) ?? "en"
    }

    init(migrating previous: ProfileV1, context: MigrationContext) {
        self.init(
            id: previous.id, displayName: previous.displayName, theme: previous.theme, window: previous.window,
            sync: previous.sync, locale: "en")
    }
}

private enum Profile {
    static let chain = ModelChain<ProfileV2>(name: "Profile", defaultKeys: ["profile"])
}

private let profileID = UUID(uuidString: "6F1C2B9A-7E55-4D7B-9B0E-2F4C1A3D5E6F")!

@Suite("An app's own models: any Codable field, no key list")
struct OwnModelsTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000))

    @Test(
        "the stored keys of enum, UUID, URL, Date, Data, Decimal, nested and custom-keyed fields are read off Decodable"
    )
    func keysAreInferred() throws {
        try ChainValidation.validate(Profile.chain)
        let keys = Profile.chain.versionSummaries.map(\.storedKeys)
        #expect(keys[0] == StoredKeys(required: ["id", "name", "theme"]))
        #expect(
            keys[1]
                == StoredKeys(
                    required: [
                        "id", "displayName", "theme", "density", "created", "avatar", "balance", "window", "sync",
                        "tags",
                        "limits"
                    ],
                    optional: ["homepage", "nickname"]))
        #expect(
            keys[2]
                == StoredKeys(
                    required: ["profile_id", "display_name", "theme", "window", "sync"],
                    optional: ["locale"]))
    }

    @Test("a bare V0 record is recognised by its keys and migrated through both steps")
    func bareRecord() throws {
        let stored = #"{"id":"6F1C2B9A-7E55-4D7B-9B0E-2F4C1A3D5E6F","name":"Ada","theme":"dark"}"#
        let record = try Profile.chain.read(Data(stored.utf8), context: context)
        #expect(record.storedVersion == 0)
        #expect(record.form == .bare)
        #expect(
            record.value
                == ProfileV2(
                    id: profileID, displayName: "Ada", theme: .dark,
                    window: Window(width: 800, height: 600, theme: .system), sync: .off, locale: "en"))
    }

    @Test("an inline-version V1 record with every field type reads back exactly")
    func inlineRecord() throws {
        let stored = """
            {"version":1,"id":"6F1C2B9A-7E55-4D7B-9B0E-2F4C1A3D5E6F","displayName":"Ada","theme":"light","density":1,
             "homepage":"https://example.com/ada","created":"2024-02-29T12:00:00.500Z","avatar":"AAEC","balance":12.75,
             "window":{"width":1024,"height":768,"theme":"dark"},"sync":{"server":{"_0":"https://sync.example.com","token":"t"}},
             "tags":["a","b"],"limits":{"notes":100},"nickname":"Countess"}
            """
        // A V1 type has no `version` field: the inline version is the form's, not the model's.
        let record = try Profile.chain.read(Data(stored.utf8), context: context)
        #expect(record.storedVersion == 1)
        #expect(record.form == .inlineVersion)
        #expect(record.value.sync == .server(URL(string: "https://sync.example.com")!, token: "t"))
        #expect(record.value.window == Window(width: 1024, height: 768, theme: .dark))
        #expect(record.value.theme == .light)
    }

    @Test("an envelope of the latest version with custom keys is current, and saving round-trips it byte for byte")
    func envelopeRecord() throws {
        let value = ProfileV2(
            id: profileID, displayName: "Ada", theme: .system,
            window: Window(width: 1, height: 2, theme: .light), sync: .every(minutes: 15), locale: "fr")
        let bytes = try Profile.chain.encode(value)
        #expect(
            String(decoding: bytes, as: UTF8.self) == """
                {"data":{"display_name":"Ada","locale":"fr","profile_id":"6F1C2B9A-7E55-4D7B-9B0E-2F4C1A3D5E6F",\
                "sync":{"every":{"minutes":15}},"theme":"system","window":{"height":2,"theme":"light","width":1}},\
                "schema":"Profile","version":2}
                """)
        guard case let .current(record) = Profile.chain.outcome(of: bytes, context: context) else {
            Issue.record("expected a current record")
            return
        }
        #expect(record.value == value)
        #expect(record.form == .envelope)
    }

    @Test("an enum value the version does not know is a corrupt record naming the field, not a crash")
    func unknownEnumValue() throws {
        let stored = #"{"id":"6F1C2B9A-7E55-4D7B-9B0E-2F4C1A3D5E6F","name":"Ada","theme":"sepia"}"#
        guard case let .failed(error, stored: info) = Profile.chain.outcome(of: Data(stored.utf8), context: context)
        else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .corruptRecord)
        #expect(info.version == 0)
        #expect(error.cause?.description.contains("theme") == true)
    }
}

// MARK: What validation catches

private struct Email: Codable, Sendable {
    let address: String
    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard text.contains("@") else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an address"))
        }
        address = text
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(address)
    }
}

private struct ContactV0: ModelVersion {
    static let version = 0
    let name: String
}

/// A validating field type the probe cannot build a placeholder for.
private struct ContactV1: ModelVersion {
    typealias Predecessor = ContactV0
    static let version = 1
    let name: String
    let email: Email
    init(migrating previous: ContactV0, context: MigrationContext) throws {
        struct NoEmail: Error {}
        throw NoEmail()
    }
}

private struct AmbiguousV0: ModelVersion {
    static let version = 0
    let name: String
    let note: String?
}

private struct AmbiguousV1: ModelVersion {
    typealias Predecessor = AmbiguousV0
    static let version = 1
    let name: String
    let note: String
    init(migrating previous: AmbiguousV0, context: MigrationContext) {
        name = previous.name
        note = previous.note ?? ""
    }
}

/// Writes a key its decoder never reads.
private struct LopsidedV0: ModelVersion {
    static let version = 0
    let name: String
    enum CodingKeys: String, CodingKey { case name, fullName }
    init(from decoder: any Decoder) throws {
        name = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .name)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .fullName)
    }
}

@Suite("Chain validation fails tests, never traps the app")
struct ChainValidationTests {
    @Test("a field whose shape cannot be probed is a thrown error naming the type and the field")
    func unknowableField() throws {
        let chain = ModelChain<ContactV1>(name: "Contact", defaultKeys: ["contact"])  // builds: no trap
        #expect(chain.versionSummaries[1].storedKeys == nil)
        #expect {
            try ChainValidation.validate(chain)
        } throws: { error in
            let error = error as! ChainError
            return error.chain == "Contact" && error.version == 1 && error.typeName == "ContactV1"
                && error.field == "email" && error.description.contains("storedKeys")
        }
    }

    @Test("at run time a version whose keys cannot be probed is still matched, by decoding the bare record")
    func unknowableFieldStillReads() throws {
        let chain = ModelChain<ContactV1>(name: "Contact", defaultKeys: ["contact"])
        let context = MigrationContext.fixed(now: Date())
        let record = try chain.read(Data(#"{"name":"Ada","email":"ada@example.com"}"#.utf8), context: context)
        #expect(record.storedVersion == 1)
        #expect(record.value.email.address == "ada@example.com")
        // V0 {name} is matched by its known keys, and V1's decode does not read it all.
        let old = chain.outcome(of: Data(#"{"name":"Ada"}"#.utf8), context: context)
        #expect(old.stored?.version == 0)
        #expect(old.error?.code == .migrationFailed)
        // A key neither version reads matches nothing.
        let unknown = chain.outcome(of: Data(#"{"name":"Ada","email":"a@b","phone":"1"}"#.utf8), context: context)
        #expect(unknown.error?.code == .unrecognisedRecord)
    }

    @Test("two versions that one bare record could match are reported, naming both")
    func ambiguousVersions() throws {
        let chain = ModelChain<AmbiguousV1>(name: "Ambiguous", defaultKeys: ["a"])
        #expect(ChainValidation.indistinguishableBareVersions(chain).map { [$0.0, $0.1] } == [[0, 1]])
        #expect {
            try ChainValidation.validate(chain)
        } throws: { error in
            let error = error as! ChainError
            return error.chain == "Ambiguous" && error.version == 1
                && error.reason.contains("versions 0 (AmbiguousV0") && error.reason.contains("and 1 (AmbiguousV1")
        }
        // And at run time such a record is refused, not guessed.
        let outcome = chain.outcome(of: Data(#"{"name":"x","note":"y"}"#.utf8), context: .fixed(now: Date()))
        #expect(outcome.error?.code == .ambiguousRecord)
    }

    @Test(
        "a version that only adds an optional key fails validation, naming both ways out, unless it was never stored bare"
    )
    func onlyOptionalKeysAdded() throws {
        let undeclared = ModelChain<NoteV1>(name: "Note", defaultKeys: ["note"])
        let problem = try #require(undeclared.problems.first, "V0 and V1 can match one bare record")
        #expect(problem.version == 1)
        #expect(problem.reason.contains("declare `static let storedWithoutVersion = false` in it"), "\(problem)")
        #expect(problem.reason.contains("`static let oldestReader = 0`"))

        let chain = ModelChain<EnvelopeOnlyNoteV1>(name: "Note", defaultKeys: ["note"])
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        #expect(ChainValidation.indistinguishableBareVersions(chain).isEmpty)
        #expect(chain.versionSummaries.map(\.storedWithoutVersion) == [true, false])
        let context = MigrationContext.fixed(now: Date())
        // A bare record is read as the version that was stored bare, and migrated.
        let bare = try chain.read(Data(#"{"title":"Ada"}"#.utf8), context: context)
        #expect(bare.storedVersion == 0 && bare.value.title == "Ada" && bare.value.pinned == nil)
        let envelope = try chain.read(
            Data(#"{"data":{"pinned":true,"title":"Bo"},"schema":"Note","version":1}"#.utf8), context: context)
        #expect(envelope.storedVersion == 1 && envelope.value.pinned == true)
        // A bare record with V1's key is no version's: V1 was never stored bare.
        let stray = chain.outcome(of: Data(#"{"title":"Cy","pinned":true}"#.utf8), context: context)
        #expect(stray.error?.code == .unrecognisedRecord)
    }

    @Test("a version that writes a key it does not read is reported with the key")
    func lopsided() throws {
        #expect {
            try ChainValidation.validate(LopsidedV0.self, name: "Lopsided")
        } throws: { error in
            let error = error as! ChainError
            return error.field == "fullName" && error.typeName == "LopsidedV0"
        }
    }

    @Test("the sample chains pass validation with nothing to report")
    func samplesAreClean() {
        #expect(ModelChain<ProfileV2>(name: "Profile", defaultKeys: []).problems.isEmpty)
    }
}

private struct NoteV0: ModelVersion {
    static let version = 0
    var title: String
}
/// Adds only an optional key, and does not say it was never stored bare.
private struct NoteV1: ModelVersion {
    typealias Predecessor = NoteV0
    static let version = 1
    var title: String
    var pinned: Bool?
    init(migrating previous: NoteV0, context: MigrationContext) { title = previous.title }
}
/// The same, first released with Keepsake: only ever stored in an envelope.
private struct EnvelopeOnlyNoteV1: ModelVersion {
    typealias Predecessor = NoteV0
    static let version = 1
    static let storedWithoutVersion = false
    var title: String
    var pinned: Bool?
    init(migrating previous: NoteV0, context: MigrationContext) { title = previous.title }
}
