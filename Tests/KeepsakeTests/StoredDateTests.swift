import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import Migrations
import Testing

/// Dates in stored records: read exactly and written back identically, or that record's typed
/// error — never a trap, never a silent change.
@Suite("Stored dates")
struct StoredDateTests {
    let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 1_700_000_000), deviceIdentity: "device-1")

    /// What a hostile or broken store can hold in a TrialInfo record's `startDate`.
    static let hostileDates = [
        "1e400", "-1e400", "1e300", "-1e12", "252423993600",
        #""0000-01-01T00:00:00Z""#, #""10000-01-01T00:00:00Z""#, #""99999-01-01T00:00:00Z""#,
        #""2023-02-30T00:00:00Z""#, #""2023-13-01T00:00:00Z""#, #""2023-01-01T24:00:00Z""#,
        #""2023-01-01T00:60:00Z""#, #""2023-01-01T00:00:00+25:00""#, #""9999-12-31T23:59:59.99999999999999999Z""#
    ]

    @Test(
        "a record whose date cannot be kept is corruptRecord with the field's path, in every form",
        arguments: hostileDates)
    func hostileDate(_ date: String) {
        let forms = [
            #"{"version":0,"startDate":\#(date)}"#,
            #"{"schema":"TrialInfo","version":2,"data":{"version":2,"startDate":\#(date),"deviceId":"d"}}"#,
            #"{"schema":"TrialInfo","version":0,"data":{"version":0,"startDate":\#(date)}}"#
        ]
        for form in forms {
            for encodeLatest in [false, true] {
                let outcome = TrialInfo.chain.evaluate(bytes(form), context: context, encodeLatest: encodeLatest)
                    .outcome
                guard case let .failed(error, _) = outcome else {
                    Issue.record("\(form) was read: \(outcome)")
                    continue
                }
                #expect(error.code == .corruptRecord)
                guard case let .decoding(path, reason)? = error.cause else {
                    Issue.record("no decoding cause: \(error)")
                    continue
                }
                #expect(path == "startDate")
                #expect(reason.hasPrefix("Invalid date: "))
            }
        }
    }

    @Test("one record with a date out of range does not stop the others: they migrate, its bytes stay")
    func batchGoesOn() throws {
        let bad = bytes(#"{"version":0,"startDate":1e400}"#)
        let store = InMemoryStore(
            name: "dates",
            contents: [
                "trialInfo": bad,
                "person": bytes(#"{"name":"Ada","age":"36"}"#)
            ])
        let migrator = Migrator(store: store, chains: SampleModels.all, context: context)
        #expect(try migrator.plan().map(\.state) == [.outdated, .unreadable])
        let reports = try migrator.run()
        #expect(reports.map(\.key) == ["person", "trialInfo"])
        #expect(reports.map(\.state) == [.migrated, .unreadable])
        #expect(reports[1].error?.code == .corruptRecord)
        #expect(reports[1].error?.key == "trialInfo")
        #expect(try store.data(forKey: "trialInfo") == bad)
        #expect(
            try store.data(forKey: "person")
                == bytes(
                    #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#))
        #expect(try migrator.preview(key: "trialInfo")?.report.state == .unreadable)
    }

    @Test("a numeric date finer than a millisecond migrates losslessly: the written record reads back the same date")
    func numericSubMillisecond() throws {
        let stored = bytes(#"{"version":0,"startDate":700000000.1234567}"#)
        let evaluation = TrialInfo.chain.evaluate(stored, context: context, encodeLatest: true)
        guard case let .outdated(record) = evaluation.outcome, let latest = evaluation.latest else {
            Issue.record("not migrated")
            return
        }
        #expect(record.value.startDate.timeIntervalSinceReferenceDate == 700_000_000.1234567)
        #expect(String(decoding: latest, as: UTF8.self).contains(#""startDate":"2023-03-08T20:26:40.1234567Z""#))
        let reread = try TrialInfo.chain.read(latest, context: context)
        #expect(reread.value.startDate == record.value.startDate)
        #expect(!reread.wasMigrated)
    }

    @Test("Vault.save of a date finer than a millisecond reads back equal")
    func saveIsLossless() throws {
        let store = InMemoryStore(name: "dates")
        let vault = Vault(store: store, context: context)
        for seconds in [700_000_000.000_123_456, -0.000_1, 0.001 + 1e-17, Date().timeIntervalSinceReferenceDate] {
            let value = TrialInfoV2(startDate: Date(timeIntervalSinceReferenceDate: seconds), deviceId: "d")
            try vault.save(value, in: TrialInfo.chain)
            #expect(try vault.load(TrialInfo.chain)?.value == value)
        }
    }

    @Test(
        "Vault.save of a date outside the years 0001–9999 throws encodingFailed naming the field, and writes nothing",
        arguments: [Double.infinity, -1e12, 1e300, 252_423_993_600])
    func unwritableDate(_ seconds: Double) throws {
        let old = bytes(
            #"{"data":{"deviceId":"d","startDate":"2023-03-08T20:26:40.123Z","version":2},"schema":"TrialInfo","version":2}"#
        )
        let store = InMemoryStore(name: "dates", contents: ["trialInfo": old])
        let vault = Vault(store: store, context: context)
        let value = TrialInfoV2(startDate: Date(timeIntervalSinceReferenceDate: seconds), deviceId: "d")
        #expect { try vault.save(value, in: TrialInfo.chain) } throws: { error in
            guard let error = error as? KeepsakeError, case let .other(cause)? = error.cause else { return false }
            return error.code == .encodingFailed && error.key == "trialInfo" && cause.hasPrefix("at data.startDate: ")
        }
        #expect(try store.data(forKey: "trialInfo") == old)
        #expect(throws: KeepsakeError.self) { try TrialInfo.chain.encode(value) }
    }

    @Test("a defaults suite refuses to store a plain date it cannot write back, and reads plain dates strictly")
    func plainValues() throws {
        let directory = try temporaryDirectory()
        let defaults = DefaultsStore(path: directory + "/suite.json")
        #expect { try defaults.set(Date(timeIntervalSinceReferenceDate: 1e300), forKey: "when") } throws: { error in
            (error as? KeepsakeError)?.code == .encodingFailed
        }
        #expect(try defaults.keys().isEmpty)
        try defaults.setData(bytes(#""2023-02-30T00:00:00Z""#), forKey: "when")
        #expect { try defaults.value(Date.self, forKey: "when") } throws: { error in
            (error as? KeepsakeError)?.code == .corruptRecord
        }
        let exact = Date(timeIntervalSinceReferenceDate: 700_000_000.1234567)
        try defaults.set(exact, forKey: "when")
        #expect(try defaults.value(Date.self, forKey: "when") == exact)
    }
}
