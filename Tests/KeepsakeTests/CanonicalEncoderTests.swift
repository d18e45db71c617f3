import Foundation
import Migrations
import Testing

@testable import Keepsake

/// Keepsake's own canonical encoder must write exactly the bytes `JSONEncoder` writes with the
/// canonical options: these tests compare the two byte for byte.
@Suite("Canonical encoder")
struct CanonicalEncoderTests {
    private func expectSameBytes<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let own = try CanonicalJSON.ownEncode(value)
        let foundation = try CanonicalJSON.foundationEncode(value)
        #expect(
            own == foundation,
            "\(String(decoding: own, as: UTF8.self)) != \(String(decoding: foundation, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    @Test("every version of the sample models, bare and in its envelope, encodes as JSONEncoder does")
    func sampleModels() throws {
        let start = Date(timeIntervalSinceReferenceDate: 760_000_000.25)
        try expectSameBytes(PersonV0(name: "Ada \"Lovelace\"", age: "36"))
        try expectSameBytes(PersonV1(name: "Ada", age: "36", email: "ada@example.com/x"))
        try expectSameBytes(PersonV2(alias: "ada", age: "36", email: "a\u{8}\u{c}\n\r\t\u{1}\u{1f}@x"))
        try expectSameBytes(PersonV3(alias: "ädä 😀", email: "\\ada"))
        try expectSameBytes(TrialInfoV0(startDate: start))
        try expectSameBytes(TrialInfoV1(startDate: start, deviceId: "device-1", userId: "user-1"))
        try expectSameBytes(TrialInfoV2(startDate: start, deviceId: "device-2"))
        try expectSameBytes(
            Envelope(schema: "Person", version: 3, oldestReader: nil, data: PersonV3(alias: "a", email: "e")))
        try expectSameBytes(
            Envelope(
                schema: "TrialInfo", version: 2, oldestReader: 1,
                data: TrialInfoV2(startDate: start, deviceId: "d")))
        #expect(
            try Person.chain.encode(PersonV3(alias: "a", email: "e"))
                == CanonicalJSON.foundationEncode(
                    Envelope(schema: "Person", version: 3, oldestReader: nil, data: PersonV3(alias: "a", email: "e"))))
    }

    @Test("an envelope written directly is the bytes JSONEncoder writes for it, failures included")
    func envelopes() throws {
        var random = SplitMix(seed: 99)
        for index in 0..<50 {
            let value = Mixed.random(&random, depth: 1)
            let reader = index % 2 == 0 ? nil : index % 7
            #expect(
                try CanonicalJSON.encodeEnvelope(schema: "Mixed", version: index, oldestReader: reader, data: value)
                    == CanonicalJSON.foundationEncode(
                        Envelope(schema: "Mixed", version: index, oldestReader: reader, data: value)))
        }
        let leftovers = Leftovers(
            data: Data([9]), url: URL(string: "file:///x")!, decimal: Decimal(7), name: "y")
        #expect(
            try CanonicalJSON.encodeEnvelope(schema: "L", version: 1, oldestReader: nil, data: leftovers)
                == CanonicalJSON.foundationEncode(Envelope(schema: "L", version: 1, oldestReader: nil, data: leftovers))
        )
        let failing = Failing(number: .nan, date: Date())
        var own: (any Error)?
        var foundation: (any Error)?
        do {
            _ = try CanonicalJSON.encodeEnvelope(schema: "F", version: 0, oldestReader: nil, data: failing)
        } catch { own = error }
        do {
            _ = try CanonicalJSON.foundationEncode(Envelope(schema: "F", version: 0, oldestReader: nil, data: failing))
        } catch { foundation = error }
        #expect(encodingCause(try #require(own)) == encodingCause(try #require(foundation)))
    }

    @Test("random values of every shape encode as JSONEncoder does", arguments: 0..<8)
    func randomValues(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        for _ in 0..<100 {
            try expectSameBytes(Mixed.random(&random, depth: 0))
        }
    }

    @Test(
        "the encoder's tree, as the proof's decoder sees it, is what the parser reads from the bytes written from it",
        arguments: 0..<4)
    func treeReadsAsParsed(seed: UInt64) throws {
        var random = SplitMix(seed: seed + 1_000)
        for index in 0..<100 {
            let value = Mixed.random(&random, depth: 0)
            let (bytes, tree, _) = try CanonicalJSON.encodeEnvelopeWithTree(
                schema: "Mixed", version: index, oldestReader: index % 3 == 0 ? 1 : nil, data: value)
            let node = try #require(tree)
            let parsed = try JSONParser.parse(bytes)
            // Written out, so that member order counts too (`==` on objects ignores it).
            var fromTree = Data()
            viewed(.written(node)).write(to: &fromTree)
            var fromBytes = Data()
            parsed.write(to: &fromBytes)
            #expect(fromTree == fromBytes)
            var parsedViewed = Data()
            viewed(.parsed(parsed)).write(to: &parsedViewed)
            #expect(parsedViewed == fromBytes)
            // Decoding goes through `Decodable` alone: the same values from either tree.
            #expect(
                try TreeDecoder.decode(JSONValue.self, from: .written(node))
                    == TreeDecoder.decode(JSONValue.self, from: parsed))
            #expect(
                try TreeDecoder.decode(MemberOrder.self, from: .written(node))
                    == TreeDecoder.decode(MemberOrder.self, from: parsed))
            #expect(node.writesSame(as: node))
            let other = try #require(
                try CanonicalJSON.encodeEnvelopeWithTree(
                    schema: "Mixed", version: index + 1, oldestReader: nil, data: value
                ).tree)
            #expect(!node.writesSame(as: other), "a different version number writes different bytes")
        }
    }

    @Test("decoding from the encoder's tree fails where decoding the parsed bytes does, with the same cause")
    func treeDecodingErrors() throws {
        let start = Date(timeIntervalSinceReferenceDate: 760_000_000.25)
        let (bytes, tree, _) = try CanonicalJSON.encodeEnvelopeWithTree(
            schema: "TrialInfo", version: 0, oldestReader: nil,
            data: TrialInfoV1(
                startDate: start, deviceId: "device-1", userId: "user-1"), dates: TrialInfoV1.dateEncoding)
        let node = try #require(tree)
        let parsed = try JSONParser.parse(bytes)
        let fromTree = try #require(TreeNode.written(node).asObject?["data"])
        let fromBytes = try #require(TreeNode.parsed(parsed).asObject?["data"])
        #expect(
            try TreeDecoder.decode(TrialInfoV1.self, from: fromTree, dates: TrialInfoV1.dateEncoding)
                == TrialInfoV1(startDate: start, deviceId: "device-1", userId: "user-1"))
        func cause<T: Decodable>(_: T.Type, _ decode: () throws -> T) -> KeepsakeError.Cause? {
            do {
                _ = try decode()
                return nil
            } catch {
                return (error as? DecodingError)?.keepsakeCause
            }
        }
        // A missing key, a string read as a number, an object read as an array, a date in the
        // wrong form: each fails at the same path with the same reason from either tree.
        let missing = cause(PersonV1.self) { try TreeDecoder.decode(PersonV1.self, from: fromTree) }
        #expect(missing != nil)
        #expect(missing == cause(PersonV1.self) { try TreeDecoder.decode(PersonV1.self, from: fromBytes) })
        let wrongKind = cause([String: Int].self) { try TreeDecoder.decode([String: Int].self, from: fromTree) }
        #expect(wrongKind != nil)
        #expect(
            wrongKind == cause([String: Int].self) { try TreeDecoder.decode([String: Int].self, from: fromBytes) })
        let notArray = cause([String].self) { try TreeDecoder.decode([String].self, from: fromTree) }
        #expect(notArray != nil)
        #expect(notArray == cause([String].self) { try TreeDecoder.decode([String].self, from: fromBytes) })
        let wrongDates = cause(TrialInfoV1.self) {
            try TreeDecoder.decode(TrialInfoV1.self, from: fromTree, dates: .iso8601)
        }
        #expect(wrongDates != nil)
        #expect(
            wrongDates
                == cause(TrialInfoV1.self) {
                    try TreeDecoder.decode(TrialInfoV1.self, from: fromBytes, dates: .iso8601)
                })
    }

    @Test("a value nested deeper than the parser reads is refused by the proof, as parsing its bytes is")
    func deepTree() throws {
        // The parser reads the top level as level 1 and refuses level `maxDepth`: an envelope
        // holding `maxDepth - 1` nested arrays is one level too deep, `maxDepth - 2` fits.
        let (bytes, tree, nesting) = try CanonicalJSON.encodeEnvelopeWithTree(
            schema: "Deep", version: 0, oldestReader: nil, data: Nested(depth: JSONParser.maxDepth - 1))
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(bytes) }
        #expect(tree != nil)
        #expect(nesting == JSONParser.maxDepth)
        let (fits, _, fitting) = try CanonicalJSON.encodeEnvelopeWithTree(
            schema: "Deep", version: 0, oldestReader: nil, data: Nested(depth: JSONParser.maxDepth - 2))
        #expect(throws: Never.self) { try JSONParser.parse(fits) }
        #expect(fitting == JSONParser.maxDepth - 1)

        // Through a chain: the envelope, its data object, then the arrays.
        let chain = ModelChain<DeepV0>(name: "Deep", defaultKeys: [])
        let readable = DeepV0(levels: JSONParser.maxDepth - 3)
        let written = try chain.encode(readable)
        #expect(try chain.read(written, context: fixtureContext).value == readable)
        #expect { try chain.encode(DeepV0(levels: JSONParser.maxDepth - 2)) } throws: { error in
            (error as? KeepsakeError)?.code == .verificationFailed
                && (error as? KeepsakeError)?.message.contains("would not parse") == true
        }
    }

    @Test("plain values and top-level fragments encode as JSONEncoder does")
    func fragments() throws {
        try expectSameBytes("a/b\"c")
        try expectSameBytes(42)
        try expectSameBytes(-0.0)
        try expectSameBytes(1e300)
        try expectSameBytes(Float(0.1))
        try expectSameBytes([1.5, 2, 3e-9])
        try expectSameBytes(["b": 1, "a": 2, "B": 3, "é": 4, "ö": 5, "a10": 6, "a9": 7])
        try expectSameBytes([3: "x", 1: "y", 20: "z"])
        try expectSameBytes(Optional<Int>.none)
        try expectSameBytes(Date(timeIntervalSinceReferenceDate: 0))
        try expectSameBytes([String]())
        try expectSameBytes([String: Int]())
        try expectSameBytes(Empty())
        try expectSameBytes([Empty()])
    }

    @Test("types left to JSONEncoder (Data, URL, Decimal) come out the same through encode")
    func leftToFoundation() throws {
        let value = Leftovers(
            data: Data([0, 1, 2, 250]), url: URL(string: "https://example.com/a?b=c")!,
            decimal: Decimal(string: "12.50")!, name: "x")
        #expect(throws: CanonicalEncoderUnsupported.self) { try CanonicalJSON.ownEncode(value) }
        #expect(try CanonicalJSON.encode(value) == CanonicalJSON.foundationEncode(value))
        #expect(try CanonicalJSON.encode(Data([1, 2])) == CanonicalJSON.foundationEncode(Data([1, 2])))
        // A conformance that swallows the error still gets JSONEncoder's bytes, member included.
        let swallowing = Swallowing(data: Data([7, 8]), name: "z")
        #expect(try CanonicalJSON.encode(swallowing) == CanonicalJSON.foundationEncode(swallowing))
        #expect(
            try CanonicalJSON.encodeEnvelope(schema: "S", version: 0, oldestReader: nil, data: swallowing)
                == CanonicalJSON.foundationEncode(
                    Envelope(schema: "S", version: 0, oldestReader: nil, data: swallowing)))
        #expect(String(decoding: try CanonicalJSON.encode(swallowing), as: UTF8.self).contains("Bwg="))
    }

    @Test("a value that cannot be written fails at the same coding path with the same reason")
    func failures() throws {
        let values: [Failing] = [
            Failing(number: .nan, date: Date()),
            Failing(number: 1, date: Date(timeIntervalSinceReferenceDate: .infinity)),
            Failing(number: -.infinity, date: Date(timeIntervalSinceReferenceDate: -1e13)),
            Failing(number: 2, date: Date(timeIntervalSinceReferenceDate: 1e13))
        ]
        for value in values {
            var own: (any Error)?
            var foundation: (any Error)?
            do { _ = try CanonicalJSON.ownEncode(value) } catch { own = error }
            do { _ = try CanonicalJSON.foundationEncode(value) } catch { foundation = error }
            let ownError = try #require(own)
            let foundationError = try #require(foundation)
            #expect(encodingCause(ownError) == encodingCause(foundationError))
        }
    }
}

