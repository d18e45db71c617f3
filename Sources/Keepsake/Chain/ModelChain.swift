import Foundation
import Synchronization

/// A model's versions from 0 to the latest, with its name and the storage keys it owns.
///
/// The chain is found by walking `Latest.Predecessor` back to version 0, so adding a version
/// is one new file and one changed line: the chain's `Latest`.
///
/// ```swift
/// public enum Person {
///     public typealias Latest = PersonV3
///     public static let chain = ModelChain<Latest>(name: "Person", defaultKeys: ["person"])
/// }
/// ```
///
/// Reading stored bytes is one pipeline (`ModelChain+Reading.swift`): parse once, detect the
/// stored version, decode once, run the steps — ``outcome(of:context:)`` — and
/// every reader (``read(_:context:)``, ``Vault``, ``Migrator``, the `migrate` CLI) goes
/// through it. Writing is ``encode(_:)`` (`ModelChain+Writing.swift`).
///
/// A chain whose versions are not contiguous from 0 (a gap, a version twice, a predecessor that
/// is not exactly one below) is a programmer error: ``init(name:defaultKeys:)`` stops the
/// program with a message naming the chain and the version. Everything else that can be wrong
/// with a chain — a version whose stored keys cannot be read off its `Decodable` conformance,
/// two versions one bare record could match, a version that writes keys it does not read —
/// never stops the program: ``validate()`` throws it, and a test calls it
/// (`KeepsakeTesting.ChainValidation`). At run time such a version is still read: a bare record
/// is matched to it by decoding, not by its key set.
public struct ModelChain<Latest: ModelVersion>: Sendable {
    /// The model's name, stored in every envelope as `schema`.
    public let name: String
    /// The storage keys this model lives under by default (`"person"`).
    public let defaultKeys: [String]
    /// The keys of this model's many records, by pattern (`tenant-*`): ``KeyPattern``.
    public let keyPatterns: [KeyPattern]
    /// The versions, oldest first; `versions[n].version == n`.
    let versions: [VersionEntry]
    /// `Latest`'s `==`, when it is `Equatable` (see `encodeVerified(_:)`).
    let latestEquality: (@Sendable (Latest, Latest) -> Bool)?

    /// The latest version number.
    public var latestVersion: Int { Latest.version }

    /// Each version's number, type name and stored keys, oldest first.
    public var versionSummaries: [VersionSummary] {
        versions.map {
            VersionSummary(
                version: $0.version, typeName: $0.typeName, storedKeys: $0.keys, oldestReader: $0.oldestReader,
                dateEncoding: $0.dateEncoding, storedWithoutVersion: $0.storedWithoutVersion)
        }
    }

    /// Builds the chain ending at `Latest`.
    ///
    /// - Important: Versions that are not contiguous from 0 stop the program (a programmer
    ///   error, like an out-of-bounds index) with a message naming the chain and the version.
    ///   Nothing else does: see ``validate()``.
    public init(name: String, defaultKeys: [String]) {
        self.init(name: name, defaultKeys: defaultKeys, keyPatterns: [])
    }

    /// Builds the chain ending at `Latest` for a model with many records: besides its fixed
    /// `defaultKeys`, it owns every key one of `keyPatterns` matches (`"tenant-*"`), so that
    /// a record stored there without an envelope is read as this model.
    ///
    /// ```swift
    /// public static let chain = ModelChain<TenantV1>(name: "Tenant", defaultKeys: [], keyPatterns: ["tenant-*"])
    /// ```
    ///
    /// - Important: Versions that are not contiguous from 0 stop the program, as in
    ///   ``init(name:defaultKeys:)``. Two chains of one app whose patterns overlap are found by
    ///   ``AnyModelChain/conflicts(among:)`` (`KeepsakeTesting.ChainValidation`), never at run time.
    public init(name: String, defaultKeys: [String], keyPatterns: [KeyPattern]) {
        do {
            self = try Self.structured(name: name, defaultKeys: defaultKeys, keyPatterns: keyPatterns)
        } catch {
            preconditionFailure(error.description)
        }
    }

    /// Builds the chain ending at `Latest`, or throws what is wrong with it: what
    /// ``init(name:defaultKeys:)`` stops on, and what ``validate()`` throws.
    public static func validated(
        name: String, defaultKeys: [String], keyPatterns: [KeyPattern] = []
    ) throws(ChainError) -> ModelChain {
        let chain = try structured(name: name, defaultKeys: defaultKeys, keyPatterns: keyPatterns)
        try chain.validate()
        return chain
    }

    private static func structured(
        name: String, defaultKeys: [String], keyPatterns: [KeyPattern]
    ) throws(ChainError) -> ModelChain {
        var entries: [VersionEntry] = []
        Latest.collectVersions(into: &entries, depth: 0)
        try checkStructure(name: name, entries: entries)
        return ModelChain(name: name, defaultKeys: defaultKeys, keyPatterns: keyPatterns, versions: entries)
    }

