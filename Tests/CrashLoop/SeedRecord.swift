/// One old Person record the crash loop seeds: its key, the fixture it comes from, its bytes.
struct SeedRecord: Sendable {
    /// `person-001`, `person-002`, …
    let key: String
    /// Its fixture, a path from the repository root.
    let fixture: String
    /// The fixture's bytes: what `migrate put` stores, and what the record holds until migrated.
    let bytes: [UInt8]

    /// Where the fixtures are: every stored form of Person versions 0–3.
    static let fixtures = "Tests/KeepsakeTests/Fixtures/Person"

    /// `count` records cycling through every stored form of every version (the fixtures
    /// `v*.json` but the `*.expected.json`), with a stride prime to their number: a few records
    /// already span every version.
    static func make(count: Int) throws -> [SeedRecord] {
        let forms = Files.names(in: fixtures).filter {
            $0.hasPrefix("v") && $0.hasSuffix(".json") && !$0.hasSuffix(".expected.json")
        }
        guard !forms.isEmpty else { throw Abort(message: "no fixtures in \(fixtures)") }
        return try (1...count).map { number in
            let fixture = fixtures + "/" + forms[(number - 1) * 7 % forms.count]
            guard let bytes = Files.bytes(fixture) else { throw Abort(message: "cannot read \(fixture)") }
            let digits = String(number)
            let key = "person-" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
            return SeedRecord(key: key, fixture: fixture, bytes: bytes)
        }
    }
}
