import Foundation

/// A stored record parsed once, before it is matched to a chain.
struct ParsedRecord: Sendable {
    /// The record's top-level value, after unwrapping a JSON string that held JSON.
    let root: JSONValue
    /// Whether the stored value was a JSON string holding the record (UserDefaults-era apps).
    let stringWrapped: Bool

    /// Parses stored bytes. A JSON string is unwrapped once and its text parsed as the record.
    static func parse(_ bytes: Data) throws(KeepsakeError) -> ParsedRecord {
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONParser.parse(bytes)
        } catch {
            throw KeepsakeError(.corruptRecord, "the stored bytes are not valid JSON", cause: error.cause)
        }
        if case let .string(text) = value {
            do throws(JSONSyntaxError) {
                return ParsedRecord(root: try JSONParser.parse(text), stringWrapped: true)
            } catch {
                throw KeepsakeError(.corruptRecord, "the stored value is a JSON string that does not hold JSON",
                                    cause: error.cause)
            }
        }
        return ParsedRecord(root: value, stringWrapped: false)
    }

    /// The envelope's `schema`, if the record is an envelope.
    var envelopeSchema: String? {
        guard case let .object(object) = root, object.count == 3,
              case let .string(schema)? = object["schema"], object["version"] != nil, object["data"] != nil
        else { return nil }
        return schema
    }
}

/// The version a record was detected as, and the object holding its fields.
struct DetectedRecord: Sendable {
    let version: Int
    let form: RecordForm
    let stringWrapped: Bool
    let fields: JSONValue
}

extension ModelChain {
    /// Finds the stored version of `record`, per DESIGN §4: an envelope; an object with an
    /// integer `version`; or a bare object whose key set matches exactly one version.
    func detect(_ record: ParsedRecord) throws(KeepsakeError) -> DetectedRecord {
        guard case let .object(object) = record.root else {
            throw KeepsakeError(.unrecognisedRecord,
                                "expected a JSON object for a \(name) record but found \(record.root.kindName)")
        }
        if record.envelopeSchema != nil {
            return try detectEnvelope(object, stringWrapped: record.stringWrapped)
        }
        if let versionValue = object["version"] {
            let version = try integerVersion(versionValue, where: "top-level \"version\"")
            guard version <= latestVersion else {
                return DetectedRecord(version: version, form: .inlineVersion, stringWrapped: record.stringWrapped,
                                      fields: record.root)
            }
            let entry = try entry(forVersion: version)
            let fieldKeys = entry.keys.required.contains("version") || entry.keys.optional.contains("version")
                ? object.keys : object.keys.filter { $0 != "version" }
            try checkKeys(fieldKeys, of: entry)
            return DetectedRecord(version: version, form: .inlineVersion, stringWrapped: record.stringWrapped,
                                  fields: record.root)
        }
        let candidates = versions.filter { $0.keys.matches(object.keys) }
        let keyList = "{" + object.keys.sorted().joined(separator: ", ") + "}"
        switch candidates.count {
        case 1:
            return DetectedRecord(version: candidates[0].version, form: .bare, stringWrapped: record.stringWrapped,
                                  fields: record.root)
        case 0:
            let expected = versions.map { "v\($0.version) \($0.keys)" }.joined(separator: ", ")
            throw KeepsakeError(.unrecognisedRecord, """
                a \(name) record without a version has keys \(keyList), which match no version of \(name) \
                (expected one of: \(expected))
                """)
        default:
            let matching = candidates.map { "v\($0.version)" }.joined(separator: ", ")
            throw KeepsakeError(.ambiguousRecord, """
                a \(name) record without a version has keys \(keyList), which match several versions \
                (\(matching)); store it with a version to migrate it
                """)
        }
    }

    private func detectEnvelope(_ object: JSONObject, stringWrapped: Bool) throws(KeepsakeError) -> DetectedRecord {
        guard case let .string(schema)? = object["schema"], schema == name else {
            let found: String
            if case let .string(schema)? = object["schema"] { found = "'\(schema)'" } else { found = "none" }
            throw KeepsakeError(.schemaMismatch, "the envelope's schema is \(found), expected '\(name)'")
        }
        let version = try integerVersion(object["version"] ?? .null, where: "the envelope's \"version\"")
        guard version <= latestVersion else {
            return DetectedRecord(version: version, form: .envelope, stringWrapped: stringWrapped,
                                  fields: object["data"] ?? .null)
        }
        let entry = try entry(forVersion: version)
        guard case let .object(fields)? = object["data"] else {
            throw KeepsakeError(.corruptRecord, "the envelope's \"data\" is \((object["data"] ?? .null).kindName), expected an object")
        }
        try checkKeys(fields.keys, of: entry)
        if let inner = fields["version"], case let .number(text) = inner, Int(text) != version {
            throw KeepsakeError(.corruptRecord,
                                "the envelope says version \(version) but its data says version \(text)")
        }
        return DetectedRecord(version: version, form: .envelope, stringWrapped: stringWrapped, fields: .object(fields))
    }

