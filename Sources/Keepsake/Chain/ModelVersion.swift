import Foundation

/// One frozen version of a stored model.
///
/// Each version is its own `Codable` type in its own file. It states its version number, its
/// predecessor (the version just below it), and how to build itself from that predecessor.
/// Once released, a version type never changes and never refers to app types: a change of
/// shape is a new type, and the chain's "latest" moves to it.
///
/// ```swift
/// public struct PersonV1: ModelVersion {
///     public typealias Predecessor = PersonV0
///     public static let version = 1
///     public let name: String
///     public let age: String
///     public let email: String
///
///     public init(migrating previous: PersonV0, context: MigrationContext) {
///         self.init(name: previous.name, age: previous.age, email: "---")
///     }
/// }
/// ```
///
/// The first version of a chain keeps the default `Predecessor`, ``NoPredecessor``, and needs
/// no migration initializer.
public protocol ModelVersion: Codable, Sendable {
    /// The version this one migrates from; ``NoPredecessor`` for version 0.
    associatedtype Predecessor: ModelVersion = NoPredecessor

    /// This version's number: 0 for the first, then exactly one above the predecessor.
    static var version: Int { get }

    /// Builds this version from its predecessor. A step that throws leaves the stored record
    /// as it was.
    init(migrating previous: Predecessor, context: MigrationContext) throws

    /// The top-level keys this version stores, used to recognise a record saved without a
    /// version number.
    ///
    /// Leave it out: by default (``StoredKeys/inferred``) Keepsake reads the keys off the
    /// type's `Decodable` conformance — keys it decodes are required, keys it decodes only if
    /// present are optional — for any ordinary field type: enums, `UUID`, `URL`, `Date`,
    /// `Data`, `Decimal`, nested types, collections, optionals. Declare them only when your
    /// `init(from:)` reads keys conditionally in a way a probe cannot see; `ChainValidation`
    /// tells you when that is needed, naming the type and field.
    static var storedKeys: StoredKeys { get }

    /// The oldest version whose readers can still read this version's records: this version
    /// itself by default. Declare an older one when this version only adds keys that older
    /// readers can ignore — then a release whose latest version is that old, or newer, reads
    /// these records as its own latest type instead of refusing them as newer, and a save by
    /// it keeps the keys it does not know.
    ///
    /// ```swift
    /// public struct PersonV4: ModelVersion {
    ///     public typealias Predecessor = PersonV3
    ///     public static let version = 4
    ///     public static let oldestReader = 3   // V3 releases can read V4 records
    ///     public let alias: String
    ///     public let email: String
    ///     public let phone: String?           // what V4 adds
    ///     …
    /// }
    /// ```
    ///
    /// Every version from `oldestReader` up must find all of its required keys, with the same
    /// meaning, in this version's records; `ChainValidation` checks the keys.
    static var oldestReader: Int { get }

    /// How this version's dates are stored — top-level and nested, in arrays, dictionaries and
    /// optionals: the form the encoder of the release that stored them wrote. By default
    /// ``DateEncoding/deferredToDate``, Foundation's default: a number is seconds since
    /// 2001-01-01T00:00:00Z, a string is ISO 8601 (what Keepsake writes).
    ///
    /// Declare the form a released app's `JSONEncoder` used, so that its records' dates are read
    /// exactly rather than misread:
    ///
    /// ```swift
    /// public struct AccountV0: ModelVersion {
    ///     public static let version = 0
    ///     public static let dateEncoding = DateEncoding.secondsSince1970
    ///     public let lastLogin: Date  // stored as "lastLogin":1714557600
    /// }
    /// ```
    ///
    /// Records of this version are read in this form, and written in it when this version is the
    /// latest a release writes. Like everything else about a released version, it never changes;
    /// a later version may declare another form (migration hands over `Date` values, not text).
    /// A stored date that does not fit the form is that record's
    /// ``KeepsakeError/Code/corruptRecord`` error naming the field.
    static var dateEncoding: DateEncoding { get }

    /// Whether a release ever stored this version's records without a version — a bare JSON
    /// object, as an app did before it adopted Keepsake: `true` by default. Keepsake itself
    /// always stores the version with the record, so a version first released with Keepsake can
    /// declare `false`:
    ///
    /// ```swift
    /// public struct SettingsV2: ModelVersion {
    ///     public typealias Predecessor = SettingsV1
    ///     public static let version = 2
    ///     public static let storedWithoutVersion = false   // only ever stored in an envelope
    ///     public var theme: String
    ///     public var fontSize: Int?   // all V2 adds: an optional key
    ///     …
    /// }
    /// ```
    ///
    /// A record stored without a version is then never read as this version, so its keys need
    /// not differ from those of a version that was stored bare: a version that only adds
    /// optional keys passes `ChainValidation`. Declaring `false` for a version some release did
    /// store bare makes those records `unrecognisedRecord` (or read as another version).
    static var storedWithoutVersion: Bool { get }
}