private struct Empty: Codable {}

private struct Leftovers: Encodable {
    let data: Data
    let url: URL
    let decimal: Decimal
    let name: String
}

private struct Swallowing: Encodable {
    let data: Data
    let name: String
    enum CodingKeys: String, CodingKey { case data, name }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try? container.encode(data, forKey: .data)
        try container.encode(name, forKey: .name)
    }
}

private struct Failing: Encodable {
    struct Inner: Encodable {
        let values: [Double]
        let when: Date
    }
    let inner: Inner

    init(number: Double, date: Date) { inner = Inner(values: [1, number], when: date) }
}

struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 &+ 1 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func flag() -> Bool { next() & 1 == 0 }

    mutating func string() -> String {
        let pieces: [String] = [
            "a", "Z", "0", " ", "/", "\"", "\\", "\u{0}", "\u{8}", "\u{c}", "\n", "\r", "\t", "\u{1b}", "\u{1f}",
            "\u{7f}",
            "é", "e\u{301}", "ß", "😀", "\u{2028}", "\u{FEFF}", "中", "key", "a10", "a9", "A"
        ]
        return (0..<below(6)).map { _ in pieces[below(pieces.count)] }.joined()
    }

    mutating func double() -> Double {
        switch below(6) {
        case 0: return [0.0, -0.0, 1, -1, 0.1, 1e20, 1e21, 1e-7, 123_456_789.0, .greatestFiniteMagnitude][below(10)]
        case 1: return Double(Int64(bitPattern: next()) >> 20)
        case 2: return Double(below(1_000_000)) / 100
        default:
            let value = Double(bitPattern: next())
            return value.isFinite ? value : 0.5
        }
    }
}

