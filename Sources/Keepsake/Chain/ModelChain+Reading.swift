import Foundation

// The one pipeline from stored bytes to a ``RecordOutcome``: parse once (`ParsedRecord`, which
// tells the stored forms apart), detect the stored version on the record's tape, decode once into
// that version, run the steps, and — only when a write follows — encode and verify the latest
// envelope (`ModelChain+Writing.swift`).

extension ModelChain {
    /// Reads stored bytes and migrates them in memory to `Latest`: the pipeline every reader of
    /// records uses. Nothing is written anywhere.
    ///
    /// - Parameters:
    ///   - bytes: The stored bytes; `nil` when nothing is stored (the outcome is `.absent`).
    ///   - context: Clock, identifiers and device identity for the steps.
    /// - Returns: The outcome. Errors in it name no store or key; callers that know them add them.
    @inlinable
    public func outcome(of bytes: Data?, context: MigrationContext) -> RecordOutcome<Latest> {
        evaluate(bytes, context: context).outcome
    }

    /// The pipeline over stored bytes, with what its callers inside Keepsake need beside the
    /// outcome (``ChainEvaluation``): the detection a save over the same bytes decides from,
    /// and — with `encodeLatest` — the verified latest envelope of an outdated record.
    @inlinable
    package func evaluate(
        _ bytes: Data?, context: MigrationContext, encodeLatest: Bool = false
    ) -> ChainEvaluation<Latest> {
        guard let bytes else { return ChainEvaluation(outcome: .absent) }
        do throws(KeepsakeError) {
            return evaluate(try ParsedRecord.parse(bytes), context: context, encodeLatest: encodeLatest)
        } catch {
            return ChainEvaluation(outcome: .failed(error, stored: StoredInfo()))
        }
    }

    /// The pipeline from a parsed record on (the ``Migrator`` parses once to route by schema).
    /// With `encodeLatest`, an outdated record's latest envelope is encoded and verified, as a
    /// caller about to write it back needs; a record that fails verification is then `.failed`
    /// with `.verificationFailed`.
    @inlinable
    func evaluate(_ parsed: ParsedRecord, context: MigrationContext, encodeLatest: Bool) -> ChainEvaluation<Latest> {
        var stored = StoredInfo(stringWrapped: parsed.stringWrapped)
        var detected: DetectedRecord?
        do throws(KeepsakeError) {
            let record = try decodeRecord(parsed, context: context, stored: &stored, detected: &detected)
            if record.isNewer { return ChainEvaluation(outcome: .newerReadable(record), detected: detected) }
            guard record.wasMigrated else { return ChainEvaluation(outcome: .current(record), detected: detected) }
            return ChainEvaluation(
                outcome: .outdated(record), detected: detected,
                latest: encodeLatest ? try encodeVerified(record.value) : nil)
        } catch  where error.code == .newerVersion && stored.version.map({ $0 > latestVersion }) == true {
            return ChainEvaluation(outcome: .newer(error, stored: stored), detected: detected)
        } catch {
            return ChainEvaluation(outcome: .failed(error, stored: stored), detected: detected)
        }
    }

    /// Detects, decodes and migrates a parsed record: the pipeline's one body, which
    /// ``evaluate(_:context:encodeLatest:)`` sorts into outcomes and ``read(_:context:)`` returns.
    /// `stored` learns the version and form, and `detected` the detection, as soon as they are
    /// known, for failures and for a save over the same record.
    @inlinable
    func decodeRecord(
        _ parsed: ParsedRecord, context: MigrationContext, stored: inout StoredInfo,
        detected found: inout DetectedRecord?
    ) throws(KeepsakeError) -> DecodedRecord<Latest> {
        let detected = try detect(parsed)
        found = detected
        stored.version = detected.version
        stored.form = detected.form
        let value: Latest
        if detected.version > latestVersion {
            guard let reader = detected.oldestReader, reader <= latestVersion else {
                throw newerError(detected.version)
            }
            // A newer version that declares this release's readers compatible: read its data as
            // our latest type, which ignores the keys it does not know. Never migrated.
            value = try latest(decodeCompatibly(detected))
        } else {
            value = try migrate(detected, context: context)
        }
        return DecodedRecord(
            value: value, storedVersion: detected.version, latestVersion: latestVersion,
            form: detected.form, stringWrapped: detected.stringWrapped)
    }