    private init(name: String, defaultKeys: [String], keyPatterns: [KeyPattern], versions: [VersionEntry]) {
        self.name = name
        self.defaultKeys = defaultKeys
        self.keyPatterns = keyPatterns
        self.versions = versions
        self.latestEquality = Self.equality
    }

    /// Everything ``validate()`` finds wrong with this chain; empty for a sound chain.
    public var problems: [ChainError] {
        var found: [ChainError] = []
        for entry in versions {
            if let problem = entry.keyProblem ?? entry.roundTripProblem() {
                found.append(
                    ChainError(
                        chain: name, version: entry.version, typeName: entry.typeName,
                        field: problem.field, problem.reason))
            }
        }
        for entry in versions {
            if let reason = entry.dateEncoding.problem {
                found.append(ChainError(chain: name, version: entry.version, typeName: entry.typeName, reason))
            }
        }
        found += compatibilityProblems
        // Only versions some release stored without a version can be matched to a bare record.
        for (index, first) in versions.enumerated() where first.storedWithoutVersion {
            guard let firstKeys = first.keys else { continue }
            for second in versions[(index + 1)...] where second.storedWithoutVersion {
                guard let secondKeys = second.keys, firstKeys.overlaps(secondKeys),
                    !second.readable(byReadersOf: first.version)
                else { continue }
                let example = firstKeys.required.union(secondKeys.required).sorted().joined(separator: ", ")
                found.append(
                    ChainError(
                        chain: name, version: second.version, typeName: second.typeName, field: nil,
                        """
                        versions \(first.version) (\(first.typeName), keys \(firstKeys)) and \(second.version) \
                        (\(second.typeName), keys \(secondKeys)) could both match one record stored without a version, \
                        such as {\(example)}; give one a required key the other cannot have — or, if \
                        \(second.typeName) was only ever stored with its version (first released with Keepsake), \
                        declare `static let storedWithoutVersion = false` in it; if it only adds keys \
                        \(first.typeName)'s readers can ignore, declare them compatible (`static let oldestReader = \
                        \(first.version)`)
                        """))
            }
        }
        return found
    }

    /// A version that declares older readers compatible must hold every key they require.
    private var compatibilityProblems: [ChainError] {
        var found: [ChainError] = []
        for entry in versions where entry.oldestReader != entry.version {
            guard (0...entry.version).contains(entry.oldestReader) else {
                found.append(
                    ChainError(
                        chain: name, version: entry.version, typeName: entry.typeName,
                        """
                        its oldestReader is \(entry.oldestReader), which must be between 0 and its own version \
                        \(entry.version)
                        """))
                continue
            }
            if let reader = versions[entry.oldestReader..<entry.version].first(where: {
                $0.dateEncoding != entry.dateEncoding
            }) {
                found.append(
                    ChainError(
                        chain: name, version: entry.version, typeName: entry.typeName,
                        """
                        it declares readers from version \(entry.oldestReader) compatible, but version \(reader.version) \
                        (\(reader.typeName)) reads dates as \(reader.dateEncoding) and \(entry.typeName) stores them as \
                        \(entry.dateEncoding); a version older readers read must store dates as they read them
                        """))
            }
            guard let keys = entry.keys else { continue }
            for reader in versions[entry.oldestReader..<entry.version] {
                guard let readerKeys = reader.keys else { continue }
                if let missing = readerKeys.required.sorted().first(where: { !keys.required.contains($0) }) {
                    found.append(
                        ChainError(
                            chain: name, version: entry.version, typeName: entry.typeName,
                            field: missing,
                            """
                            it declares readers from version \(entry.oldestReader) compatible, but version \(reader.version) \
                            (\(reader.typeName)) requires the key '\(missing)', which \(entry.typeName) does not always \
                            store; lower no further than the oldest version whose required keys it keeps
                            """))
                } else if let shape = entry.shape, let readerShape = reader.shape,
                    let problem = RecordShape.readingProblem(of: shape, by: readerShape), problem.undeclaredEnum
                {
                    found.append(
                        ChainError(
                            chain: name, version: entry.version, typeName: entry.typeName,
                            field: problem.path,
                            """
                            it declares readers from version \(entry.oldestReader) compatible, but '\(problem.path)' is \
                            an enum whose cases are not declared, so whether version \(reader.version) \
                            (\(reader.typeName)) knows every case \(entry.typeName) stores cannot be checked; declare \
                            the enum's cases (CaseIterable for raw values, DeclaredCases for cases with associated \
                            values) in every version that has it, or declare no older readers compatible (oldestReader \
                            = \(entry.version))
                            """))
                } else if let shape = entry.shape, let readerShape = reader.shape,
                    let problem = RecordShape.readingProblem(of: shape, by: readerShape)
                {
                    // Below the top level too: what an older reader decodes must still be there,
                    // with the type it decodes.
                    found.append(
                        ChainError(
                            chain: name, version: entry.version, typeName: entry.typeName,
                            field: problem.path,
                            """
                            it declares readers from version \(entry.oldestReader) compatible, but version \(reader.version) \
                            (\(reader.typeName)) reads '\(problem.path)' as \(problem.reason); lower no further than the \
                            oldest version that reads every field it stores
                            """))
                }
            }
        }
        return found
    }

