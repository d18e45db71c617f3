import Foundation

/// A record read from bytes: the model at its latest version, and what was stored.
public struct DecodedRecord<Model: Sendable>: Sendable {
    /// The record migrated (in memory) to the latest version.
    public let value: Model
    /// The version that was stored.
    public let storedVersion: Int
    /// How it was laid out.
    public let form: RecordForm
    /// Whether it was a JSON string holding the record.
    public let stringWrapped: Bool
}

extension ModelChain {
    /// Reads stored bytes in any form DESIGN §4 accepts and migrates them in memory to `Latest`.
    /// Nothing is written anywhere: use this for stores of your own, or to inspect bytes.
    ///
    /// The bytes are parsed once, the version detected on the parsed tree, the tree decoded
    /// once into the stored version, and the steps run.
    ///
    /// - Throws: ``KeepsakeError`` (`.corruptRecord`, `.unrecognisedRecord`, `.ambiguousRecord`,
    ///   `.newerVersion`, `.schemaMismatch`, `.migrationFailed`), without store or key.
    public func read(_ bytes: Data, context: MigrationContext) throws(KeepsakeError) -> DecodedRecord<Latest> {
        let parsed = try ParsedRecord.parse(bytes)
        let detected = try detect(parsed)
        let value = try migrate(detected, context: context)
        return DecodedRecord(value: value, storedVersion: detected.version, form: detected.form,
                             stringWrapped: detected.stringWrapped)
    }

    /// The envelope bytes Keepsake stores for `value`: `{"data":…,"schema":…,"version":…}`,
    /// keys sorted, dates ISO 8601 — verified to decode back and re-encode to the same bytes.
    ///
    /// - Throws: `.encodingFailed` or `.verificationFailed`.
    public func encode(_ value: Latest) throws(KeepsakeError) -> Data {
        try encodeVerified(value)
    }
}
