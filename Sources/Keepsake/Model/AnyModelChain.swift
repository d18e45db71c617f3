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

    let detect: @Sendable (ParsedRecord) throws(KeepsakeError) -> DetectedRecord
    /// Decodes and migrates; encodes the verified envelope when the record is outdated or
    /// `alwaysEncode` is set, else returns `nil`.
    let process: @Sendable (DetectedRecord, MigrationContext, _ alwaysEncode: Bool) throws(KeepsakeError) -> Data?

    public init<Latest>(_ chain: ModelChain<Latest>) {
        name = chain.name
        defaultKeys = chain.defaultKeys
        latestVersion = chain.latestVersion
        versions = chain.versionSummaries
        detect = { record throws(KeepsakeError) in try chain.detect(record) }
        process = { detected, context, alwaysEncode throws(KeepsakeError) in
            let value = try chain.migrate(detected, context: context)
            let outdated = detected.version < chain.latestVersion
            return outdated || alwaysEncode ? try chain.encodeVerified(value) : nil
        }
    }
}

extension ModelChain {
    /// This chain with its model type erased.
    public var erased: AnyModelChain { AnyModelChain(self) }
}