    /// Checks what ``init(name:defaultKeys:)`` does not: that each version's stored keys can be
    /// known, that no record stored without a version could match two versions, that each
    /// version writes exactly the top-level keys it reads, and that a version declaring older
    /// readers compatible (``ModelVersion/oldestReader``) keeps every key they require.
    ///
    /// - Throws: The first of ``problems``, naming the chain, the version, the type and the
    ///   field; its ``ChainError/reason`` goes on to list the others when there are several.
    public func validate() throws(ChainError) {
        let found = problems
        guard var first = found.first else { return }
        if found.count > 1 {
            first.reason +=
                "; and \(found.count - 1) more: "
                + found.dropFirst().map(\.description).joined(separator: " ")
        }
        throw first
    }

    private static func checkStructure(name: String, entries: [VersionEntry]) throws(ChainError) {
        guard !name.isEmpty else { throw ChainError(chain: name, version: nil, "a chain needs a non-empty name") }
        guard entries.count <= VersionEntry.maxDepth else {
            throw ChainError(
                chain: name, version: nil,
                """
                the chain has more than \(VersionEntry.maxDepth) versions or its predecessors form a cycle
                """)
        }
        guard let first = entries.first, first.version == 0 else {
            let found = entries.first.map { "\($0.typeName) has version \($0.version)" } ?? "no version"
            throw ChainError(
                chain: name, version: entries.first?.version,
                "versions must start at 0, but the first version \(found)")
        }
        var seen: [Int: String] = [:]
        for (index, entry) in entries.enumerated() {
            if let other = seen[entry.version] {
                throw ChainError(
                    chain: name, version: entry.version,
                    "version \(entry.version) appears twice (\(other) and \(entry.typeName))")
            }
            seen[entry.version] = entry.typeName
            if index > 0 {
                let previous = entries[index - 1]
                guard entry.version == previous.version + 1 else {
                    throw ChainError(
                        chain: name, version: entry.version,
                        """
                        version \(entry.version) (\(entry.typeName)) has predecessor version \(previous.version) \
                        (\(previous.typeName)); a predecessor must be exactly one below, so versions run 0, 1, 2, … \
                        without gaps
                        """)
                }
            }
        }
    }
}

extension ModelChain {
    /// This chain with its model type erased.
    @inlinable
    public var erased: AnyModelChain { AnyModelChain(self) }
}

/// One version of a chain, as ``ModelChain/versionSummaries`` describes it.
public struct VersionSummary: Sendable, Hashable {
    /// The version number.
    public let version: Int
    /// The version type's name (`"PersonV2"`).
    public let typeName: String
    /// The keys a record of this version has; `nil` when they cannot be read off the type (a
    /// bare record is then matched to this version by decoding it).
    public let storedKeys: StoredKeys?
    /// The oldest version whose readers can read this version's records (``ModelVersion/oldestReader``).
    public let oldestReader: Int
    /// How the version's dates are stored (``ModelVersion/dateEncoding``).
    public let dateEncoding: DateEncoding
    /// Whether a release ever stored its records without a version
    /// (``ModelVersion/storedWithoutVersion``).
    public let storedWithoutVersion: Bool
}

/// What is wrong with a model chain: the chain, the version, the type and field, and why.
public struct ChainError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The chain's name (empty when a single version type was checked on its own).
    public let chain: String
    /// The version the problem is in; `nil` when it is about the chain as a whole.
    public let version: Int?
    /// The version type the problem is in.
    public let typeName: String?
    /// The top-level field the problem is in.
    public let field: String?
    /// Why, for a person.
    public var reason: String

    init(chain: String?, version: Int?, typeName: String? = nil, field: String? = nil, _ reason: String) {
        self.chain = chain ?? ""
        self.version = version
        self.typeName = typeName
        self.field = field
        self.reason = reason
    }

    public var description: String {
        var which = chain.isEmpty ? "Invalid model version" : "Invalid model chain '\(chain)'"
        var details: [String] = []
        if let version { details.append("version \(version)") }
        if let typeName { details.append(typeName) }
        if let field { details.append("field '\(field)'") }
        if !details.isEmpty { which += " (" + details.joined(separator: ", ") + ")" }
        return "\(which): \(reason)."
    }
}

