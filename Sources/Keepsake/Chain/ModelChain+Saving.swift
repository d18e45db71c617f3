import Foundation

// What a save writes over what is stored: the latest envelope; over a newer record that
// declared this release's readers compatible, that record with this release's values merged in
// at every depth; nothing at all over a newer record that did not, over one that claims a newer
// version without parsing, or over one that does not parse and whose version cannot be known.

extension ModelChain {
    /// The bytes a save of `value` writes over `existing`: the latest envelope; over a newer
    /// record declared readable by this release, that record with this release's values merged
    /// in; refused over a newer record that was not, over a record that claims a newer version
    /// but does not parse, and over another model's envelope.
    ///
    /// `plain` caches the latest envelope of `value` across the attempts of one save.
    func encodeForSave(_ value: Latest, over existing: Data?, plain: inout Data?) throws(KeepsakeError) -> Data {
        func encoded() throws(KeepsakeError) -> Data {
            if let plain { return plain }
            let bytes = try encode(value)
            plain = bytes
            return bytes
        }
        guard let existing else { return try encoded() }
        let parsed: ParsedRecord
        let detected: DetectedRecord
        do throws(KeepsakeError) {
            parsed = try ParsedRecord.parse(existing)
            detected = try detect(parsed)
        } catch  where error.code == .schemaMismatch {
            throw error
        } catch {
            // An unreadable record that claims a version this release knows may be replaced —
            // that is what a save means. One that claims a newer version is a newer release's
            // record this release cannot read; one whose version cannot be established (damaged
            // before its `version`, which Keepsake's envelopes write last) may be one too: both
            // are kept.
            guard let claimed = VersionClaim.highest(in: existing) else {
                throw KeepsakeError(
                    .corruptRecord,
                    """
                    the stored record does not read (\(error.message)) and its version cannot be established, so it \
                    may be a newer release's record: it was left untouched; to replace it, remove it first \
                    (Vault.remove(forKey:), or `migrate delete`)
                    """, cause: error.cause)
            }
            if claimed > Double(latestVersion) {
                throw KeepsakeError(
                    .newerVersion,
                    """
                    the stored record claims \(name) version \(VersionClaim.describe(claimed)), newer than this \
                    release knows (latest \(latestVersion)), and does not read (\(error.message)); it was left \
                    untouched — use a release that knows that version
                    """, cause: error.cause)
            }
            return try encoded()
        }
        return try encodeForSave(value, over: detected, stored: existing, plain: &plain)
    }

    /// The bytes a save of `value` writes over a stored record already read and detected (by
    /// an update, which read it through the pipeline first): the latest envelope over a
    /// version this release knows; merged into a newer record declared readable by this
    /// release; refused over any other newer record. The stored bytes are not parsed again
    /// unless they are merged into.
    func encodeForSave(
        _ value: Latest, over detected: DetectedRecord, stored: Data, plain: inout Data?
    ) throws(KeepsakeError) -> Data {
        guard detected.version > latestVersion else {
            if let plain { return plain }
            let bytes = try encode(value)
            plain = bytes
            return bytes
        }
        guard let reader = detected.oldestReader, reader <= latestVersion,
            case let .object(newerFields) = detected.fields.value
        else { throw newerError(detected.version) }
        return try merge(
            value, into: newerFields, version: detected.version, oldestReader: reader, stored: stored,
            stringWrapped: detected.stringWrapped)
    }

    /// The write a save of `value` over `existing` makes: ``encodeForSave(_:over:plain:)``'s
    /// bytes, applied only if the key still holds `existing`, and marked verified when they are
    /// the latest envelope (proven to read back), not a merge into a newer record.
    func saveWrite(
        of value: Latest, key: String, over existing: Data?, plain: inout Data?
    ) throws(KeepsakeError) -> StoreWrite {
        let bytes = try encodeForSave(value, over: existing, plain: &plain)
        let write = StoreWrite(key: key, value: bytes, expectation: .unchanged(existing))
        return bytes == plain ? write.verified : write
    }

    /// The bytes a save of `value` writes over `existing` (see the `plain:` form).
    func encodeForSave(_ value: Latest, over existing: Data?) throws(KeepsakeError) -> Data {
        var plain: Data?
        return try encodeForSave(value, over: existing, plain: &plain)
    }

