#if CLI
import Foundation
import Keepsake

/// The one place `--json` output is written: every command prints exactly one JSON value on
/// standard output through here, pretty-printed with sorted keys (`"key" : value`, two-space
/// indent), empty arrays and objects as `[]` and `{}`, and every character a terminal acts on
/// written as a `\u` escape (see ``escapingTerminalControls(inJSON:)``).
enum JSONOutput {
    /// Encodes `value` and writes it, with a newline, to standard output.
    static func emit<T: Encodable>(_ value: T) {
        FileHandle.standardOutput.write(render(value) + Data("\n".utf8))
    }

    /// The text ``emit(_:)`` writes, without the final newline.
    static func render<T: Encodable>(_ value: T) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        let compact: Data
        do {
            compact = try encoder.encode(value)
        } catch {
            // Our own output types always encode; reaching this is a bug worth seeing.
            preconditionFailure("cannot encode CLI output: \(error)")
        }
        return escapingTerminalControls(inJSON: Data(pretty(Array(compact))))
    }

    /// Valid JSON text re-indented: two spaces per level, `" : "` after a member's name, one
    /// member or element per line, and `[]` / `{}` for empty containers. Linear in the input.
    static func pretty(_ json: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count * 2)
        var depth = 0
        var index = 0
        var inString = false
        func newline() {
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
        }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        while index < json.count {
            let byte = json[index]
            if inString {
                out.append(byte)
                if byte == UInt8(ascii: "\\"), index + 1 < json.count {
                    out.append(json[index + 1])
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") { inString = false }
                index += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                out.append(byte)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                var next = index + 1
                while next < json.count, isSpace(json[next]) { next += 1 }
                if next < json.count, json[next] == close {
                    out.append(byte)
                    out.append(close)
                    index = next + 1
                    continue
                }
                out.append(byte)
                depth += 1
                newline()
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                newline()
                out.append(byte)
            case UInt8(ascii: ","):
                out.append(byte)
                newline()
            case UInt8(ascii: ":"):
                out.append(contentsOf: Array(" : ".utf8))
            case _ where isSpace(byte):
                break
            default:
                out.append(byte)
            }
            index += 1
        }
        return out
    }
}

// MARK: Shapes shared by several commands

extension KeepsakeError {
    /// The error object of every `--json` failure and of a record's `error`: `code`,
    /// `exitCode`, `message`, `store`, `key`, `cause` and `hint`, each present (`null` when
    /// there is none), and `mayHaveBeenApplied`.
    var json: JSONValue {
        [
            "code": .string(code.rawValue),
            "exitCode": .int(Int(Exit.code(for: self).rawValue)),
            "message": .string(message),
            "store": JSONValue(store),
            "key": JSONValue(key),
            "cause": JSONValue(cause?.description),
            "hint": JSONValue(hint(for: self)),
            "mayHaveBeenApplied": .bool(mayHaveBeenApplied)
        ]
    }
}

extension RecordReport {
    /// One record of `status`, `plan` and `run --json`.
    var json: JSONValue {
        [
            "key": .string(key),
            "schema": JSONValue(schema),
            "storedVersion": JSONValue(storedVersion),
            "latestVersion": JSONValue(latestVersion),
            "state": .string(state.rawValue),
            "form": JSONValue(form?.rawValue),
            "stringWrapped": .bool(stringWrapped),
            "steps": .array(steps.map(JSONValue.int)),
            "error": error?.json ?? .null,
            "backup": JSONValue(backupPath),
            "note": JSONValue(note)
        ]
    }
}

/// The one object `status`, `plan` and `run` print with `--json`: the store, every record, and
/// the number of records in each state (every state present, zeros included).
func reportsJSON(store: String, _ reports: some Collection<RecordReport>, extra: [String: JSONValue] = [:]) -> JSONValue
{
    var object: [String: JSONValue] = [
        "store": .string(store),
        "records": .array(reports.map(\.json)),
        "totals": totalsJSON(reports.map(\.state)),
        "exitCode": .int(Int(Exit.code(for: reports).rawValue))
    ]
    object.merge(extra) { $1 }
    return .object(object)
}

/// The `totals` of a `--json` report on records (`status`, `plan`, `run`, `copy`): how many
/// records, and how many are in each state, every state present (zeros included).
func totalsJSON<State: CaseIterable & RawRepresentable<String> & Equatable>(_ states: [State]) -> JSONValue {
    var totals: [String: JSONValue] = ["records": .int(states.count)]
    for state in State.allCases {
        totals[state.rawValue] = .int(states.lazy.filter { $0 == state }.count)
    }
    return .object(totals)
}
#endif