/// A value of most shapes `Codable` produces: scalars of every width, optionals, nested
/// structs, arrays, dictionaries keyed by strings and integers, enums with payloads, dates,
/// and a class that writes through `superEncoder`.
private struct Mixed: Encodable {
    enum Choice: Encodable {
        case none
        case text(String)
        case pair(Int, label: String)
    }

    final class Base: Encodable {
        let base: String
        init(base: String) { self.base = base }
    }

    final class Derived: Encodable {
        let own: Int
        let parent: Base
        init(own: Int, parent: Base) {
            self.own = own
            self.parent = parent
        }
        enum CodingKeys: String, CodingKey { case own }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(own, forKey: .own)
            try parent.encode(to: container.superEncoder())
            var again = encoder.container(keyedBy: CodingKeys.self)
            try again.encode(own + 1, forKey: .own)  // a second request writes into the same object
        }
    }

    let text: String
    let int: Int
    let int8: Int8
    let uint64: UInt64
    let int32: Int32
    let double: Double
    let float: Float
    let flag: Bool
    let optional: String?
    let date: Date
    let strings: [String: Int]
    let numbers: [Int: String]
    let list: [Double]
    let choice: Choice
    let derived: Derived?
    let children: [Mixed]

    static func random(_ random: inout SplitMix, depth: Int) -> Mixed {
        let choice: Choice
        switch random.below(3) {
        case 0: choice = .none
        case 1: choice = .text(random.string())
        default: choice = .pair(random.below(100), label: random.string())
        }
        var strings: [String: Int] = [:]
        for _ in 0..<random.below(6) { strings[random.string()] = random.below(1000) - 500 }
        var numbers: [Int: String] = [:]
        for _ in 0..<random.below(4) { numbers[random.below(50) - 10] = random.string() }
        let float = Float(random.double())
        return Mixed(
            text: random.string(), int: Int(bitPattern: UInt(random.next())),
            int8: Int8(truncatingIfNeeded: random.next()), uint64: random.next(),
            int32: Int32(truncatingIfNeeded: random.next()), double: random.double(),
            float: float.isFinite ? float : 1.5, flag: random.flag(),
            optional: random.flag() ? random.string() : nil,
            date: Date(timeIntervalSinceReferenceDate: Double(random.below(2_000_000_000)) / 7 - 100_000_000),
            strings: strings, numbers: numbers, list: (0..<random.below(4)).map { _ in random.double() },
            choice: choice,
            derived: random.flag() ? Derived(own: random.below(9), parent: Base(base: random.string())) : nil,
            children: depth < 2 ? (0..<random.below(3)).map { _ in Mixed.random(&random, depth: depth + 1) } : [])
    }
}