extension ModelVersion {
    public static var storedKeys: StoredKeys { .inferred }
    public static var oldestReader: Int { version }
    public static var dateEncoding: DateEncoding { .deferredToDate }
    public static var storedWithoutVersion: Bool { true }
}

extension ModelVersion where Predecessor == NoPredecessor {
    /// The first version has nothing to migrate from.
    public init(migrating previous: NoPredecessor, context: MigrationContext) throws {
        switch previous {}
    }
}

/// The predecessor of a chain's first version: a type with no values.
public enum NoPredecessor: ModelVersion {
    public typealias Predecessor = NoPredecessor
    public static var version: Int { -1 }
    public static var storedKeys: StoredKeys { StoredKeys(required: []) }

    public init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            .init(
                codingPath: decoder.codingPath,
                debugDescription: "NoPredecessor has no values."))
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {}
    }
}

/// The top-level keys a version stores: the ones every record has and the ones it may have.
public struct StoredKeys: Sendable, Hashable, CustomStringConvertible {
    /// Keys present in every record of this version.
    public var required: Set<String>
    /// Keys a record of this version may have.
    public var optional: Set<String>
    /// Whether these keys are to be read off the type's `Decodable` conformance.
    let isInferred: Bool

    /// Declared keys: `required` in every record, `optional` in some. A key in both is required.
    public init(required: Set<String>, optional: Set<String> = []) {
        self.required = required
        self.optional = optional.subtracting(required)
        self.isInferred = false
    }

    /// Read the keys off the version's `Decodable` conformance: the default.
    public static let inferred = StoredKeys(inferred: ())

    private init(inferred: Void) {
        required = []
        optional = []
        isInferred = true
    }

    /// Every key a record of this version may have.
    public var all: Set<String> { required.union(optional) }

    /// Whether an object with exactly `keys` is a record of this version: every required key
    /// present and no key this version does not know. Keys are compared by their UTF-8 bytes,
    /// not by canonical equivalence (`"caf\u{E9}"` is not `"cafe\u{301}"`).
    public func matches<Keys: Sequence<String>>(_ keys: Keys) -> Bool {
        var requiredSeen = 0
        for key in keys {
            if required.containsExactly(key) {
                requiredSeen += 1
            } else if !optional.containsExactly(key) {
                return false
            }
        }
        return requiredSeen == required.count
    }

    /// Whether some object without a `"version"` key would match both `self` and `other`.
    public func overlaps(_ other: StoredKeys) -> Bool {
        let needed = required.union(other.required)
        return !needed.contains(StoredEnvelope.versionKey) && needed.isSubset(of: all.intersection(other.all))
    }

    public var description: String {
        if isInferred { return "{inferred}" }
        let parts = required.sorted() + optional.sorted().map { $0 + "?" }
        return "{" + parts.joined(separator: ", ") + "}"
    }

    /// The keys of records of `shape`: its top-level fields, required and optional.
    init(_ shape: RecordShape) {
        self.init(required: shape.requiredKeys, optional: shape.optionalKeys)
    }

    /// The keys `type` stores: its declared ``ModelVersion/storedKeys``, or those read off its
    /// `Decodable` conformance (the top-level fields of its ``RecordShape``).
    ///
    /// - Throws: ``ChainError`` naming the type and the field whose shape cannot be known.
    public static func of<V: ModelVersion>(_ type: V.Type) throws(ChainError) -> StoredKeys {
        let declared = V.storedKeys
        guard declared.isInferred else { return declared }
        switch ShapeProbe.record(V.self) {
        case let .success(probed): return StoredKeys(probed.shape)
        case let .failure(problem):
            let unknown = problem.unknownKeys(of: V.self)
            throw ChainError(
                chain: nil, version: V.version, typeName: _typeName(V.self, qualified: false), field: unknown.field,
                unknown.reason)
        }
    }
}

extension ProbeProblem {
    /// This problem as the reason the stored keys of `type` are unknown, with how to declare them.
    func unknownKeys<T>(of type: T.Type) -> ProbeProblem {
        let place = field.map { "field '\($0)'" } ?? "its top level"
        return ProbeProblem(
            field: field,
            reason: """
                the stored keys of \(T.self) cannot be read off its Decodable conformance at \(place): \(reason); \
                declare them with `static let storedKeys = StoredKeys(required: [...], optional: [...])`
                """)
    }
}
