import Foundation

/// A stored record parsed once, before it is matched to a chain: where the stored forms are
/// told apart.
///
/// The forms, in the order they are tried (docs/FORMAT.md):
/// 1. a JSON string holding any of the others (UserDefaults-era apps): unwrapped once by
///    ``parse(_:)``, ``stringWrapped`` set;
/// 2. an ``Envelope`` (what Keepsake writes), recognised by ``StoredEnvelope/schema(of:)``;
/// 3. an object with a top-level `version` (the TrialInfo article's form), under the
///    envelope's name for it, ``StoredEnvelope/versionKey``;
/// 4. a bare object, its version told by its key set.
///
/// ``layout(for:)`` says which of 2–4 a record has; the chain then checks it against its
/// versions (`ModelChain.detect`).
@usableFromInline
struct ParsedRecord: Sendable {
    /// The record's top-level value, after unwrapping a JSON string that held JSON.
    let root: JSONValue
    /// Whether the stored value was a JSON string holding the record (UserDefaults-era apps).
    @usableFromInline let stringWrapped: Bool
    /// The envelope's members when the record is laid out as an envelope, found once, when the
    /// record is parsed: both the ``Migrator``'s routing (``envelopeSchema``) and the chain's
    /// detection (``layout(for:)``) read them.
    let envelope: StoredEnvelope.Parts?

    init(root: JSONValue, stringWrapped: Bool) {
        self.root = root
        self.stringWrapped = stringWrapped
        if case let .object(object) = root {
            let parts = StoredEnvelope.Parts(object)
            envelope = parts.envelopeSchema == nil ? nil : parts
        } else {
            envelope = nil
        }
    }

    /// Parses stored bytes. A JSON string is unwrapped once and its text parsed as the record.
    ///
    /// - Throws: `.corruptRecord` when the bytes, or the text of the string they hold, are not JSON.
    @usableFromInline
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
                throw KeepsakeError(
                    .corruptRecord, "the stored value is a JSON string that does not hold JSON",
                    cause: error.cause)
            }
        }
        return ParsedRecord(root: value, stringWrapped: false)
    }

    /// How a record's top level is laid out: which stored form it has.
    enum Layout {
        /// An ``Envelope``: its members, read by ``StoredEnvelope/version(of:expecting:)`` and
        /// ``StoredEnvelope/fields(of:)``.
        case envelope(StoredEnvelope.Parts)
        /// The model's fields with a top-level `version`, whose value is not yet checked.
        case inlineVersion(JSONObject, version: JSONValue)
        /// The model's fields alone.
        case bare(JSONObject)
    }

    /// The stored form of the record, told by its top level alone.
    ///
    /// - Throws: `.unrecognisedRecord` when the record is not a JSON object (`name` is the
    ///   model it was read as, for the message).
    func layout(for name: String) throws(KeepsakeError) -> Layout {
        guard case let .object(object) = root else {
            throw KeepsakeError(
                .unrecognisedRecord, "expected a JSON object for \(withArticle(name)) record but found \(root.kindName)"
            )
        }
        if let envelope { return .envelope(envelope) }
        if let version = object[StoredEnvelope.versionKey] { return .inlineVersion(object, version: version) }
        return .bare(object)
    }

    /// The envelope's `schema`, when the record is an envelope: how the ``Migrator`` routes a
    /// record to its chain.
    var envelopeSchema: String? {
        envelope?.envelopeSchema
    }
}
