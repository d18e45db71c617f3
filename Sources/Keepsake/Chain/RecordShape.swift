import Foundation

/// The JSON shape of one version's stored records: each top-level key, whether every record has
/// it, and the JSON type of its value — recursively, through nested structs, arrays and maps.
///
/// Read off the version's `Decodable` conformance without a value of it (``ModelChain/shapes``);
/// a version's inferred ``StoredKeys`` are its shape's top-level fields. A released version's shape never changes, because records of
/// it are on users' disks; `KeepsakeTesting.SchemaSnapshot` commits each chain's shapes to a
/// file and fails a test when one changes.
///
/// Its JSON encoding is stable and readable: an object of keys, each
/// `{"required": true, "type": …}`, where a type is a string for a plain value (`"string"`,
/// `"integer"`, `"number"`, `"bool"`, `"date"`, `"data"`, `"url"`, `"uuid"`, `"decimal"`,
/// `"unknown"`) and a one-key object otherwise (`{"array": …}`, `{"map": …}`,
/// `{"nullable": …}`, `{"object": {…keys…}}`, `{"enum": …}`). An enum records its cases: a
/// raw-value enum `{"enum": {"raw": "string", "values": ["dark", "light"]}}`, an enum with
/// associated values `{"enum": {"cases": {"none": {"object": {}}, "password": {"object": {…}}}}}`
/// — each case's key and its payload's type — and either, when its cases cannot be known
/// (see ``DeclaredCases``), `"values"` or `"cases"` as `"not declared"`:
///
/// ```json
/// {
///   "tags" : { "required" : true, "type" : { "array" : "string" } },
///   "window" : { "required" : true, "type" : { "object" : { "width" : { "required" : true, "type" : "integer" } } } },
///   "lastSyncedAt" : { "required" : false, "type" : "date" }
/// }
/// ```
public struct RecordShape: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Each key a record (or a nested object) may have.
    public var fields: [String: Field]

    /// A shape with these keys.
    public init(fields: [String: Field]) {
        self.fields = fields
    }

    /// One key of a record or nested object.
    public struct Field: Codable, Sendable, Hashable, CustomStringConvertible {
        /// Whether every record has the key (decoded with `decode`), rather than only some
        /// (`decodeIfPresent`: an optional property).
        public var required: Bool
        /// The JSON type of the key's value.
        public var type: Value

        /// A key that is required or optional, holding a `type`.
        public init(required: Bool, type: Value) {
            self.required = required
            self.type = type
        }

        /// A required key holding a `type`.
        public static func required(_ type: Value) -> Field { Field(required: true, type: type) }
        /// An optional key holding a `type`.
        public static func optional(_ type: Value) -> Field { Field(required: false, type: type) }

        public var description: String { (required ? "required " : "optional ") + type.description }
    }

    /// The JSON type of a value.
    public indirect enum Value: Codable, Sendable, Hashable, CustomStringConvertible {
        /// A JSON string (also a `String`-backed enum).
        case string
        /// A JSON number without a fraction: any `Int` or `UInt` type (also an `Int`-backed enum).
        case integer
        /// A JSON number: `Double` or `Float`.
        case number
        /// `true` or `false`.
        case bool
        /// A `Date`: Keepsake reads an ISO 8601 string or a number of seconds.
        case date
        /// `Data`: a base64 string.
        case data
        /// A `URL`: a string.
        case url
        /// A `UUID`: a string.
        case uuid
        /// A `Decimal`: a JSON number kept exactly.
        case decimal
        /// A JSON array whose elements have this type.
        case array(Value)
        /// A JSON object with fixed keys: a nested struct.
        case object(RecordShape)
        /// A JSON object with any keys whose values have this type: a dictionary.
        case map(Value)
        /// This type, or `null`.
        case nullable(Value)
        /// A value whose type cannot be read off its `Decodable` conformance: a type whose
        /// decoder the probe cannot satisfy, or a recursive type where it recurs.
        case unknown
        /// A raw-value enum: the JSON type of its raw values (``string`` or ``integer``) and
        /// the raw values of its cases, sorted — `nil` when they cannot be known (the enum is
        /// neither `CaseIterable` nor ``DeclaredCases``).
        case rawEnum(Value, values: [String]?)
        /// An enum with associated values: each case's key and the type of its payload (an
        /// ``object(_:)`` of its labels; empty for a case without one) — `nil` when the cases
        /// cannot be known (the enum is not ``DeclaredCases``).
        case taggedEnum(cases: [String: Value]?)

        private static let plain: [String: Value] = [
            "string": .string, "integer": .integer, "number": .number, "bool": .bool, "date": .date,
            "data": .data, "url": .url, "uuid": .uuid, "decimal": .decimal, "unknown": .unknown
        ]

        private enum CodingKeys: String, CodingKey {
            case array, object, map, nullable
            case enumeration = "enum"
        }

        private enum EnumKeys: String, CodingKey {
            case raw, values, cases
        }

        /// How an enum whose cases cannot be known records them.
        static let notDeclared = "not declared"

        public init(from decoder: any Decoder) throws {
            if let single = try? decoder.singleValueContainer(), let name = try? single.decode(String.self) {
                guard let value = Self.plain[name] else {
                    throw DecodingError.dataCorrupted(
                        .init(
                            codingPath: decoder.codingPath,
                            debugDescription: "unknown value type '\(name)'"))
                }
                self = value
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.allKeys.count == 1, let key = container.allKeys.first else {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: decoder.codingPath,
                        debugDescription: """
                            a value type is a name or an object with exactly one of the keys array, object, map, \
                            nullable, enum
                            """))
            }
            switch key {
            case .enumeration:
                let inner = try container.nestedContainer(keyedBy: EnumKeys.self, forKey: .enumeration)
                if let raw = try inner.decodeIfPresent(Value.self, forKey: .raw) {
                    let values = try? inner.decode([String].self, forKey: .values)
                    if values == nil { try Self.expectNotDeclared(inner, .values) }
                    self = .rawEnum(raw, values: values)
                } else {
                    let cases = try? inner.decode([String: Value].self, forKey: .cases)
                    if cases == nil { try Self.expectNotDeclared(inner, .cases) }
                    self = .taggedEnum(cases: cases)
                }
            case .array: self = .array(try container.decode(Value.self, forKey: .array))
            case .object: self = .object(try container.decode(RecordShape.self, forKey: .object))
            case .map: self = .map(try container.decode(Value.self, forKey: .map))
            case .nullable: self = .nullable(try container.decode(Value.self, forKey: .nullable))
            }
        }

        /// `key` holds ``notDeclared``, or the snapshot is not one Keepsake wrote.
        private static func expectNotDeclared(_ container: KeyedDecodingContainer<EnumKeys>, _ key: EnumKeys) throws {
            guard try container.decode(String.self, forKey: key) == notDeclared else {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: container.codingPath + [key],
                        debugDescription: "an enum's \(key.stringValue) are a list or \"\(notDeclared)\""))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case let .rawEnum(raw, values):
                var container = encoder.container(keyedBy: CodingKeys.self)
                var inner = container.nestedContainer(keyedBy: EnumKeys.self, forKey: .enumeration)
                try inner.encode(raw, forKey: .raw)
                if let values {
                    try inner.encode(values, forKey: .values)
                } else {
                    try inner.encode(Self.notDeclared, forKey: .values)
                }
            case let .taggedEnum(cases):
                var container = encoder.container(keyedBy: CodingKeys.self)
                var inner = container.nestedContainer(keyedBy: EnumKeys.self, forKey: .enumeration)
                if let cases {
                    try inner.encode(cases, forKey: .cases)
                } else {
                    try inner.encode(Self.notDeclared, forKey: .cases)
                }
            case let .array(element):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(element, forKey: .array)
            case let .object(shape):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(shape, forKey: .object)
            case let .map(value):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(value, forKey: .map)
            case let .nullable(value):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(value, forKey: .nullable)
            default:
                var container = encoder.singleValueContainer()
                try container.encode(name)
            }
        }

        /// The name of a plain type; for the others, what they hold.
        private var name: String {
            switch self {
            case .string: "string"
            case .integer: "integer"
            case .number: "number"
            case .bool: "bool"
            case .date: "date"
            case .data: "data"
            case .url: "url"
            case .uuid: "uuid"
            case .decimal: "decimal"
            case .unknown: "unknown"
            case .array, .object, .map, .nullable, .rawEnum, .taggedEnum: description
            }
        }

        /// `string`, `[string]` (an array), `[string: integer]` (a map), `{a: string, b?: date}`
        /// (an object; `?` marks an optional key), `date or null`.
        public var description: String {
            switch self {
            case let .array(element): "[\(element)]"
            case let .object(shape): shape.description
            case let .map(value): "[string: \(value)]"
            case let .nullable(value): "\(value) or null"
            case let .rawEnum(raw, values):
                "\(raw) enum (" + (values.map { $0.joined(separator: ", ") } ?? "cases not declared") + ")"
            case let .taggedEnum(cases):
                "enum ("
                    + (cases.map { cases in
                        cases.keys.sorted().map { "\($0): \(cases[$0] ?? .unknown)" }.joined(separator: ", ")
                    } ?? "cases not declared") + ")"
            default: name
            }
        }
    }

    /// `{alias: string, email: string, nickname?: string}`: the keys in order, `?` after an
    /// optional one.
    public var description: String {
        "{"
            + fields.keys.sorted().map { key in
                let field = fields[key]!
                return "\(key)\(field.required ? "" : "?"): \(field.type)"
            }.joined(separator: ", ") + "}"
    }

    /// The keys every record has.
    public var requiredKeys: Set<String> { Set(fields.filter { $0.value.required }.keys) }
    /// The keys some records have.
    public var optionalKeys: Set<String> { Set(fields.filter { !$0.value.required }.keys) }

    public init(from decoder: any Decoder) throws {
        fields = try decoder.singleValueContainer().decode([String: Field].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(fields)
    }

    /// The shape of `type`'s records, read off its `Decodable` conformance; `nil` when its
    /// `init(from:)` cannot be run on placeholder values or it does not decode a JSON object.
    public static func of<T: Decodable>(_ type: T.Type) -> RecordShape? {
        ShapeProbe.shape(of: T.self)
    }
}