/// Arrays nested `depth` deep.
/// A model whose one field nests `levels` arrays.
private struct DeepV0: ModelVersion, Equatable {
    static let version = 0
    let levels: Int

    init(levels: Int) { self.levels = levels }

    enum CodingKeys: String, CodingKey { case nested }

    init(from decoder: any Decoder) throws {
        var array = try decoder.container(keyedBy: CodingKeys.self).nestedUnkeyedContainer(forKey: .nested)
        var levels = 1
        // Bounded: the chain probes this conformance with a decoder whose arrays never end.
        while !array.isAtEnd, levels < JSONParser.maxDepth {
            array = try array.nestedUnkeyedContainer()
            levels += 1
        }
        self.levels = levels
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Nested(depth: levels), forKey: .nested)
    }
}

private struct Nested: Encodable {
    let depth: Int
    func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for _ in 1..<depth { container = container.nestedUnkeyedContainer() }
    }
}

/// A tree as `TreeDecoder` sees it, through ``TreeNode``'s accessors alone: what
/// `treeReadsAsParsed` compares with what the parser reads.
func viewed(_ node: TreeNode) -> JSONValue {
    if node.isNull { return .null }
    if let flag = node.asBool { return .bool(flag) }
    if let text = node.asNumber { return .number(text) }
    if let text = node.asString { return .string(text) }
    if let elements = node.asArray { return .array((0..<elements.count).map { viewed(elements[$0]) }) }
    guard let object = node.asObject else { return .string("neither of JSON's kinds") }
    return .object(
        JSONObject(
            members: object.keys.map { key in
                JSONMember(key: key, value: object[key].map(viewed) ?? .string("a listed key not found"))
            }))
}

/// The member names of every object, in the order `allKeys` lists them, and every leaf as
/// text: what a conformance that walks a container's keys sees.
private struct MemberOrder: Decodable, Equatable {
    var seen: [String] = []

    init(from decoder: any Decoder) throws {
        try walk(decoder)
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private mutating func walk(_ decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            for key in object.allKeys {
                seen.append("key " + key.stringValue)
                try walk(object.superDecoder(forKey: key))
            }
        } else if var array = try? decoder.unkeyedContainer() {
            seen.append("[\(array.count ?? -1)")
            while !array.isAtEnd { try walk(array.superDecoder()) }
        } else {
            let leaf = try decoder.singleValueContainer()
            if leaf.decodeNil() {
                seen.append("null")
            } else if let flag = try? leaf.decode(Bool.self) {
                seen.append("\(flag)")
            } else if let text = try? leaf.decode(String.self) {
                seen.append("string " + text)
            } else {
                seen.append("number \(try leaf.decode(Double.self))")
            }
        }
    }
}
