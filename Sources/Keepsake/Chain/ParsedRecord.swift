import Foundation

/// A stored record parsed once, before it is matched to a chain: where the stored forms are
/// told apart.
///
/// The forms, in the order they are tried (docs/FORMAT.md):
/// 1. a JSON string holding any of the others (UserDefaults-era apps): unwrapped once by
///    ``parse(_:)``, ``stringWrapped`` set;
/// 2. an ``Envelope`` (what Keepsake writes), recognised by ``StoredEnvelope/Parts/envelopeSchema``;
/// 3. an object with a top-level `version` (the TrialInfo article's form), under the
///    envelope's name for it, ``StoredEnvelope/versionKey``;
/// 4. a bare object, its version told by its key set.
///
/// ``layout(for:)`` says which of 2–4 a record has; the chain then checks it against its
/// versions (`ModelChain.detect`).
@usableFromInline
struct ParsedRecord: Sendable {
    /// The record as parsed, after unwrapping a JSON string that held JSON: its top-level value
    /// is entry 0.
    let tape: JSONTape
    /// Whether the stored value was a JSON string holding the record (UserDefaults-era apps).
    @usableFromInline let stringWrapped: Bool
    /// The envelope's members when the record is laid out as an envelope, found once, when the
    /// record is parsed: both the ``Migrator``'s routing (``envelopeSchema``) and the chain's
    /// detection (``layout(for:)``) read them.
    let envelope: StoredEnvelope.Parts?

    init(tape: JSONTape, stringWrapped: Bool) {
        self.tape = tape
        self.stringWrapped = stringWrapped
        if tape.entries[0].kind == .object {
            let parts = StoredEnvelope.Parts(tape: tape, object: 0)
            envelope = parts.isEnvelope ? parts : nil
        } else {
            envelope = nil
        }
    }

    /// The record's top-level value.
    var root: TreeNode { .tape(tape, 0) }

    /// Parses stored bytes. A JSON string is unwrapped once and its text parsed as the record.
    ///
    /// - Throws: `.corruptRecord` when the bytes, or the text of the string they hold, are not JSON.
    @usableFromInline
    static func parse(_ bytes: Data) throws(KeepsakeError) -> ParsedRecord {
        let copied = JSONTape.copy(bytes)
        if startsWithString(copied) {
            // A record stored as a JSON string (UserDefaults-era apps): the string read once, by
            // the tree parser (a tape would validate its escapes, then decode them again), and
            // its text parsed onto the tape.
            let text: String
            do throws(JSONSyntaxError) {
                guard case let .string(value) = try JSONParser.parse(copied) else {
                    throw JSONSyntaxError(offset: 0, reason: "expected a string")  // unreachable: it starts with one
                }
                text = value
            } catch {
                throw KeepsakeError(.corruptRecord, "the stored bytes are not valid JSON", cause: error.cause)
            }
            do throws(JSONSyntaxError) {
                return ParsedRecord(tape: try JSONTape.parse(text), stringWrapped: true)
            } catch {
                throw KeepsakeError(
                    .corruptRecord, "the stored value is a JSON string that does not hold JSON",
                    cause: error.cause)
            }
        }
        do throws(JSONSyntaxError) {
            return ParsedRecord(tape: try JSONTape.parse(bytes: copied), stringWrapped: false)
        } catch {
            throw KeepsakeError(.corruptRecord, "the stored bytes are not valid JSON", cause: error.cause)
        }
    }

    /// Whether the first byte of `bytes` after any JSON whitespace is a quote: a JSON string, if
    /// anything.
    private static func startsWithString(_ bytes: [UInt8]) -> Bool {
        for byte in bytes {
            switch byte {
            case 0x20, 0x0A, 0x0D, 0x09: continue
            default: return byte == UInt8(ascii: "\"")
            }
        }
        return false
    }

    /// How a record's top level is laid out: which stored form it has.
    enum Layout {
        /// An ``Envelope``: its members, read by ``StoredEnvelope/version(of:expecting:)`` and
        /// ``StoredEnvelope/fields(of:)``.
        case envelope(StoredEnvelope.Parts)
        /// The model's fields with a top-level `version` (the entry of its value, not yet
        /// checked).
        case inlineVersion(version: Int)
        /// The model's fields alone.
        case bare
    }

    /// The stored form of the record, told by its top level alone.
    ///
    /// - Throws: `.unrecognisedRecord` when the record is not a JSON object (`name` is the
    ///   model it was read as, for the message).
    func layout(for name: String) throws(KeepsakeError) -> Layout {
        guard tape.entries[0].kind == .object else {
            throw KeepsakeError(
                .unrecognisedRecord,
                "expected a JSON object for \(withArticle(name)) record but found \(tape.kindName(at: 0))"
            )
        }
        if let envelope { return .envelope(envelope) }
        // One look-up, a scan: linear in the object's size, however many members it has.
        if let version = tape.member(StoredEnvelope.versionKey, of: 0) { return .inlineVersion(version: version) }
        return .bare
    }

    /// The top-level object's member names, in document order.
    var keys: [String] { tape.memberNames(of: 0).map(tape.string(at:)) }

    /// The number of members of the top-level object.
    var count: Int { tape.entries[0].count }

    /// The envelope's `schema`, when the record is an envelope: how the ``Migrator`` routes a
    /// record to its chain.
    var envelopeSchema: String? {
        envelope?.envelopeSchema
    }
}