    /// `value`'s fields merged into a newer record's: every value this release knows comes from
    /// `value`, every key it does not know stays as the newer release wrote it — byte for byte,
    /// from `stored` — at every depth (``RecordMerge``), and the record keeps its stored form (a
    /// JSON string holding it, when it was one).
    private func merge(
        _ value: Latest, into newer: JSONObject, version: Int, oldestReader: Int, stored: Data, stringWrapped: Bool
    ) throws(KeepsakeError) -> Data {
        // Where the newer record's values lie in its text (the string's, when string-wrapped).
        let source: Data
        let spans: JSONSpans
        do throws(JSONSyntaxError) {
            if stringWrapped, case let .string(text) = try JSONParser.parse(stored) {
                source = Data(text.utf8)
            } else {
                source = stored
            }
            spans = try JSONSpans.of(source)
        } catch {
            // Unreachable: the same bytes parsed a moment ago.
            throw KeepsakeError(.corruptRecord, "the stored record does not parse again", cause: error.cause)
        }
        let own: JSONObject
        do {
            guard
                case let .object(object) = try JSONParser.parse(CanonicalJSON.encode(value, dates: Latest.dateEncoding))
            else {
                throw KeepsakeError(.encodingFailed, "\(name) version \(latestVersion) does not encode as an object")
            }
            own = object
        } catch let error as KeepsakeError {
            throw error
        } catch {
            throw KeepsakeError(
                .encodingFailed, "\(name) version \(latestVersion) could not be encoded",
                cause: .other(String(describing: error)), underlying: error)
        }
        let shape = versions.last?.shape
        let topKnown = Set(
            (shape.map { Array($0.fields.keys) } ?? Array(versions.last?.keys?.all ?? [])).map(ExactString.init))
        let merged: MergedJSON
        do throws(RecordMerge.Refusal) {
            merged = try RecordMerge.object(
                own: own, newer: newer, newerSpans: spans[member: EnvelopeMember.data.rawValue]?.value, known: topKnown,
                fields: shape?.fields, path: EnvelopeMember.data.rawValue)
        } catch {
            throw KeepsakeError(
                .mergeRefused,
                """
                the stored record is \(name) version \(version), which this release may update, but at \(error.path) \
                \(error.reason), so the newer release's data there would be lost; nothing was written — save it \
                with a release that knows version \(version)
                """)
        }
        // The envelope's members in the order Keepsake writes them, the data as merged.
        var members: [Data] = []
        func member(_ name: EnvelopeMember, _ write: (inout Data) -> Void) {
            var out = Data()
            CanonicalJSON.appendString(name.rawValue, to: &out)
            out.append(UInt8(ascii: ":"))
            write(&out)
            members.append(out)
        }
        Envelope(schema: name, version: version, oldestReader: oldestReader, data: merged).writeMembers(
            data: { name, data in member(name) { data.write(to: &$0, source: source) } },
            integer: { name, number in member(name) { $0.append(contentsOf: Array(String(number).utf8)) } },
            string: { name, text in member(name) { CanonicalJSON.appendString(text, to: &$0) } })
        var bytes = Data("{".utf8)
        bytes.append(contentsOf: members.joined(separator: Data(",".utf8)))
        bytes.append(UInt8(ascii: "}"))
        if stringWrapped {
            var wrapped = Data()
            CanonicalJSON.appendString(String(decoding: bytes, as: UTF8.self), to: &wrapped)
            bytes = wrapped
        }
        // Verify: the merged record reads back, compatibly, as exactly `value`.
        let readBack: Data?
        let expected: Data?
        if case let .newerReadable(record) = outcome(of: bytes, context: .verification) {
            readBack = try? CanonicalJSON.encode(record.value, dates: Latest.dateEncoding)
            expected = try? CanonicalJSON.encode(value, dates: Latest.dateEncoding)
        } else {
            readBack = nil
            expected = nil
        }
        guard let readBack, readBack == expected else {
            throw KeepsakeError(
                .verificationFailed,
                """
                the \(name) record merged into version \(version) does not read back as the value saved; nothing \
                was written
                """)
        }
        return bytes
    }
}