    /// Reads stored bytes in any stored form (an envelope, an object with an inline `version`, a bare object, or a JSON
    /// string holding one of those) and migrates them in memory to `Latest`.
    /// Nothing is written anywhere: use this for stores of your own, or to inspect bytes.
    ///
    /// - Throws: ``KeepsakeError`` (`.corruptRecord`, `.unrecognisedRecord`, `.ambiguousRecord`,
    ///   `.newerVersion`, `.schemaMismatch`, `.migrationFailed`, `.deviceIdentityUnavailable`),
    ///   without store or key.
    public func read(_ bytes: Data, context: MigrationContext) throws(KeepsakeError) -> DecodedRecord<Latest> {
        var stored = StoredInfo()
        var detected: DetectedRecord?
        return try decodeRecord(ParsedRecord.parse(bytes), context: context, stored: &stored, detected: &detected)
    }
}

/// The version a record was detected as, and the object holding its fields.
/// What the pipeline makes of stored bytes: the outcome, and beside it what Keepsake's own
/// callers need so that no decision reads the bytes twice.
@usableFromInline
package struct ChainEvaluation<Latest: Sendable>: Sendable {
    @usableFromInline package var outcome: RecordOutcome<Latest>
    /// The stored record's detection, once it got that far: what a save over the same bytes
    /// decides from (replace, merge into a newer record, refuse).
    @usableFromInline var detected: DetectedRecord?
    /// The verified latest envelope of an outdated record, when it was asked for.
    @usableFromInline package var latest: Data?

    @usableFromInline
    init(outcome: RecordOutcome<Latest>, detected: DetectedRecord? = nil, latest: Data? = nil) {
        self.outcome = outcome
        self.detected = detected
        self.latest = latest
    }
}

@usableFromInline
struct DetectedRecord: Sendable {
    @usableFromInline let version: Int
    @usableFromInline let form: RecordForm
    @usableFromInline let stringWrapped: Bool
    /// The record's fields: the entry of the envelope's `data`, or of the whole record, on its
    /// tape.
    let fields: StoredFields
    /// The envelope's `oldestReader`: the oldest version whose readers can read the record.
    @usableFromInline var oldestReader: Int?
    /// The stored version's value, when detection already decoded it (a bare record matched to
    /// a version whose keys are not known ahead).
    /// (A reference, so that copying a detection needs no look-up of an optional existential's
    /// type, which unspecialised code makes through the runtime's cache every time.)
    var decoded: Decoded?

    /// A value detection decoded.
    final class Decoded: Sendable {
        let value: any ModelVersion
        init(_ value: any ModelVersion) { self.value = value }
    }
}

/// Where a stored record's fields are: an entry of its tape.
@usableFromInline
struct StoredFields: Sendable {
    let tape: JSONTape
    let entry: Int

    /// The fields, for decoding.
    var node: TreeNode { .tape(tape, entry) }

    /// The fields as a ``JSONValue`` tree, built (what a merge into a newer record edits).
    var value: JSONValue { tape.value(at: entry) }
}

extension ModelChain {
    /// Finds the stored version of `record`, by its stored form (``ParsedRecord/layout(for:)``):
    /// an envelope's version; an inline integer `version`; or, for a bare object, the one
    /// version that reads it completely.
    @usableFromInline
    func detect(_ record: ParsedRecord) throws(KeepsakeError) -> DetectedRecord {
        switch try record.layout(for: name) {
        case let .envelope(parts):
            return try detectEnvelope(parts, stringWrapped: record.stringWrapped)
        case let .inlineVersion(versionEntry):
            let version = try TreeNode.tape(record.tape, versionEntry).recordVersion(
                at: "top-level \"\(StoredEnvelope.versionKey)\"")
            let detected = DetectedRecord(
                version: version, form: .inlineVersion, stringWrapped: record.stringWrapped,
                fields: StoredFields(tape: record.tape, entry: 0))
            guard version <= latestVersion else { return detected }
            let entry = try entry(forVersion: version)
            if let keys = entry.keys {
                let key = StoredEnvelope.versionKey
                let readsVersion = keys.required.contains(key) || keys.optional.contains(key)
                let objectKeys = record.keys
                let fieldKeys = readsVersion ? objectKeys : objectKeys.filter { !$0.isExactly(key) }
                try checkKeys(fieldKeys, of: entry, keys: keys)
            }
            return detected
        case .bare:
            return try detectBare(record)
        }
    }

