import Foundation
import Keepsake
import KeepsakeMemory

/// A frozen stored record and the latest record it must become, as committed files:
/// `NAME.json` (the exact stored bytes) beside `NAME.expected.json` (the latest envelope).
///
/// ```swift
/// @Test(arguments: try GoldenFixture.all(in: fixturesURL.appending(path: "Person")))
/// func personFixture(_ fixture: GoldenFixture) throws {
///     let result = try fixture.verify(Person.chain, context: .fixed(now: date, deviceIdentity: "d"))
///     #expect(result.loaded.alias == result.expected.alias)
/// }
/// ```
public struct GoldenFixture: Sendable, CustomStringConvertible {
    /// The fixture's name: its file name without `.json`.
    public let name: String
    /// The stored bytes, exactly as an old release wrote them.
    public let stored: Data
    /// The latest envelope the record must be written back as.
    public let expected: Data

    public var description: String { name }

    /// A fixture named `name`: the `stored` bytes and the `expected` latest envelope.
    public init(name: String, stored: Data, expected: Data) {
        self.name = name
        self.stored = stored
        self.expected = expected
    }

    /// Every `NAME.json` with a `NAME.expected.json` beside it in `directory`, sorted by name.
    public static func all(in directory: URL) throws -> [GoldenFixture] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        return try names.filter { $0.hasSuffix(".expected.json") }.sorted().map { expectedName in
            let name = String(expectedName.dropLast(".expected.json".count))
            return GoldenFixture(
                name: name,
                stored: try Data(contentsOf: directory.appendingPathComponent(name + ".json")),
                expected: try Data(contentsOf: directory.appendingPathComponent(expectedName)))
        }
    }

    /// The result of loading a fixture: the record as loaded, and the expected record.
    public struct Result<Model: Sendable>: Sendable {
        /// What loading the stored bytes produced.
        public let load: LoadedRecord<Model>
        /// The record loaded from the stored bytes.
        public var loaded: Model { load.value }
        /// The record decoded from the expected envelope.
        public let expected: Model
        /// The bytes in the store after the load.
        public let written: Data
    }

    /// Loads the stored bytes through `chain` in an in-memory store and checks that an outdated
    /// record is written back as exactly the expected bytes and a current one is not rewritten.
    /// Compare the returned models field by field in the test.
    ///
    /// - Throws: ``GoldenFixtureMismatch`` when the bytes differ, or the `KeepsakeError` of the load.
    public func verify<Model>(_ chain: ModelChain<Model>, context: MigrationContext) throws -> Result<Model> {
        let store = InMemoryStore(name: name, contents: ["record": stored])
        guard let load = try Vault(store: store, context: context).load(chain, forKey: "record") else {
            throw GoldenFixtureMismatch("\(name): the record loaded as absent")
        }
        let written = try store.data(forKey: "record") ?? Data()
        switch load.writeBack {
        case .written:
            guard written == expected else {
                throw GoldenFixtureMismatch(
                    """
                    \(name): written back as \(String(decoding: written, as: UTF8.self)), \
                    expected \(String(decoding: expected, as: UTF8.self)); \
                    \(GoldenFixtureMismatch.difference(written: written, expected: expected))
                    """)
            }
        case .notNeeded:
            guard written == stored else { throw GoldenFixtureMismatch("\(name): a current record was rewritten") }
        case .skipped:
            throw GoldenFixtureMismatch("\(name): the migrated record was not written back")
        case let .failed(error):
            throw error
        }
        guard case let .current(expectedRecord) = chain.outcome(of: expected, context: context) else {
            throw GoldenFixtureMismatch("\(name): the expected file is not a current \(chain.name) envelope")
        }
        return Result(load: load, expected: expectedRecord.value, written: written)
    }
}

/// A golden fixture that did not load as expected.
public struct GoldenFixtureMismatch: Error, CustomStringConvertible {
    public let description: String
    /// A mismatch, described for a person.
    public init(_ description: String) { self.description = description }

    /// Where `written` and `expected` part, for a person: the first differing byte (offset and
    /// both bytes), or which one is longer — naming a trailing newline, which prints as nothing
    /// and which most editors add to the file they save.
    public static func difference(written: Data, expected: Data) -> String {
        let written = [UInt8](written), expected = [UInt8](expected)
        let common = zip(written, expected).prefix { $0 == $1 }.count
        func shown(_ byte: UInt8) -> String {
            switch byte {
            case UInt8(ascii: "\n"): return "a newline (0x0A)"
            case UInt8(ascii: "\r"): return "a carriage return (0x0D)"
            case 0x20...0x7E:
                return "'\(Character(Unicode.Scalar(byte)))' (0x\(String(byte, radix: 16, uppercase: true)))"
            default: return "0x\(String(byte, radix: 16, uppercase: true))"
            }
        }
        if common < min(written.count, expected.count) {
            return
                "they differ first at byte \(common): written \(shown(written[common])), expected \(shown(expected[common]))"
        }
        let (longer, extra) =
            written.count > expected.count ? ("written", written[common...]) : ("expected", expected[common...])
        if extra.allSatisfy({ $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) {
            let newlines = extra.count == 1 ? "a trailing newline" : "\(extra.count) trailing newline bytes"
            return """
                the \(longer) bytes end with \(newlines) the other does not have \
                (an editor adds one on save: the expected file must hold the record's bytes exactly)
                """
        }
        return
            "the \(longer) bytes go on after byte \(common) with \(extra.count) more, from \(shown(extra.first ?? 0))"
    }
}
