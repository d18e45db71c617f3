import Foundation
import Keepsake
import KeepsakeMemory
import KeepsakeTesting
import Testing

// An app whose release 1.0 stored dates with `.secondsSince1970`, top-level and nested.
struct SessionV0: Codable, Sendable, Equatable {
    var started: Date
    var pings: [Date]
}

struct AccountV0: ModelVersion, Equatable {
    static let version = 0
    static let dateEncoding = DateEncoding.secondsSince1970
    var lastLogin: Date
    var expires: Date?
    var session: SessionV0
    var byDevice: [String: Date]
}

struct AccountV1: ModelVersion, Equatable {
    typealias Predecessor = AccountV0
    static let version = 1
    var lastLogin: Date
    var expires: Date?
    var session: SessionV0
    var byDevice: [String: Date]
    var plan: String

    init(migrating previous: AccountV0, context: MigrationContext) {
        lastLogin = previous.lastLogin
        expires = previous.expires
        session = previous.session
        byDevice = previous.byDevice
        plan = "free"
    }
}

enum Account {
    static let chain = ModelChain<AccountV1>(name: "Account", defaultKeys: ["account"])
    /// Release 1.0's own chain: version 0 is its latest, so it writes `.secondsSince1970`.
    static let firstRelease = ModelChain<AccountV0>(name: "Account", defaultKeys: ["account"])
}

private let dateContext = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "d")

/// One date field in a given form.
protocol StampVersion: ModelVersion, Equatable {
    var at: Date { get }
    init(at: Date)
}

struct MillisecondStamp: StampVersion {
    static let version = 0
    static let dateEncoding = DateEncoding.millisecondsSince1970
    var at: Date
}

struct WholeSecondStamp: StampVersion {
    static let version = 0
    static let dateEncoding = DateEncoding.iso8601
    var at: Date
}

struct FractionStamp: StampVersion {
    static let version = 0
    static let dateEncoding = DateEncoding.iso8601WithFractionalSeconds
    var at: Date
}

struct FormattedStamp: StampVersion {
    static let version = 0
    static let dateEncoding = DateEncoding.formatted("yyyy-MM-dd HH:mm:ss")
    var at: Date
}

struct DefaultStamp: StampVersion {
    static let version = 0
    var at: Date
}

struct YearOnlyStamp: StampVersion {
    static let version = 0
    static let dateEncoding = DateEncoding.formatted("yyyy")
    var at: Date
}

struct DayStamp: StampVersion {
    static let version = 0
    static let dateEncoding = DateEncoding.formatted("yyyy-MM-dd")
    var at: Date
}

/// A version declaring version 0's readers compatible, though it stores dates another way.
struct MismatchedReaderV1: ModelVersion {
    typealias Predecessor = DefaultStamp
    static let version = 1
    static let oldestReader = 0
    static let dateEncoding = DateEncoding.secondsSince1970
    var at: Date
    init(migrating previous: DefaultStamp, context: MigrationContext) { at = previous.at }
}