    private func integerVersion(_ value: JSONValue, where place: String) throws(KeepsakeError) -> Int {
        guard case let .number(text) = value, let version = Int(text) else {
            throw KeepsakeError(.corruptRecord, "\(place) is \(value.kindName), expected an integer")
        }
        return version
    }

    func entry(forVersion version: Int) throws(KeepsakeError) -> VersionEntry {
        if version > latestVersion {
            throw KeepsakeError(.newerVersion, """
                the record is \(name) version \(version), newer than this release knows (latest \(latestVersion)); \
                it was left untouched — use a release that knows version \(version)
                """)
        }
        guard version >= 0 else {
            throw KeepsakeError(.unrecognisedRecord, "the record claims \(name) version \(version), which does not exist")
        }
        return versions[version]
    }

    private func checkKeys(_ keys: [String], of entry: VersionEntry) throws(KeepsakeError) {
        guard !entry.keys.matches(keys) else { return }
        let missing = entry.keys.required.subtracting(keys).sorted()
        let unknown = Set(keys).subtracting(entry.keys.required).subtracting(entry.keys.optional).sorted()
        var parts: [String] = []
        if !missing.isEmpty { parts.append("missing " + missing.joined(separator: ", ")) }
        if !unknown.isEmpty { parts.append("unknown " + unknown.joined(separator: ", ")) }
        throw KeepsakeError(.corruptRecord, """
            the record says \(name) version \(entry.version) but its fields do not match that version \
            (\(parts.joined(separator: "; ")))
            """)
    }

    /// Decodes a detected record into its stored version, then walks the steps to `Latest`.
    ///
    /// - Throws: ``KeepsakeError/Code/newerVersion`` for a version above the latest.
    func migrate(_ detected: DetectedRecord, context: MigrationContext) throws(KeepsakeError) -> Latest {
        _ = try entry(forVersion: detected.version)
        var value: any ModelVersion
        do {
            value = try versions[detected.version].decode(detected.fields)
        } catch let error as DecodingError {
            throw KeepsakeError(.corruptRecord, "the record does not decode as \(name) version \(detected.version)",
                                cause: error.keepsakeCause)
        } catch {
            throw KeepsakeError(.corruptRecord, "the record does not decode as \(name) version \(detected.version)",
                                cause: .other(String(describing: error)))
        }
        var version = detected.version
        while version < latestVersion {
            version += 1
            do {
                value = try versions[version].migrate(value, context)
            } catch {
                throw KeepsakeError(.migrationFailed, """
                    the step from \(name) version \(version - 1) to \(version) failed; the record was left as it was
                    """, cause: .other(String(describing: error)))
            }
        }
        // `versions.last` is `Latest`: the chain was built from it.
        return value as! Latest
    }

    /// The envelope bytes for `value`, checked to decode back and re-encode to the same bytes.
    func encodeVerified(_ value: Latest) throws(KeepsakeError) -> Data {
        let bytes = try encodeEnvelope(value)
        do throws(KeepsakeError) {
            let parsed = try ParsedRecord.parse(bytes)
            let detected = try detect(parsed)
            guard detected.version == latestVersion, detected.form == .envelope else {
                throw KeepsakeError(.verificationFailed, "the encoded record was not read back as the latest envelope")
            }
            let again = try encodeEnvelope(try migrate(detected, context: .verification))
            guard again == bytes else {
                throw KeepsakeError(.verificationFailed, """
                    \(name) version \(latestVersion) does not encode the same after a round trip; \
                    its Codable conformance loses or changes data
                    """)
            }
        } catch {
            if error.code == .verificationFailed { throw error }
            throw KeepsakeError(.verificationFailed,
                                "the encoded \(name) record does not read back: \(error.message)", cause: error.cause)
        }
        return bytes
    }

    private func encodeEnvelope(_ value: Latest) throws(KeepsakeError) -> Data {
        do {
            return try CanonicalJSON.encode(Envelope(schema: name, version: latestVersion, data: value))
        } catch {
            throw KeepsakeError(.encodingFailed, "\(name) version \(latestVersion) could not be encoded",
                                cause: .other(String(describing: error)))
        }
    }
}

/// What Keepsake writes: `{"data": …, "schema": …, "version": …}` (keys sorted).
struct Envelope<Model: Encodable>: Encodable {
    let schema: String
    let version: Int
    let data: Model
}

extension MigrationContext {
    /// Used only to re-decode a latest-version record, where no step runs.
    static let verification = MigrationContext(
        clock: { Date(timeIntervalSinceReferenceDate: 0) }, makeIdentifier: { "" }, deviceIdentity: "")
}

extension DecodingError {
    /// The failing coding path and reason, without any stored value.
    var keepsakeCause: KeepsakeError.Cause {
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
