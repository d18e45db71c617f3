import Keepsake

/// Validates model chains in tests, so that what is wrong with a chain fails a test with a
/// message naming the chain, the version, the type and the field — never a trap when the app
/// starts.
///
/// ```swift
/// @Test func settingsChainIsValid() throws {
///     try ChainValidation.validate(Settings.chain)
/// }
/// ```
///
/// It checks that versions run 0, 1, 2, … without gaps; that each version's stored keys can be
/// read off its `Decodable` conformance (or are declared); that no record stored without a
/// version could match two versions; that each version writes exactly the keys it reads; that a
/// declared date format reads back the dates it writes; and that a version older readers read
/// compatibly stores dates as they read them and no enum case they do not know.
public enum ChainValidation {
    /// Validates `chain`.
    ///
    /// - Throws: `ChainError` naming the chain, the version, the type and the field.
    public static func validate<Latest>(_ chain: ModelChain<Latest>) throws(ChainError) {
        try chain.validate()
    }

    /// Validates an app's chains as one set: each chain, and that no two share a name, a
    /// default key or overlapping key patterns (`AnyModelChain.conflicts(among:)`).
    ///
    /// ```swift
    /// @Test func appChainsAreValid() throws {
    ///     try ChainValidation.validate([Settings.chain.erased, Tenant.chain.erased])
    /// }
    /// ```
    ///
    /// - Throws: The first `ChainError` found.
    public static func validate(_ chains: [AnyModelChain]) throws(ChainError) {
        for chain in chains {
            if let problem = chain.problems().first { throw problem }
        }
        if let conflict = AnyModelChain.conflicts(among: chains).first { throw conflict }
    }

    /// Validates the chain ending at `latest`, as a chain named `name` — including what
    /// `ModelChain.init(name:defaultKeys:)` would stop the program on.
    ///
    /// - Throws: `ChainError` naming the chain, the version, the type and the field.
    public static func validate<Latest: ModelVersion>(_ latest: Latest.Type, name: String) throws(ChainError) {
        _ = try ModelChain<Latest>.validated(name: name, defaultKeys: [])
    }

    /// Pairs of versions that one record stored without a version could match both of (loading
    /// such a record throws `.ambiguousRecord`); ``validate(_:)-(ModelChain<Latest>)`` fails on each. A later version
    /// that declares the earlier one's readers compatible is not such a pair: the record is read
    /// as the earlier version.
    public static func indistinguishableBareVersions<Latest>(_ chain: ModelChain<Latest>) -> [(Int, Int)] {
        indistinguishableBareVersions(among: chain.versionSummaries)
    }

    /// The same pairs for a chain with its model type erased.
    public static func indistinguishableBareVersions(_ chain: AnyModelChain) -> [(Int, Int)] {
        indistinguishableBareVersions(among: chain.versions)
    }

    private static func indistinguishableBareVersions(among versions: [VersionSummary]) -> [(Int, Int)] {
        var pairs: [(Int, Int)] = []
        let candidates = versions.filter(\.storedWithoutVersion)
        for (index, first) in candidates.enumerated() {
            guard let firstKeys = first.storedKeys else { continue }
            for second in candidates[(index + 1)...] {
                if let secondKeys = second.storedKeys, firstKeys.overlaps(secondKeys),
                    second.oldestReader > first.version
                {
                    pairs.append((first.version, second.version))
                }
            }
        }
        return pairs
    }
}