    /// A bare record is the version whose key set it matches exactly; a version whose keys are
    /// not known ahead matches when it decodes the record and reads every one of its keys.
    private func detectBare(_ record: ParsedRecord) throws(KeepsakeError) -> DetectedRecord {
        let tape = record.tape
        // The first match is held apart, so that the usual record — one version matches — costs
        // no array; versions are matched on the object's own member names, not a copy of them.
        var first: DetectedRecord?
        var others: [DetectedRecord] = []
        for entry in versions where entry.storedWithoutVersion {
            var decodedValue: DetectedRecord.Decoded?
            if let table = entry.keyTable {
                // Member names are distinct (the parser rejects duplicates), so a count outside
                // what the version allows rules it out before any name is compared.
                guard tape.names(of: 0, match: table) ?? (entry.keys?.matches(record.keys) == true) else { continue }
            } else {
                // `try?` is right here: a version that cannot decode the record is simply not a
                // match; the record's error (unrecognised) is reported below if none matches.
                guard let decoded = try? entry.decodeTrackingKeys(record.root),
                    tape.memberNames(of: 0).allSatisfy({ decoded.readKeys.contains(ExactString(tape.string(at: $0))) })
                else { continue }
                decodedValue = DetectedRecord.Decoded(decoded.value)
            }
            var match = DetectedRecord(
                version: entry.version, form: .bare, stringWrapped: record.stringWrapped,
                fields: StoredFields(tape: record.tape, entry: 0))
            match.decoded = decodedValue
            if first == nil { first = match } else { others.append(match) }
        }
        if let oldest = first {
            if others.isEmpty { return oldest }
            // Versions that declare the oldest match's readers compatible only add keys to it: the
            // record is read as that oldest match (release bare records predate them all).
            if others.allSatisfy({ versions[$0.version].readable(byReadersOf: oldest.version) }) { return oldest }
        }
        let matches = first.map { [$0] + others } ?? []
        let candidates = versions.filter(\.storedWithoutVersion)
        let keyList = "{" + abridged(record.keys.sorted()) + "}"
        if matches.isEmpty {
            let expected = candidates.map { "v\($0.version) \($0.keys?.description ?? "(keys read by decoding)")" }
                .joined(separator: ", ")
            throw KeepsakeError(
                .unrecognisedRecord,
                """
                \(withArticle(name)) record without a version has keys \(keyList), which match no version of \(name) \
                (\(candidates.isEmpty ? "every version declares storedWithoutVersion = false" : "expected one of: \(expected)"))
                """)
        }
        let matching = matches.map { "v\($0.version)" }.joined(separator: ", ")
        throw KeepsakeError(
            .ambiguousRecord,
            """
            \(withArticle(name)) record without a version has keys \(keyList), which match several versions \
            (\(matching)); store it with a version to migrate it
            """)
    }

    private func detectEnvelope(
        _ parts: StoredEnvelope.Parts, stringWrapped: Bool
    ) throws(KeepsakeError) -> DetectedRecord {
        let (version, oldestReader) = try StoredEnvelope.version(of: parts, expecting: name)
        let tape = parts.tape
        guard version <= latestVersion else {
            return DetectedRecord(
                version: version, form: .envelope, stringWrapped: stringWrapped,
                fields: StoredFields(tape: tape, entry: try StoredEnvelope.fields(of: parts)),
                oldestReader: oldestReader)
        }
        let entry = try entry(forVersion: version)
        let fields = try StoredEnvelope.fields(of: parts)
        if let table = entry.keyTable {
            // The names by their bytes; decoded only when one has escapes, or for the error.
            let fieldKeys = { tape.memberNames(of: fields).map(tape.string(at:)) }
            if !(tape.names(of: fields, match: table) ?? (entry.keys?.matches(fieldKeys()) == true)),
                let keys = entry.keys
            {
                try checkKeys(fieldKeys(), of: entry, keys: keys)
            }
        }
        if let inner = tape.member(StoredEnvelope.versionKey, of: fields), tape.entries[inner].kind == .number {
            let text = tape.number(at: inner)
            if Int(text) != version {
                throw KeepsakeError(
                    .corruptRecord,
                    "the envelope says version \(version) but its data says version \(text)")
            }
        }
        return DetectedRecord(
            version: version, form: .envelope, stringWrapped: stringWrapped,
            fields: StoredFields(tape: tape, entry: fields),
            oldestReader: oldestReader)
    }

    @usableFromInline
    func newerError(_ version: Int) -> KeepsakeError {
        KeepsakeError(
            .newerVersion,
            """
            the record is \(name) version \(version), newer than this release knows (latest \(latestVersion)); \
            it was left untouched — use a release that knows version \(version)
            """)
    }

    /// Throws unless this release knows `version` (see ``entry(forVersion:)``).
    @usableFromInline
    func checkKnown(version: Int) throws(KeepsakeError) {
        _ = try entry(forVersion: version)
    }

