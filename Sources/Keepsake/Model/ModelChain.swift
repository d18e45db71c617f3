import Foundation

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
/// An invalid chain (versions not contiguous from 0, a version twice, a predecessor that is not
/// exactly one below) is a programmer error: ``init(name:defaultKeys:)`` stops the program with
/// a message naming the chain and the version, and ``validated(name:defaultKeys:)`` throws it,
/// for tests (`KeepsakeTesting.expectValidChain`).
public struct ModelChain<Latest: ModelVersion>: Sendable {
    /// The model's name, stored in every envelope as `schema`.
    public let name: String
    /// The storage keys this model lives under by default (`"person"`).
    public let defaultKeys: [String]
    /// The versions, oldest first; `versions[n].version == n`.
    let versions: [VersionEntry]

    /// The latest version number.
    public var latestVersion: Int { Latest.version }

    /// Each version's number, type name and stored keys, oldest first.
    public var versionSummaries: [VersionSummary] {
        versions.map { VersionSummary(version: $0.version, typeName: $0.typeName, storedKeys: $0.keys) }
    }

    /// Builds and validates the chain ending at `Latest`.
    ///
    /// - Important: An invalid chain stops the program (a programmer error, like an
    ///   out-of-bounds index) with a message naming the chain and the offending version.
    public init(name: String, defaultKeys: [String]) {
        do {
            self = try Self.validated(name: name, defaultKeys: defaultKeys)
        } catch {
            preconditionFailure(error.description)
        }
    }

    /// Builds the chain ending at `Latest`, or throws what is wrong with it.
    public static func validated(name: String, defaultKeys: [String]) throws(ChainError) -> ModelChain {
        var entries: [VersionEntry] = []
        Latest.collectVersions(into: &entries, depth: 0)
        try validate(name: name, entries: entries)
        return ModelChain(name: name, defaultKeys: defaultKeys, versions: entries)
    }

    private init(name: String, defaultKeys: [String], versions: [VersionEntry]) {
        self.name = name
        self.defaultKeys = defaultKeys
        self.versions = versions
    }

    private static func validate(name: String, entries: [VersionEntry]) throws(ChainError) {
        guard !name.isEmpty else { throw ChainError(chain: name, version: nil, "a chain needs a non-empty name") }
        guard entries.count <= VersionEntry.maxDepth else {
            throw ChainError(chain: name, version: nil, """
                the chain has more than \(VersionEntry.maxDepth) versions or its predecessors form a cycle
                """)
        }
        guard let first = entries.first, first.version == 0 else {
            let found = entries.first.map { "\($0.typeName) has version \($0.version)" } ?? "no version"
            throw ChainError(chain: name, version: entries.first?.version,
                             "versions must start at 0, but the first version \(found)")
        }
        var seen: [Int: String] = [:]
        for (index, entry) in entries.enumerated() {
            if let other = seen[entry.version] {
                throw ChainError(chain: name, version: entry.version,
                                 "version \(entry.version) appears twice (\(other) and \(entry.typeName))")
            }
            seen[entry.version] = entry.typeName
            if index > 0 {
                let previous = entries[index - 1]
                guard entry.version == previous.version + 1 else {
                    throw ChainError(chain: name, version: entry.version, """
                        version \(entry.version) (\(entry.typeName)) has predecessor version \(previous.version) \
                        (\(previous.typeName)); a predecessor must be exactly one below, so versions run 0, 1, 2, … \
                        without gaps
                        """)
                }
            }
        }
    }
}

/// One version of a chain, as ``ModelChain/versionSummaries`` describes it.
public struct VersionSummary: Sendable, Hashable {
    public let version: Int
    public let typeName: String
    public let storedKeys: StoredKeys
}

/// What is wrong with a model chain: the chain's name, the version, and why.
public struct ChainError: Error, Sendable, CustomStringConvertible {
    public let chain: String
    public let version: Int?
    public let reason: String

    init(chain: String, version: Int?, _ reason: String) {
        self.chain = chain
        self.version = version
        self.reason = reason
    }

    public var description: String {
        let which = version.map { " (version \($0))" } ?? ""
        return "Invalid model chain '\(chain)'\(which): \(reason)."
    }
}

/// A version of a chain with its type erased: how to decode it and how to build it from the
/// version below.
struct VersionEntry: Sendable {
    static let maxDepth = 1_000

    let version: Int
    let typeName: String
    let keys: StoredKeys
    let decode: @Sendable (JSONValue) throws -> any ModelVersion
    let migrate: @Sendable (any ModelVersion, MigrationContext) throws -> any ModelVersion

    init<V: ModelVersion>(_ type: V.Type) {
        version = V.version
        typeName = String(describing: V.self)
        keys = V.storedKeys
        decode = { value in try JSONValueDecoder.decode(V.self, from: value) }
        migrate = { previous, context in
            // The chain walks versions in order, so `previous` is always a `V.Predecessor`.
            try V(migrating: previous as! V.Predecessor, context: context)
        }
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
