import Foundation
import Keepsake
import KeepsakeMemory
import Migrations
import Synchronization
import Testing

private struct AmbiguousV0: ModelVersion {
    static let version = 0
    let a: String
}
private struct AmbiguousV1: ModelVersion {
    typealias Predecessor = AmbiguousV0
    static let version = 1
    let a: String
    init(migrating previous: AmbiguousV0, context: MigrationContext) { a = previous.a + "!" }
}

private struct FailingV0: ModelVersion {
    static let version = 0
    let n: Int
}
private struct FailingV1: ModelVersion {
    typealias Predecessor = FailingV0
    static let version = 1
    let n: Int
    struct Refused: Error {}
    init(migrating previous: FailingV0, context: MigrationContext) throws {
        guard previous.n >= 0 else { throw Refused() }
        n = previous.n
    }
}

/// Encodes differently every time: its round trip can never verify.
private final class Counter: Sendable {
    let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
}
private let unstableCounter = Counter()
private struct UnstableV0: ModelVersion {
    static let version = 0
    let n: Int
}
private struct UnstableV1: ModelVersion {
    typealias Predecessor = UnstableV0
    static let version = 1
    let n: Int
    init(n: Int) { self.n = n }
    init(migrating previous: UnstableV0, context: MigrationContext) { n = previous.n }
    init(from decoder: any Decoder) throws {
        n = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .n)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(unstableCounter.next(), forKey: .n)
    }
    enum CodingKeys: String, CodingKey { case n }
}

/// Equatable, but its encoding leaves out `note`, which decoding fills in as "".
private struct LossyV0: ModelVersion {
    static let version = 0
    let n: Int
}
private struct LossyV1: ModelVersion, Equatable {
    typealias Predecessor = LossyV0
    static let version = 1
    let n: Int
    let note: String
    init(n: Int, note: String) {
        self.n = n
        self.note = note
    }
    init(migrating previous: LossyV0, context: MigrationContext) { self.init(n: previous.n, note: "from v0") }
    init(from decoder: any Decoder) throws {
        n = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .n)
        note = ""
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(n, forKey: .n)
    }
    enum CodingKeys: String, CodingKey { case n }
}