    func entry(forVersion version: Int) throws(KeepsakeError) -> VersionEntry {
        if version > latestVersion { throw newerError(version) }
        guard version >= 0 else {
            throw KeepsakeError(
                .unrecognisedRecord, "the record claims \(name) version \(version), which does not exist")
        }
        return versions[version]
    }

    func checkKeys(_ fieldKeys: [String], of entry: VersionEntry, keys: StoredKeys) throws(KeepsakeError) {
        guard !keys.matches(fieldKeys) else { return }
        let present = Set(fieldKeys.map(ExactString.init))
        let missing = keys.required.filter { !present.contains(ExactString($0)) }.sorted()
        let unknown = fieldKeys.filter { !keys.all.containsExactly($0) }.sorted()
        throw fieldsMismatch(entry, missing: missing, unknown: unknown)
    }

    func fieldsMismatch(_ entry: VersionEntry, missing: [String], unknown: [String]) -> KeepsakeError {
        var parts: [String] = []
        if !missing.isEmpty { parts.append("missing " + abridged(missing)) }
        if !unknown.isEmpty { parts.append("unknown " + abridged(unknown)) }
        return KeepsakeError(
            .corruptRecord,
            """
            the record says \(name) version \(entry.version) but its fields do not match that version \
            (\(parts.joined(separator: "; ")))
            """)
    }

    /// Decodes a detected record into its stored version, then walks the steps to `Latest`.
    ///
    /// The walk is typed (``ModelVersion/migrated(from:in:context:)``): each step's value has its
    /// own version's type, never `any ModelVersion`, so that no value is boxed or cast per step.
    @inlinable
    func migrate(_ detected: DetectedRecord, context: MigrationContext) throws(KeepsakeError) -> Latest {
        try checkKnown(version: detected.version)
        let scoped = detected.version < latestVersion ? context.scopedToOneRecord() : context
        return try Latest.migrated(from: detected, in: self, context: scoped)
    }

    /// `detected` decoded as its stored version `V` (the value detection already decoded, when
    /// it did).
    @usableFromInline
    func decodeStored<V: ModelVersion>(_: V.Type, _ detected: DetectedRecord) throws(KeepsakeError) -> V {
        if let decoded = detected.decoded { return try predecoded(V.self, decoded) }
        return try decodeFields(V.self, detected.fields.node, version: detected.version, form: detected.form)
    }

    /// What detection decoded, as `V`. (Apart from ``decodeStored(_:_:)``, which would otherwise
    /// look up the type of an optional `V` on every call, for the cast.)
    @inline(never)
    private func predecoded<V: ModelVersion>(_: V.Type, _ decoded: DetectedRecord.Decoded) throws(KeepsakeError) -> V {
        guard let value = decoded.value as? V else {
            // Unreachable: detection decodes the version it detected.
            throw KeepsakeError(.migrationFailed, "\(name) version \(V.version) was decoded as another type")
        }
        return value
    }

    /// The fields of a record detected as `version` in `form` (`fields`, a parsed record's or
    /// the encoder's own tree) decoded as `V`.
    func decodeFields<V: ModelVersion>(
        _: V.Type, _ fields: TreeNode, version: Int, form: RecordForm
    ) throws(KeepsakeError) -> V {
        guard versions.indices.contains(V.version) else {
            // Unreachable: the walk stops at the stored version, which detection checked.
            throw KeepsakeError(.unrecognisedRecord, "\(name) has no version \(V.version)")
        }
        let entry = versions[V.version]
        guard entry.knowsKeys else {
            return try decodeTrackingKeys(V.self, fields, version: version, form: form, entry: entry)
        }
        do {
            return try TreeDecoder.decode(V.self, from: fields, dates: V.dateEncoding)
        } catch {
            throw decodeFailure(error, version: version)
        }
    }

    /// `fields` decoded as `V`, a version whose keys are not known ahead: the decode tells
    /// which keys it read, and a key it did not read is an error.
    private func decodeTrackingKeys<V: ModelVersion>(
        _: V.Type, _ fields: TreeNode, version: Int, form: RecordForm, entry: VersionEntry
    ) throws(KeepsakeError) -> V {
        let value: V
        let read: Set<ExactString>
        do {
            (value, read) = try TreeDecoder.decodeTrackingKeys(V.self, from: fields, dates: V.dateEncoding)
        } catch {
            throw decodeFailure(error, version: version)
        }
        if let object = fields.asObject {
            let inline = form == .inlineVersion
            let unknown = object.keys.filter {
                !read.contains(ExactString($0)) && !(inline && $0.isExactly(StoredEnvelope.versionKey))
            }
            if !unknown.isEmpty { throw fieldsMismatch(entry, missing: [], unknown: unknown.sorted()) }
        }
        return value
    }