/// A version of a chain with its type erased: how to decode it and how to build it from the
/// version below. A class, so that looking one up per record copies a reference, not its fields.
final class VersionEntry: Sendable {
    static let maxDepth = 1_000

    let version: Int
    let typeName: String
    /// The oldest version whose readers can read this version's records.
    let oldestReader: Int
    /// How the version's dates are stored.
    let dateEncoding: DateEncoding
    /// Whether a record stored without a version may be this version.
    let storedWithoutVersion: Bool
    /// Decodes the version from a record's fields.
    let decode: @Sendable (TreeNode) throws -> any ModelVersion
    /// Decodes the version from a record's fields and says which of its top-level keys it read.
    let decodeTrackingKeys: @Sendable (TreeNode) throws -> (value: any ModelVersion, readKeys: Set<ExactString>)
    /// Probes the version's `Decodable` conformance.
    private let probe: @Sendable () -> VersionProbe
    /// Held while ``probe`` runs, so that it runs once.
    private let probing = Mutex(())
    /// What ``probe`` found, once it has run: set once, under ``probing``, with releasing
    /// order; read with acquiring order. Retained here (released by `deinit`) and read without
    /// retaining it, because it is read for every record — a lock, or `AtomicLazyReference`
    /// (not specialised outside its module), costs more than the read.
    private let found = Atomic<Unmanaged<VersionProbe>?>(nil)

    init<V: ModelVersion>(_ type: V.Type) {
        version = V.version
        // `_typeName` is what `String(describing:)` gives for a type, without first asking the
        // runtime whether the type conforms to three printing protocols: each "no" scans every
        // conformance record in the binary (about 2 million instructions a version, in `migrate`).
        typeName = _typeName(V.self, qualified: false)
        oldestReader = V.oldestReader
        dateEncoding = V.dateEncoding
        storedWithoutVersion = V.storedWithoutVersion
        decode = { value in try TreeDecoder.decode(V.self, from: value, dates: V.dateEncoding) }
        decodeTrackingKeys = { value in
            let (decoded, readKeys) = try TreeDecoder.decodeTrackingKeys(
                V.self, from: value, dates: V.dateEncoding)
            return (decoded, readKeys)
        }
        probe = { VersionProbe(V.self) }
    }

    deinit {
        found.load(ordering: .acquiring)?.release()
    }

    /// Reads `part` of what probing the version found: probed once — when first asked, never
    /// when the chain is made — and kept. Safe from any thread; the first probe is the one kept.
    @inline(__always)
    private func probed<Part>(_ part: (VersionProbe) -> Part) -> Part {
        if let found = found.load(ordering: .acquiring) { return found._withUnsafeGuaranteedRef(part) }
        probeOnce()
        // Set by `probeOnce`, never unset.
        return found.load(ordering: .acquiring).unsafelyUnwrapped._withUnsafeGuaranteedRef(part)
    }

    /// Runs ``probe`` and keeps what it found, unless another thread did first.
    @inline(never)
    private func probeOnce() {
        probing.withLock { _ in
            guard found.load(ordering: .acquiring) == nil else { return }
            found.store(Unmanaged.passRetained(probe()), ordering: .releasing)
        }
    }

    /// The stored keys, when known (declared, or read off the `Decodable` conformance).
    var keys: StoredKeys? { probed { $0.keys } }
    /// ``keys`` as bytes, when known.
    var keyTable: KeyTable? { probed { $0.keyTable } }
    /// Whether ``keys`` is known, without copying it.
    var knowsKeys: Bool { probed { $0.keys != nil } }
    /// Why ``keys`` is unknown.
    var keyProblem: ProbeProblem? { probed { $0.keyProblem } }
    /// The version's stored JSON shape.
    var shape: RecordShape? { probed { $0.shape } }
    /// Whether the version writes exactly the keys it reads (checked only by validation).
    func roundTripProblem() -> ProbeProblem? {
        let check = probed { $0.roundTripProblem }
        return check()
    }
}

extension VersionEntry {
    /// Whether this version's records are declared readable by readers of `version`, so that a
    /// bare record matching both is read as the older `version`, which loses nothing.
    func readable(byReadersOf version: Int) -> Bool {
        oldestReader <= version && version < self.version
    }
}

extension ModelVersion {
    /// Appends the versions from 0 up to `Self`, oldest first.
    static func collectVersions(into entries: inout [VersionEntry], depth: Int) {
        guard depth <= VersionEntry.maxDepth else { return }
        if Predecessor.self != NoPredecessor.self {
            Predecessor.collectVersions(into: &entries, depth: depth + 1)
        }
        entries.append(VersionEntry(Self.self))
    }
}