@Suite("Reading stored records")
struct RecordCodecTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev")

    /// Loads `stored` under "k" and returns the error, checking the bytes were left untouched.
    func loadError<M>(_ chain: ModelChain<M>, _ stored: String) throws -> KeepsakeError {
        let store = InMemoryStore(name: "codec", contents: ["k": bytes(stored)])
        do {
            let state = try Vault(store: store, context: context).load(chain, forKey: "k")
            Issue.record("expected an error, loaded \(state)")
            throw CancellationError()
        } catch let error as KeepsakeError {
            #expect(try store.data(forKey: "k") == bytes(stored), "the stored bytes must be untouched")
            #expect(error.store == "memory:codec")
            #expect(error.key == "k")
            return error
        }
    }

    func load<M>(_ chain: ModelChain<M>, _ stored: String) throws -> (LoadedRecord<M>?, Data?) {
        let store = InMemoryStore(contents: ["k": bytes(stored)])
        let state = try Vault(store: store, context: context).load(chain, forKey: "k")
        return (state, try store.data(forKey: "k"))
    }

    @Test("a bare {alias, age, email} is Person V2, not V3, though V3's decoder would accept it")
    func subsetTrap() throws {
        let (state, written) = try load(Person.chain, #"{"alias":"Countess","age":"36","email":"a@b.c"}"#)
        #expect(state?.value == PersonV3(alias: "Countess", email: "a@b.c") && state?.storedVersion == 2)
        #expect(written == bytes(#"{"data":{"alias":"Countess","email":"a@b.c"},"schema":"Person","version":3}"#))
    }

    @Test("a bare {alias, email} is Person V3 and is not rewritten")
    func bareCurrentIsNotRewritten() throws {
        let stored = #"{"email":"a@b.c","alias":"Countess"}"#
        let (state, written) = try load(Person.chain, stored)
        #expect(state?.value == PersonV3(alias: "Countess", email: "a@b.c") && state?.wasMigrated == false)
        #expect(written == bytes(stored))
    }

    @Test("a bare record matching two versions is ambiguous")
    func ambiguous() throws {
        let chain = ModelChain<AmbiguousV1>(name: "Amb", defaultKeys: ["k"])
        let error = try loadError(chain, #"{"a":"x"}"#)
        #expect(error.code == .ambiguousRecord)
        #expect(error.message.contains("v0, v1"))
    }

    @Test("a bare record matching no version is unrecognised, and the message lists the layouts")
    func unrecognised() throws {
        let error = try loadError(Person.chain, #"{"name":"Ada"}"#)
        #expect(error.code == .unrecognisedRecord)
        #expect(error.message.contains("{name}"))
        #expect(error.message.contains("v0 {age, name}"))
    }

    @Test("a record with an unknown extra field is not guessed at")
    func extraField() throws {
        #expect(try loadError(Person.chain, #"{"name":"Ada","age":"36","phone":"1"}"#).code == .unrecognisedRecord)
        let inline = try loadError(TrialInfo.chain, #"{"version":0,"startDate":1,"extra":true}"#)
        #expect(inline.code == .corruptRecord)
        #expect(inline.message.contains("unknown extra"))
    }

    @Test(
        "records from a newer release are reported in every form and never overwritten",
        arguments: [
            #"{"schema":"Person","version":4,"data":{"alias":"a","email":"e","phone":"p"}}"#,
            #"{"version":4,"alias":"a"}"#,
            #""{\"schema\":\"Person\",\"version\":9,\"data\":{}}""#
        ])
    func newer(_ stored: String) throws {
        let error = try loadError(Person.chain, stored)
        #expect(error.code == .newerVersion)
        #expect(error.message.contains("newer than this release knows"))
    }

    @Test("bytes that are not JSON are corrupt, with the syntax error's position")
    func notJSON() throws {
        let error = try loadError(Person.chain, #"{"name":"Ada","age":"#)
        #expect(error.code == .corruptRecord)
        guard case let .json(offset, _)? = error.cause else {
            Issue.record("expected a JSON cause, got \(String(describing: error.cause))")
            return
        }
        #expect(offset == 20)
    }

    @Test("a field of the wrong type is corrupt, naming the field but not the value")
    func wrongFieldType() throws {
        let error = try loadError(Person.chain, #"{"name":"Ada","age":36}"#)
        #expect(error.code == .corruptRecord)
        guard case let .decoding(path, _)? = error.cause else {
            Issue.record("expected a decoding cause")
            return
        }
        #expect(path == "age")
        #expect(!error.description.contains("36"))
    }

    @Test(
        "values that are not objects are rejected",
        arguments: [
            ("42", KeepsakeError.Code.unrecognisedRecord),
            ("[1,2]", .unrecognisedRecord),
            ("null", .unrecognisedRecord),
            (#""plain text""#, .corruptRecord),
            (#""[1"]"#, .corruptRecord)
        ])
    func wrongType(_ stored: String, _ code: KeepsakeError.Code) throws {
        #expect(try loadError(Person.chain, stored).code == code)
    }

    @Test("an envelope of another model is a schema mismatch")
    func schemaMismatch() throws {
        let error = try loadError(
            Person.chain,
            #"{"schema":"TrialInfo","version":2,"data":{"version":2,"startDate":0,"deviceId":"d"}}"#)
        #expect(error.code == .schemaMismatch)
    }

    @Test("an envelope whose data disagrees about the version is corrupt")
    func envelopeVersionDisagreement() throws {
        let error = try loadError(
            TrialInfo.chain,
            #"{"schema":"TrialInfo","version":1,"data":{"version":2,"startDate":0,"deviceId":"d","userId":"u"}}"#)
        #expect(error.code == .corruptRecord)
    }

    @Test("a bad date is corrupt", arguments: [#""yesterday""#, "true", #""2024-13-01T00:00:00Z""#])
    func badDate(_ date: String) throws {
        #expect(try loadError(TrialInfo.chain, #"{"version":0,"startDate":\#(date)}"#).code == .corruptRecord)
    }

    @Test("a step that throws leaves the record untouched and says which step failed")
    func failingStep() throws {
        let chain = ModelChain<FailingV1>(name: "Failing", defaultKeys: ["k"])
        let error = try loadError(chain, #"{"version":0,"n":-1}"#)
        #expect(error.code == .migrationFailed)
        #expect(error.message.contains("version 0 to 1"))
        #expect(error.underlying is FailingV1.Refused, "the step's own error is kept as it was thrown")
        #expect(error.underlying(as: FailingV1.Refused.self) != nil)
    }

    @Test("a model that does not survive a round trip is never written, but the load still returns it")
    func unstableEncoding() throws {
        let chain = ModelChain<UnstableV1>(name: "Unstable", defaultKeys: ["k"])
        let stored = bytes(#"{"version":0,"n":1}"#)
        let store = InMemoryStore(name: "codec", contents: ["k": stored])
        let loaded = try #require(try Vault(store: store, context: context).load(chain, forKey: "k"))
        #expect(loaded.value.n == 1)
        #expect(loaded.storedVersion == 0)
        guard case let .failed(error) = loaded.writeBack else {
            Issue.record("expected a failed write-back, got \(loaded.writeBack)")
            return
        }
        #expect(error.code == .verificationFailed)
        #expect(error.store == "memory:codec" && error.key == "k")
        #expect(try store.data(forKey: "k") == stored, "the stored bytes must be untouched")
    }

    @Test("an Equatable model whose encoding drops a field is never written: the value read back is compared")
    func lossyEncoding() throws {
        // Encoding without `note` and decoding it back as "" writes the same bytes twice over, so
        // comparing bytes alone would pass; comparing the value read back with the value does not.
        let chain = ModelChain<LossyV1>(name: "Lossy", defaultKeys: ["k"])
        let stored = bytes(#"{"version":0,"n":1}"#)
        let store = InMemoryStore(name: "codec", contents: ["k": stored])
        let loaded = try #require(try Vault(store: store, context: context).load(chain, forKey: "k"))
        #expect(loaded.value == LossyV1(n: 1, note: "from v0"))
        guard case let .failed(error) = loaded.writeBack else {
            Issue.record("expected a failed write-back, got \(loaded.writeBack)")
            return
        }
        #expect(error.code == .verificationFailed && error.message.contains("does not read back as the value"))
        #expect(try store.data(forKey: "k") == stored, "the stored bytes must be untouched")
        #expect(try chain.encode(LossyV1(n: 2, note: "")).count > 0, "a value with nothing to lose is written")
    }

    @Test("loading again after a migration finds the record current and writes nothing")
    func idempotent() throws {
        let store = InMemoryStore(contents: ["trialInfo": bytes(#"{"version":0,"startDate":700000000.5}"#)])
        let first = try Vault(store: store, context: context).load(TrialInfo.chain)
        let afterFirst = try store.data(forKey: "trialInfo")
        let second = try Vault(store: store, context: context).load(TrialInfo.chain)
        let start = Date(timeIntervalSinceReferenceDate: 700_000_000.5)
        #expect(first?.value == TrialInfoV2(startDate: start, deviceId: "dev") && first?.storedVersion == 0)
        #expect(second?.value == TrialInfoV2(startDate: start, deviceId: "dev") && second?.wasMigrated == false)
        #expect(try store.data(forKey: "trialInfo") == afterFirst)
    }

    @Test("a load without write-back migrates in memory only")
    func inMemoryOnly() throws {
        let stored = #"{"name":"Ada","age":"36"}"#
        let store = InMemoryStore(contents: ["person": bytes(stored)])
        let state = try Vault(store: store, context: context, options: .init(writeBack: false)).load(Person.chain)
        #expect(state?.writeBack == .skipped)
        #expect(state?.value == PersonV3(alias: "Ada", email: "---") && state?.storedVersion == 0)
        #expect(try store.data(forKey: "person") == bytes(stored))
    }

    @Test("an absent key is absent, not an error")
    func absent() throws {
        #expect(try Vault(store: InMemoryStore(), context: context).load(Person.chain) == nil)
    }

    @Test("saving stores the latest version in a sorted envelope with ISO 8601 dates")
    func save() throws {
        let store = InMemoryStore()
        try Vault(store: store).save(
            TrialInfoV2(startDate: Date(timeIntervalSince1970: 1_700_000_000.25), deviceId: "d"),
            in: TrialInfo.chain)
        #expect(
            try store.data(forKey: "trialInfo")
                == bytes(
                    #"{"data":{"deviceId":"d","startDate":"2023-11-14T22:13:20.250Z","version":2},"schema":"TrialInfo","version":2}"#
                ))
    }

    @Test("saving over an envelope of another model is refused")
    func saveOverOtherModel() throws {
        let other = #"{"schema":"TrialInfo","version":2,"data":{"version":2,"startDate":0,"deviceId":"d"}}"#
        let store = InMemoryStore(contents: ["person": bytes(other)])
        #expect(throws: KeepsakeError.self) {
            try Vault(store: store).save(PersonV3(alias: "a", email: "e"), in: Person.chain)
        }
        #expect(try store.data(forKey: "person") == bytes(other))
    }

    @Test("a numeric start date keeps its sub-second part exactly through every step and the write")
    func startDatePrecision() throws {
        let (state, written) = try load(TrialInfo.chain, #"{"version":0,"startDate":700000000.987654}"#)
        let start = Date(timeIntervalSinceReferenceDate: 700_000_000.987654)
        #expect(state?.value.startDate == start, "in memory the date is exact")
        #expect(
            String(decoding: written ?? Data(), as: UTF8.self).contains(#""startDate":"2023-03-08T20:26:40.987654Z""#))
        let reread = try Vault(store: InMemoryStore(contents: ["trialInfo": written ?? Data()]), context: context)
            .load(TrialInfo.chain)
        #expect(reread?.value.startDate == start, "the written date reads back equal")
    }
}
