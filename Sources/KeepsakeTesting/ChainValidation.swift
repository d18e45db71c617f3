import Keepsake

/// Validates model chains in tests, where a broken chain should fail a test rather than stop
/// the program (as ``ModelChain/init(name:defaultKeys:)`` does).
///
/// ```swift
/// @Test func personChainIsValid() throws {
///     try ChainValidation.validate(PersonV3.self, name: "Person")
/// }
/// ```
public enum ChainValidation {
    /// Validates the chain ending at `latest`.
    ///
    /// - Throws: ``ChainError`` naming the chain and the offending version.
    public static func validate<Latest: ModelVersion>(_ latest: Latest.Type, name: String) throws(ChainError) {
        _ = try ModelChain<Latest>.validated(name: name, defaultKeys: [])
    }

    /// Pairs of versions whose stored key sets are identical: a record of either saved without a
    /// version number cannot be told apart (loading it throws `.ambiguousRecord`).
    public static func indistinguishableBareVersions<Latest>(_ chain: ModelChain<Latest>) -> [(Int, Int)] {
        let versions = chain.versionSummaries
        var pairs: [(Int, Int)] = []
        for (index, first) in versions.enumerated() {
            for second in versions[(index + 1)...] where first.storedKeys == second.storedKeys {
                pairs.append((first.version, second.version))
            }
        }
        return pairs
    }
}
