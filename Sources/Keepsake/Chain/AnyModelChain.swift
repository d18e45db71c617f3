import Foundation

/// A ``ModelChain`` with its model type erased, for code that handles many models at once:
/// the ``Migrator`` and the `migrate` CLI.
public struct AnyModelChain: Sendable {
    /// The model's name (`"Person"`).
    public let name: String
    /// The storage keys the model lives under by default.
    public let defaultKeys: [String]
    /// The latest version number.
    public let latestVersion: Int
    /// Each version, oldest first.
    public let versions: [VersionSummary]
    /// What ``ModelChain/validate()`` finds wrong with the chain.
    public let problems: @Sendable () -> [ChainError]

    /// Each version's shape, probed once per version (``shapes``).
    let readShapes: @Sendable () -> [Int: RecordShape]
    let pipeline: @Sendable (ParsedRecord, MigrationContext, _ encodeLatest: Bool) -> RecordOutcome<any ModelVersion>
    private let encodeErased: @Sendable (any ModelVersion) throws(KeepsakeError) -> Data

    /// Erases `chain`'s model type; the same as ``ModelChain/erased``.
    public init<Latest>(_ chain: ModelChain<Latest>) {
        name = chain.name
        defaultKeys = chain.defaultKeys
        latestVersion = chain.latestVersion
        versions = chain.versionSummaries
        problems = { chain.problems }
        readShapes = { chain.shapes }
        pipeline = { parsed, context, encodeLatest in
            chain.outcome(of: parsed, context: context, encodeLatest: encodeLatest).map { $0 as any ModelVersion }
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

    /// ``ModelChain/outcome(of:context:encodeLatest:)`` with the model type erased.
    public func outcome(of bytes: Data?, context: MigrationContext, encodeLatest: Bool = false) -> RecordOutcome<
        any ModelVersion
    > {
        guard let bytes else { return .absent }
        do throws(KeepsakeError) {
            return pipeline(try ParsedRecord.parse(bytes), context, encodeLatest)
        } catch {
            return .failed(error, stored: StoredInfo())
        }
    }
}