private func stamp<V: StampVersion>(_ type: V.Type, _ stored: String) throws -> V {
    try ModelChain<V>(name: "Stamp", defaultKeys: ["stamp"]).read(bytes(#"{"at":\#(stored)}"#), context: dateContext)
        .value
}

private func written<V: StampVersion>(_ value: V) throws -> String {
    String(decoding: try ModelChain<V>(name: "Stamp", defaultKeys: ["stamp"]).encode(value), as: UTF8.self)
}

/// The decoding cause of a refused record, or `nil` when it was read.
private func refusal<V: StampVersion>(_ type: V.Type, _ stored: String) -> (
    code: KeepsakeError.Code, path: String, reason: String
)? {
    do {
        _ = try stamp(type, stored)
        return nil
    } catch let error as KeepsakeError {
        guard case let .decoding(path, reason)? = error.cause else { return (error.code, "", error.message) }
        return (error.code, path, reason)
    } catch {
        return (.io, "", "\(error)")
    }
}

@Suite("Declared date encodings")
struct DateEncodingTests {
    /// 2024-05-01T10:00:00Z.
    static let mayFirst = Date(timeIntervalSince1970: 1_714_557_600)

    @Test(
        "a bare V0 stored with .secondsSince1970 migrates with every date exact, nested ones too, and is written back as ISO 8601"
    )
    func secondsSince1970Migrates() throws {
        let stored = bytes(
            #"{"lastLogin":1714557600,"session":{"started":1714557600.5,"pings":[0,-1.25,1.7145576e9]},"byDevice":{"phone":1714557601}}"#
        )
        let store = InMemoryStore(name: "accounts", contents: ["account": stored])
        let reports = try Migrator(store: store, chains: [Account.chain.erased], context: dateContext).run()
        #expect(reports.map(\.state) == [.migrated])
        let written = try #require(try store.data(forKey: "account"))
        #expect(
            String(decoding: written, as: UTF8.self)
                == #"{"data":{"byDevice":{"phone":"2024-05-01T10:00:01.000Z"},"lastLogin":"2024-05-01T10:00:00.000Z","plan":"free","session":{"pings":["1970-01-01T00:00:00.000Z","1969-12-31T23:59:58.750Z","2024-05-01T10:00:00.000Z"],"started":"2024-05-01T10:00:00.500Z"}},"schema":"Account","version":1}"#
        )
        let account = try Account.chain.read(written, context: dateContext).value
        #expect(account.lastLogin == Self.mayFirst)
        #expect(account.lastLogin.timeIntervalSince1970 == 1_714_557_600)
        #expect(account.session.started == Date(timeIntervalSinceReferenceDate: 736_250_400.5))
        #expect(
            account.session.pings == [
                Date(timeIntervalSinceReferenceDate: -978_307_200),
                Date(timeIntervalSinceReferenceDate: -978_307_201.25),
                Self.mayFirst
            ])
        #expect(account.byDevice == ["phone": Date(timeIntervalSince1970: 1_714_557_601)])
    }

    @Test("without the declaration the same number would be 2055: the default reads seconds since 2001")
    func defaultIsFoundations() throws {
        #expect(try stamp(DefaultStamp.self, "1714557600").at == Date(timeIntervalSinceReferenceDate: 1_714_557_600))
        #expect(try stamp(DefaultStamp.self, #""2024-05-01T10:00:00Z""#).at == Self.mayFirst)
        #expect(try written(DefaultStamp(at: Self.mayFirst)).contains(#""at":"2024-05-01T10:00:00.000Z""#))
    }

    @Test(
        "a release whose latest version is .secondsSince1970 writes numbers since 1970, exactly, and reads them back equal"
    )
    func secondsSince1970Writes() throws {
        let value = AccountV0(
            lastLogin: Date(timeIntervalSince1970: 1_714_557_600.25), expires: nil,
            session: SessionV0(started: Self.mayFirst, pings: [Date(timeIntervalSinceReferenceDate: -978_307_201.5)]),
            byDevice: [:])
        let text = String(decoding: try Account.firstRelease.encode(value), as: UTF8.self)
        #expect(
            text
                == #"{"data":{"byDevice":{},"lastLogin":1714557600.25,"session":{"pings":[-1.5],"started":1714557600}},"schema":"Account","version":0}"#
        )
        #expect(try Account.firstRelease.read(bytes(text), context: dateContext).value == value)
        // The next release reads that envelope as version 0, in version 0's form.
        #expect(try Account.chain.read(bytes(text), context: dateContext).value.lastLogin == value.lastLogin)
        // Dates from a clock (finer than a millisecond) round-trip bit for bit.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let seconds = Double.random(in: -2e10...2e10, using: &generator)
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let record = AccountV0(
                lastLogin: date, expires: date, session: SessionV0(started: date, pings: [date]), byDevice: ["d": date])
            let encoded = try Account.firstRelease.encode(record)
            #expect(try Account.firstRelease.read(encoded, context: dateContext).value == record, "\(seconds)")
        }
    }

    @Test("milliseconds since 1970 are read and written exactly")
    func milliseconds() throws {
        #expect(
            try stamp(MillisecondStamp.self, "1714557600123").at
                == Date(timeIntervalSinceReferenceDate: 736_250_400.123))
        #expect(try stamp(MillisecondStamp.self, "1714557600000").at == Self.mayFirst)
        #expect(try stamp(MillisecondStamp.self, "-1500").at == Date(timeIntervalSinceReferenceDate: -978_307_201.5))
        #expect(
            try written(MillisecondStamp(at: Date(timeIntervalSinceReferenceDate: 736_250_400.123)))
                == #"{"data":{"at":1714557600123},"schema":"Stamp","version":0}"#)
        #expect(
            try written(MillisecondStamp(at: Date(timeIntervalSinceReferenceDate: 700_000_000.1234567)))
                == #"{"data":{"at":1678307200123.4567},"schema":"Stamp","version":0}"#)
        for _ in 0..<500 {
            let value = MillisecondStamp(at: Date(timeIntervalSinceReferenceDate: .random(in: -6e10...2e11)))
            #expect(
                try stamp(MillisecondStamp.self, String(try written(value).dropFirst(14).prefix { $0 != "}" })) == value
            )
        }
    }

    @Test(".iso8601 is whole seconds: a fraction is refused when read and cannot be written")
    func wholeSeconds() throws {
        #expect(try stamp(WholeSecondStamp.self, #""2024-05-01T12:00:00+02:00""#).at == Self.mayFirst)
        #expect(
            try written(WholeSecondStamp(at: Self.mayFirst))
                == #"{"data":{"at":"2024-05-01T10:00:00Z"},"schema":"Stamp","version":0}"#)
        let refused = refusal(WholeSecondStamp.self, #""2024-05-01T10:00:00.5Z""#)
        #expect(refused?.code == .corruptRecord)
        #expect(refused?.path == "at")
        #expect(refused?.reason.contains("fraction of a second") == true)
        #expect { try written(WholeSecondStamp(at: Self.mayFirst.addingTimeInterval(0.5))) } throws: { error in
            guard let error = error as? KeepsakeError, case let .other(cause)? = error.cause else { return false }
            return error.code == .encodingFailed && cause.hasPrefix("at data.at: ") && cause.contains("fraction")
        }
    }

    @Test(".iso8601WithFractionalSeconds reads with or without a fraction and writes at least milliseconds")
    func fractions() throws {
        #expect(
            try stamp(FractionStamp.self, #""2024-05-01T10:00:00.250Z""#).at == Self.mayFirst.addingTimeInterval(0.25))
        #expect(try stamp(FractionStamp.self, #""2024-05-01T10:00:00Z""#).at == Self.mayFirst)
        #expect(try written(FractionStamp(at: Self.mayFirst)).contains(#""2024-05-01T10:00:00.000Z""#))
        #expect(refusal(FractionStamp.self, "1714557600")?.reason.contains("but this is a number") == true)
    }

    @Test("a fixed format reads exactly what it writes, and nothing else")
    func formatted() throws {
        #expect(try stamp(FormattedStamp.self, #""2024-05-01 10:00:00""#).at == Self.mayFirst)
        #expect(try written(FormattedStamp(at: Self.mayFirst)).contains(#""at":"2024-05-01 10:00:00""#))
        for bad in [
            #""2024-5-1 10:00:00""#, #""2024-05-01T10:00:00Z""#, #""2024-05-01 10:00:00 ""#, #""2024-02-30 10:00:00""#,
            "1714557600"
        ] {
            #expect(refusal(FormattedStamp.self, bad)?.code == .corruptRecord, "\(bad)")
        }
        #expect(throws: KeepsakeError.self) { try written(FormattedStamp(at: Self.mayFirst.addingTimeInterval(0.5))) }
    }

    @Test("a value of the other kind than the declared form is corruptRecord naming the nested field")
    func mismatchNamesTheField() {
        let stored = bytes(
            #"{"lastLogin":1714557600,"session":{"started":"2024-05-01T10:00:00Z","pings":[]},"byDevice":{}}"#)
        #expect { try Account.chain.read(stored, context: dateContext) } throws: { error in
            guard let error = error as? KeepsakeError, case let .decoding(path, reason)? = error.cause else {
                return false
            }
            return error.code == .corruptRecord && path == "session.started"
                && reason.contains("secondsSince1970") && reason.contains("but this is a string")
        }
    }

    @Test(
        "validation refuses a format that cannot hold a date to the second, and compatible readers that read dates another way"
    )
    func validation() throws {
        let yearOnly = ModelChain<YearOnlyStamp>(name: "Stamp", defaultKeys: [])
        #expect(yearOnly.problems.contains { $0.reason.contains("\"yyyy\"") })
        #expect(ModelChain<DayStamp>(name: "Stamp", defaultKeys: []).problems.isEmpty)
        #expect(try stamp(DayStamp.self, #""2024-05-01""#).at == Self.mayFirst.addingTimeInterval(-36_000))
        #expect(throws: KeepsakeError.self) { try written(DayStamp(at: Self.mayFirst)) }
        let mismatched = ModelChain<MismatchedReaderV1>(name: "Stamp", defaultKeys: [])
        #expect(mismatched.problems.contains { $0.reason.contains("reads dates as deferredToDate") })
        #expect(Account.chain.problems.isEmpty)
        #expect(Account.chain.versionSummaries.map(\.dateEncoding) == [.secondsSince1970, .deferredToDate])
    }
}