extension ModelChain {
    /// Each version's ``RecordShape``, by version number: probed once, when first asked (never
    /// when the chain is made). A version whose shape cannot be read off its `Decodable`
    /// conformance is missing.
    public var shapes: [Int: RecordShape] {
        var shapes: [Int: RecordShape] = [:]
        for entry in versions {
            if let shape = entry.shape { shapes[entry.version] = shape }
        }
        return shapes
    }
}

extension AnyModelChain {
    /// Each version's ``RecordShape``, by version number (``ModelChain/shapes``).
    public var shapes: [Int: RecordShape] { readShapes() }
}

extension RecordShape {
    /// Where a reader of `reader`'s shape could not read a record of `shape`, at any depth: a
    /// key the reader requires that `shape` does not always store, or a value whose type the
    /// reader decodes differently. `nil` when every record of `shape` reads as `reader`
    /// (keys the reader does not know are ignored by it). Values of a type the probe could not
    /// read (`unknown`) are not compared.
    static func readingProblem(
        of shape: RecordShape, by reader: RecordShape
    ) -> (path: String, reason: String, undeclaredEnum: Bool)? {
        var pending: [(RecordShape, RecordShape, String)] = [(shape, reader, "")]
        var values: [(Value, Value, String)] = []
        while !pending.isEmpty || !values.isEmpty {
            if let (shape, reader, prefix) = pending.popLast() {
                for key in reader.fields.keys.sorted() {
                    guard let readerField = reader.fields[key] else { continue }
                    let path = prefix.isEmpty ? key : "\(prefix).\(key)"
                    guard let field = shape.fields[key] else {
                        if readerField.required {
                            return (path, "a required \(readerField.type), which is never stored", false)
                        }
                        continue
                    }
                    if readerField.required && !field.required {
                        return (path, "a required \(readerField.type), which is not always stored", false)
                    }
                    values.append((field.type, readerField.type, path))
                }
                continue
            }
            guard let (value, reads, path) = values.popLast() else { break }
            switch (value, reads) {
            case (_, .unknown), (.unknown, _):
                continue
            case let (.nullable(inner), .nullable(readsInner)):
                values.append((inner, readsInner, path))
            case (.nullable, _):
                return (path, "\(reads), which may be stored as null", false)
            case let (_, .nullable(readsInner)):
                values.append((value, readsInner, path))
            case let (.array(element), .array(readsElement)):
                values.append((element, readsElement, "\(path)[]"))
            case let (.map(element), .map(readsElement)):
                values.append((element, readsElement, "\(path)[*]"))
            case let (.object(inner), .object(readsInner)):
                pending.append((inner, readsInner, path))
            case let (.rawEnum(raw, values?), .rawEnum(readsRaw, readsValues?)) where raw == readsRaw:
                if let unknown = values.first(where: { !readsValues.contains($0) }) {
                    return (path, "\(reads), which does not know the stored case '\(unknown)'", false)
                }
            case (.rawEnum(let raw, _), .rawEnum(let readsRaw, _)) where raw == readsRaw:
                // One side's cases are not declared: whether the reader knows every stored case
                // cannot be known, so the claim cannot be checked.
                return (path, "an enum whose cases are not declared", true)
            case let (.taggedEnum(cases?), .taggedEnum(readsCases?)):
                for key in cases.keys.sorted() {
                    guard let reads = readsCases[key], let payload = cases[key] else {
                        return (path, "an enum without the stored case '\(key)'", false)
                    }
                    values.append((payload, reads, "\(path)(\(key))"))
                }
            case (.taggedEnum, .taggedEnum):
                return (path, "an enum whose cases are not declared", true)
            default:
                if value != reads { return (path, "\(reads), which is stored as \(value)", false) }
            }
        }
        return nil
    }
}
