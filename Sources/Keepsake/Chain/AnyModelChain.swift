import Foundation

/// A ``ModelChain`` with its model type erased, for code that handles many models at once:
/// the ``Migrator`` and the `migrate` CLI.
public struct AnyModelChain: Sendable {
    /// The model's name (`"Person"`).
    public let name: String
    /// The storage keys the model lives under by default.
    public let defaultKeys: [String]
    /// The keys of the model's many records, by pattern (``ModelChain/keyPatterns``).
    public let keyPatterns: [KeyPattern]
    /// The latest version number.
    public let latestVersion: Int
    /// Each version, oldest first.
    public let versions: [VersionSummary]
    /// What ``ModelChain/validate()`` finds wrong with the chain.
    public let problems: @Sendable () -> [ChainError]

    /// Each version's shape, probed once per version (``shapes``).
    @usableFromInline let readShapes: @Sendable () -> [Int: RecordShape]
    @usableFromInline let pipeline:
        @Sendable (ParsedRecord, MigrationContext, _ encodeLatest: Bool) -> ChainEvaluation<any ModelVersion>
    /// The pipeline as the ``Migrator`` runs it over a store: the record's report, its error
    /// located in the store (`store`, `key`), and its verified latest envelope. The value itself
    /// is not kept: boxed as `any ModelVersion` (a record of more than three words is a heap box)
    /// and copied through the outcome only to be dropped, it cost 1.2–1.6k instructions a record.
    @usableFromInline let reportPipeline:
        @Sendable (ParsedRecord, MigrationContext, _ encodeLatest: Bool, _ key: String, _ store: String) -> (
            report: RecordReport, latest: Data?
        )
    @usableFromInline let encodeErased: @Sendable (any ModelVersion) throws(KeepsakeError) -> Data

    /// Erases `chain`'s model type; the same as ``ModelChain/erased``.
    @inlinable
    public init<Latest>(_ chain: ModelChain<Latest>) {
        name = chain.name
        defaultKeys = chain.defaultKeys
        keyPatterns = chain.keyPatterns
        latestVersion = chain.latestVersion
        versions = chain.versionSummaries
        problems = { chain.problems }
        readShapes = { chain.shapes }
        pipeline = { parsed, context, encodeLatest in
            let evaluation = chain.evaluate(parsed, context: context, encodeLatest: encodeLatest)
            return ChainEvaluation(
                outcome: evaluation.outcome.map { $0 as any ModelVersion }, detected: evaluation.detected,
                latest: evaluation.latest)
        }
        reportPipeline = { parsed, context, encodeLatest, key, store in
            let evaluation = chain.evaluate(parsed, context: context, encodeLatest: encodeLatest)
            let report = RecordReport(
                key: key, schema: chain.name, latestVersion: chain.latestVersion, outcome: evaluation.outcome,
                locatedIn: store)
            return (report, evaluation.latest)
        }
        encodeErased = { value throws(KeepsakeError) in
            guard let latest = value as? Latest else {
                throw KeepsakeError(
                    .invalidArgument, "\(type(of: value)) is not \(chain.name)'s latest version, \(Latest.self)")
            }
            return try chain.encode(latest)
        }
    }

    /// ``ModelChain/encode(_:)`` with the model type erased: `value` must be the latest version.
    public func encode(_ value: any ModelVersion) throws(KeepsakeError) -> Data {
        try encodeErased(value)
    }

    /// ``ModelChain/outcome(of:context:)`` with the model type erased.
    public func outcome(of bytes: Data?, context: MigrationContext) -> RecordOutcome<any ModelVersion> {
        guard let bytes else { return .absent }
        do throws(KeepsakeError) {
            return pipeline(try ParsedRecord.parse(bytes), context, false).outcome
        } catch {
            return .failed(error, stored: StoredInfo())
        }
    }
}

extension AnyModelChain {
    /// What is wrong with `chains` as one app's set: two chains with one name, a fixed key two
    /// chains declare, or two chains' key patterns that overlap (`tenant-*` and `tenant-eu-*`:
    /// a record stored without an envelope under `tenant-eu-1` could be either model). A
    /// chain's fixed key that another chain's pattern matches is not a conflict: an exact key
    /// is matched before any pattern.
    ///
    /// `KeepsakeTesting.ChainValidation.validate(_:)` fails a test on each.
    public static func conflicts(among chains: [AnyModelChain]) -> [ChainError] {
        var found: [ChainError] = []
        for (index, first) in chains.enumerated() {
            for second in chains[(index + 1)...] {
                if first.name.isExactly(second.name) {
                    found.append(ChainError(chain: second.name, version: nil, "two chains are named '\(first.name)'"))
                    continue
                }
                if let key = first.defaultKeys.first(where: { key in second.defaultKeys.contains { $0.isExactly(key) } }
                ) {
                    found.append(
                        ChainError(
                            chain: second.name, version: nil,
                            "its default key '\(key)' is also a default key of \(first.name); a key belongs to one model"
                        ))
                }
                for pattern in first.keyPatterns {
                    guard let other = second.keyPatterns.first(where: { $0.overlaps(pattern) }) else { continue }
                    let example = pattern.prefix.utf8.count >= other.prefix.utf8.count ? pattern.prefix : other.prefix
                    found.append(
                        ChainError(
                            chain: second.name, version: nil,
                            """
                            its key pattern \(other) overlaps \(first.name)'s \(pattern): a record stored without an \
                            envelope under a key such as '\(example)…' could be either model; give them prefixes \
                            neither of which starts with the other
                            """))
                }
            }
        }
        return found
    }
}