@Suite("Dates finer than a Date holds")
struct FineDateTests {
    @Test(
        "a stored date a Date cannot hold exactly is refused, never rounded",
        arguments: [
            #""2024-05-01T10:00:00.1234567891234Z""#, "736250400.1234567891234",
            #""2001-01-01T00:00:00.10000000000000001Z""#,
            "1e-320", #""2001-01-01T00:00:00.000000000000000000001Z""#
        ])
    func refused(_ stored: String) {
        let refused = refusal(DefaultStamp.self, stored)
        #expect(refused?.code == .corruptRecord)
        #expect(refused?.path == "at")
        #expect(refused?.reason.contains("Invalid date: ") == true)
    }

    @Test("dates a Date holds exactly are read as written, however many digits they need")
    func kept() throws {
        #expect(
            try stamp(DefaultStamp.self, #""2023-03-08T20:26:40.1234567Z""#).at.timeIntervalSinceReferenceDate
                == 700_000_000.1234567)
        #expect(
            try stamp(DefaultStamp.self, #""2024-05-01T10:00:00.1230000000Z""#).at.timeIntervalSinceReferenceDate
                == 736_250_400.123)
        #expect(try stamp(DefaultStamp.self, "0.000123456").at.timeIntervalSinceReferenceDate == 0.000_123_456)
        #expect(
            try stamp(DefaultStamp.self, "7.000000001234567e8").at.timeIntervalSinceReferenceDate == 700_000_000.1234567
        )
    }

    @Test("a date needing more than 20 fraction digits cannot be written: encodingFailed, not a 341-character string")
    func tinyDateRefusedOnWrite() {
        #expect {
            try written(DefaultStamp(at: Date(timeIntervalSinceReferenceDate: .leastNonzeroMagnitude * 2025)))
        } throws: { error in
            (error as? KeepsakeError)?.code == .encodingFailed
        }
        #expect(throws: Never.self) {
            try written(DefaultStamp(at: Date(timeIntervalSinceReferenceDate: 0.001 + 1e-17)))
        }
    }
}