/// Merges an older release's encoded value into a newer release's stored data, guided by the
/// older release's ``RecordShape``:
/// - objects of a known shape: keys the older release knows come from its value (a known key it
///   left out was set to `nil`), the others stay as the newer release wrote them, and values
///   present in both are merged in turn;
/// - dictionaries: the older release's entries, each merged with the newer entry of that key;
/// - arrays: element by element, by position, when both have the same length; when the older
///   release changed the length, its array is kept only if no newer element holds a key it
///   does not know — otherwise the merge is refused;
/// - anything else (numbers, strings, a value of a type the probe could not read): the older
///   release's value, refused only when it replaces a structure holding keys it does not know.
///
/// The merge recurses only where both values hold a container at the same path, so no deeper
/// than the older release's own encoded value, which its own types bound: a deeply nested
/// stored record cannot make it recurse deeper.
///
/// What the newer release wrote and this release keeps is written back as it was stored, byte
/// for byte (``MergedJSON/stored(_:)``): from ``JSONSpans`` of the stored text.
enum RecordMerge {
    /// Why a merge would lose the newer release's data, and where.
    struct Refusal: Error {
        let path: String
        let reason: String
    }

    static func object(
        own: JSONObject, newer: JSONObject, newerSpans: JSONSpans?, known: Set<ExactString>,
        fields: [String: RecordShape.Field]?, path: String
    ) throws(Refusal) -> MergedJSON {
        var newerByKey: [ExactString: JSONValue] = [:]
        for member in newer.members { newerByKey[ExactString(member.key)] = member.value }
        let fieldsByKey = fields.map { fields in
            Dictionary(fields.map { (ExactString($0.key), $0.value.type) }, uniquingKeysWith: { first, _ in first })
        }
        var members: [MergedJSON.Member] = []
        var ownKeys = Set<ExactString>()
        for member in own.members {
            let key = ExactString(member.key)
            ownKeys.insert(key)
            guard let theirs = newerByKey[key] else {
                members.append(MergedJSON.Member(key: member.key, value: .value(member.value)))
                continue
            }
            let type = fieldsByKey?[key]
            let merged = try value(
                own: member.value, newer: theirs, newerSpans: newerSpans?[member: member.key]?.value, type: type,
                path: "\(path).\(member.key)")
            members.append(MergedJSON.Member(key: member.key, value: merged))
        }
        for member in newer.members {
            let key = ExactString(member.key)
            // A key the older release knows and left out was cleared by it; any other key is
            // the newer release's own, kept as it was stored.
            guard !ownKeys.contains(key), !known.contains(key) else { continue }
            if let stored = newerSpans?[member: member.key] {
                members.append(
                    MergedJSON.Member(key: member.key, storedName: stored.name, value: .stored(stored.value.range)))
            } else {
                members.append(MergedJSON.Member(key: member.key, value: .value(member.value)))
            }
        }
        return .object(members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
    }

    static func value(
        own: JSONValue, newer: JSONValue, newerSpans: JSONSpans?, type: RecordShape.Value?, path: String
    ) throws(Refusal) -> MergedJSON {
        var type = type
        if case let .nullable(inner)? = type { type = inner }
        switch (own, newer, type) {
        case let (.object(mine), .object(theirs), .object(shape)?):
            let known = Set(shape.fields.keys.map(ExactString.init))
            return try object(
                own: mine, newer: theirs, newerSpans: newerSpans, known: known, fields: shape.fields, path: path)
        case let (.object(mine), .object(theirs), .map(valueType)?):
            // A dictionary: every key is the older release's to keep or drop.
            return try mapObject(own: mine, newer: theirs, newerSpans: newerSpans, valueType: valueType, path: path)
        case let (.object(mine), .object(theirs), nil):
            // No shape (the probe could not read this release's type): the keys this release
            // wrote are the ones it knows.
            let known = Set(mine.members.map { ExactString($0.key) })
            return try object(own: mine, newer: theirs, newerSpans: newerSpans, known: known, fields: nil, path: path)
        case let (.array(mine), .array(theirs), _):
            var element: RecordShape.Value?
            if case let .array(inner)? = type { element = inner }
            if mine.count == theirs.count {
                var merged: [MergedJSON] = []
                merged.reserveCapacity(mine.count)
                for index in mine.indices {
                    merged.append(
                        try value(
                            own: mine[index], newer: theirs[index], newerSpans: newerSpans?[element: index],
                            type: element, path: "\(path)[\(index)]"))
                }
                return .array(merged)
            }
            for index in theirs.indices where holdsUnknown(theirs[index], type: element) {
                throw Refusal(
                    path: "\(path)[\(index)]",
                    reason: """
                        this release changed the array's length (\(theirs.count) → \(mine.count)) and its elements \
                        hold keys it does not know, which cannot be matched to the new elements
                        """)
            }
            return .value(own)
        case (.null, _, _):
            // The older release cleared an optional value: the value and whatever it held go.
            return .value(own)
        default:
            if holdsUnknown(newer, type: type) {
                throw Refusal(
                    path: path,
                    reason:
                        "this release writes \(own.kindName) where the newer record holds \(newer.kindName) with keys it does not know"
                )
            }
            return .value(own)
        }
    }

    /// A dictionary: every key is the older release's to keep or drop; an entry in both is
    /// merged with the newer one.
    private static func mapObject(
        own: JSONObject, newer: JSONObject, newerSpans: JSONSpans?, valueType: RecordShape.Value, path: String
    ) throws(Refusal) -> MergedJSON {
        var newerByKey: [ExactString: JSONValue] = [:]
        for member in newer.members { newerByKey[ExactString(member.key)] = member.value }
        var members: [MergedJSON.Member] = []
        for member in own.members {
            guard let theirs = newerByKey[ExactString(member.key)] else {
                members.append(MergedJSON.Member(key: member.key, value: .value(member.value)))
                continue
            }
            let merged = try value(
                own: member.value, newer: theirs, newerSpans: newerSpans?[member: member.key]?.value, type: valueType,
                path: "\(path).\(member.key)")
            members.append(MergedJSON.Member(key: member.key, value: merged))
        }
        return .object(members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
    }

    /// Whether `value` holds an object key that `type` does not know, at any depth. Iterative:
    /// a stored value can be as deep as its bytes allow.
    static func holdsUnknown(_ value: JSONValue, type: RecordShape.Value?) -> Bool {
        var pending: [(JSONValue, RecordShape.Value?)] = [(value, type)]
        while let (value, type) = pending.popLast() {
            var type = type
            if case let .nullable(inner)? = type { type = inner }
            switch (value, type) {
            case let (.object(object), .object(shape)?):
                for member in object.members {
                    guard let field = shape.fields[member.key] else { return true }
                    pending.append((member.value, field.type))
                }
            case let (.object(object), .map(valueType)?):
                for member in object.members { pending.append((member.value, valueType)) }
            case let (.array(elements), .array(element)?):
                for element2 in elements { pending.append((element2, element)) }
            case (.object, .unknown?), (.object, .taggedEnum?):
                // A value of a type the probe could not read: nothing can be said about its keys.
                // An enum with associated values is replaced whole by the older release's case.
                continue
            case let (.object(object), _):
                // An object where this release expects something else (or knows no shape).
                if type != nil { return !object.members.isEmpty }
                continue
            case let (.array(elements), _):
                for element in elements { pending.append((element, nil)) }
            default:
                continue
            }
        }
        return false
    }
}

/// A merged record's data: this release's values (written as Keepsake writes them) and the
/// newer release's, kept as stored (their bytes in the stored text).
indirect enum MergedJSON {
    /// A member of a merged object: its name, and the bytes the newer release stored it under
    /// when it is the newer release's own.
    struct Member {
        let key: String
        var storedName: Range<Int>?
        let value: MergedJSON

        init(key: String, storedName: Range<Int>? = nil, value: MergedJSON) {
            self.key = key
            self.storedName = storedName
            self.value = value
        }
    }

    /// A value as this release has it.
    case value(JSONValue)
    /// A value as the newer release stored it: these bytes of the stored text.
    case stored(Range<Int>)
    case object([Member])
    case array([MergedJSON])

    /// Writes the value: parsed values as ``JSONValue/write(to:)`` does, stored ones as their
    /// bytes in `source`.
    func write(to out: inout Data, source: Data) {
        switch self {
        case let .value(value): value.write(to: &out)
        case let .stored(range):
            out.append(source[(source.startIndex + range.lowerBound)..<(source.startIndex + range.upperBound)])
        case let .object(members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                if let name = member.storedName {
                    out.append(source[(source.startIndex + name.lowerBound)..<(source.startIndex + name.upperBound)])
                } else {
                    CanonicalJSON.appendString(member.key, to: &out)
                }
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out, source: source)
            }
            out.append(UInt8(ascii: "}"))
        case let .array(elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out, source: source)
            }
            out.append(UInt8(ascii: "]"))
        }
    }
}