    private func decodeFailure(_ error: any Error, version: Int) -> KeepsakeError {
        if let error = error as? DecodingError {
            return KeepsakeError(
                .corruptRecord, "the record does not decode as \(name) version \(version)",
                cause: error.keepsakeCause, underlying: error)
        }
        return KeepsakeError(
            .corruptRecord, "the record does not decode as \(name) version \(version)",
            cause: .other(String(describing: error)), underlying: error)
    }

    /// The error of the step from `version` to `version + 1`, which threw `error`.
    @usableFromInline
    func stepFailure(from version: Int, _ error: any Error) -> KeepsakeError {
        if let error = error as? KeepsakeError, error.code == .deviceIdentityUnavailable {
            return stepError(from: version, error: error)
        }
        return KeepsakeError(
            .migrationFailed,
            """
            the step from \(name) version \(version) to \(version + 1) failed; the record was left as it was
            """, cause: .other(String(describing: error)), underlying: error)
    }

    @usableFromInline
    func latest(_ value: any ModelVersion) throws(KeepsakeError) -> Latest {
        guard let latest = value as? Latest else {
            // Unreachable: `versions.last` is `Latest`, the type the chain was built from.
            throw KeepsakeError(.migrationFailed, "the last step of \(name) did not produce \(Latest.self)")
        }
        return latest
    }

    @usableFromInline
    func stepError(from version: Int, error: KeepsakeError) -> KeepsakeError {
        KeepsakeError(
            .deviceIdentityUnavailable,
            """
            the step from \(name) version \(version) to \(version + 1) needs this device's identity, and none is \
            available (\(error.message)); the record was left as it was
            """, cause: error.cause, underlying: error.underlying)
    }

    /// Decodes a newer record's data as `Latest`, ignoring the keys `Latest` does not read.
    @usableFromInline
    func decodeCompatibly(_ detected: DetectedRecord) throws(KeepsakeError) -> any ModelVersion {
        guard let entry = versions.last else {
            throw KeepsakeError(.unrecognisedRecord, "the \(name) chain has no versions")  // unreachable
        }
        do {
            return try entry.decode(detected.fields.node)
        } catch let error as DecodingError {
            throw KeepsakeError(
                .corruptRecord,
                """
                the record is \(name) version \(detected.version), declared readable by version \(latestVersion), \
                but does not decode as it
                """, cause: error.keepsakeCause, underlying: error)
        } catch {
            throw KeepsakeError(
                .corruptRecord, "the newer record does not decode as \(name) version \(latestVersion)",
                cause: .other(String(describing: error)), underlying: error)
        }
    }
}

extension ModelVersion {
    /// `detected`, stored at this version or an older one, decoded as its stored version and
    /// migrated step by step up to this version: one typed call per version of the chain, so
    /// that each step gets its predecessor's own type.
    @inlinable
    static func migrated<Latest>(
        from detected: DetectedRecord, in chain: ModelChain<Latest>, context: MigrationContext
    ) throws(KeepsakeError) -> Self {
        guard detected.version < version else { return try chain.decodeStored(Self.self, detected) }
        let previous = try Predecessor.migrated(from: detected, in: chain, context: context)
        let value: Self
        do {
            value = try Self(migrating: previous, context: context)
        } catch {
            throw chain.stepFailure(from: version - 1, error)
        }
        if let missing = context.missingDeviceIdentity() { throw chain.stepError(from: version - 1, error: missing) }
        return value
    }
}

/// At most `limit` names joined with ", ", then how many more: a hostile record of 100k fields
/// gets a message of a few lines, not megabytes.
func abridged(_ names: [String], limit: Int = 20) -> String {
    guard names.count > limit else { return names.joined(separator: ", ") }
    return names.prefix(limit).joined(separator: ", ") + ", … (\(names.count - limit) more)"
}

extension DecodingError {
    /// The failing coding path and reason, without any stored value.
    package var keepsakeCause: KeepsakeError.Cause {
        func path(_ context: Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch self {
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
            return .decoding(path: path(context), reason: context.debugDescription)
        case let .keyNotFound(key, context):
            return .decoding(path: path(context), reason: "missing key '\(key.stringValue)'")
        @unknown default:
            return .decoding(path: "", reason: String(describing: self))
        }
    }
}
