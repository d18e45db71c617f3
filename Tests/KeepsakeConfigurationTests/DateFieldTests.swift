import Configuration
import Foundation
import Keepsake
import KeepsakeConfiguration
import KeepsakeMemory
import Testing

/// An event stored with the default date form: ISO 8601 in UTC, fractions of a second kept.
struct EventV0: ModelVersion, Equatable {
    static let version = 0
    let at: Date
}

/// The same moment under each declared form a released app may have used.
struct StampsV0: ModelVersion, Equatable {
    static let version = 0
    static let dateEncoding = DateEncoding.millisecondsSince1970
    let at: Date
}

struct SecondsV0: ModelVersion, Equatable {
    static let version = 0
    static let dateEncoding = DateEncoding.secondsSince1970
    let at: Date
}

struct DayV0: ModelVersion, Equatable {
    static let version = 0
    static let dateEncoding = DateEncoding.formatted("yyyy-MM-dd")
    let day: Date
}

@Suite("A record's dates reach configuration as Keepsake stores them")
struct DateFieldTests {
    /// 2024-05-01T10:00:00.250Z.
    let moment = Date(timeIntervalSince1970: 1_714_557_600.25)

    @Test("a date with a fraction of a second keeps it")
    func fractionKept() throws {
        let chain = ModelChain<EventV0>(name: "Event", defaultKeys: ["event"])
        let vault = Vault(store: InMemoryStore())
        try vault.save(EventV0(at: moment), in: chain)
        let config = ConfigReader(provider: KeepsakeProvider(vault: vault, records: [.init(chain)]))
        #expect(config.string(forKey: "event.at") == "2024-05-01T10:00:00.250Z")
    }

    @Test("a model's declared date form is the form configuration reads")
    func declaredForms() throws {
        let stamps = ModelChain<StampsV0>(name: "Stamps", defaultKeys: ["stamps"])
        let seconds = ModelChain<SecondsV0>(name: "Seconds", defaultKeys: ["seconds"])
        let day = ModelChain<DayV0>(name: "Day", defaultKeys: ["day"])
        let vault = Vault(store: InMemoryStore())
        try vault.save(StampsV0(at: moment), in: stamps)
        try vault.save(SecondsV0(at: moment), in: seconds)
        try vault.save(DayV0(day: Date(timeIntervalSince1970: 1_714_521_600)), in: day)
        let config = ConfigReader(
            provider: KeepsakeProvider(vault: vault, records: [.init(stamps), .init(seconds), .init(day)]))
        #expect(config.int(forKey: "stamps.at") == 1_714_557_600_250)
        #expect(config.double(forKey: "seconds.at") == 1_714_557_600.25)
        #expect(config.int(forKey: "seconds.at") == nil, "a fraction of a second is not an integer")
        #expect(config.string(forKey: "day.day") == "2024-05-01")
    }
}
