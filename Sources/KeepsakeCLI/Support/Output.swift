#if CLI
import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `text` with every character that could steer a terminal written as a visible escape
/// (`\u{1B}`), so that text from a store or an argument — a key, a schema name, an error
/// message quoting them — cannot change colours, move the cursor, clear the screen or fake a
/// table row: C0 controls (U+0000–U+001F: ESC, newline, tab, carriage return among them), DEL
/// (U+007F), C1 controls (U+0080–U+009F) and the bidirectional overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069).
func escapedForTerminal(_ text: String) -> String {
    // Printable ASCII (the common case) needs nothing; anything else is checked scalar by scalar.
    if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var out = ""
    out.reserveCapacity(text.utf8.count + 16)
    for scalar in text.unicodeScalars {
        if needsEscape(scalar) {
            out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
    default: return false
    }
}

/// Writes one line to standard output, escaped for the terminal (see ``escapedForTerminal(_:)``).
func say(_ line: String) {
    print(escapedForTerminal(line))
}

/// Writes one line to standard error, escaped for the terminal (see ``escapedForTerminal(_:)``).
func printError(_ line: String) {
    FileHandle.standardError.write(Data((escapedForTerminal(line) + "\n").utf8))
}

/// A usage error (exit 64) whose message may quote what the user typed, escaped for the terminal.
func usageError(_ message: String) -> ValidationError {
    ValidationError(escapedForTerminal(message))
}

/// Whether standard error is a terminal (progress is shown only there).
var standardErrorIsTerminal: Bool { isatty(2) == 1 }

/// Prints rows as a left-aligned table with a header; every cell is escaped for the terminal
/// first, so a key holding a newline or an escape sequence stays in its own cell.
func printTable(_ header: [String], _ rows: [[String]]) {
    printTable(header, count: rows.count) { { $1.append(contentsOf: rows[$0]) } }
}

/// Prints a table of `count` rows. `makeRow()` gives a function that appends the cells of row `i`
/// to `cells` (empty, one array reused for every row); each thread that builds rows makes its own,
/// so one may keep caches of its own. Each row is built twice (once to measure the columns, once
/// to print), so that no table of all the rows is held: at a million records that table would
/// take more memory than the suite.
///
/// A large table is measured and built on every core: the rows are split among the threads, and
/// printed a window of rows at a time, each thread building its part of the window into a buffer
/// of its own, written in order (the table of a million records was a quarter of `migrate status`
/// on one thread).
///
/// `measure()`, when given, replaces the first build: it gives a function that widens `widths`
/// to fit row `i`'s cells (``cellWidth(_:)`` each) without building them. The last column is
/// never padded, so its width need not be measured.
func printTable(
    _ header: [String], count: Int,
    measure: (@Sendable () -> (_ index: Int, _ widths: inout [Int]) -> Void)? = nil,
    makeRow: @Sendable () -> (_ index: Int, _ cells: inout [String]) -> Void
) {
    // Threads pay off from a few thousand rows.
    let threads = count >= 8_192 ? max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8)) : 1
    // Each part of the rows measured by a thread of its own, then the widths combined.
    var widths = header.map(columns)
    var partWidths = [[Int]](repeating: widths, count: threads)
    if let measure {
        partWidths.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let parts = buffer
            DispatchQueue.concurrentPerform(iterations: threads) { part in
                let widen = measure()
                var local = parts[part]
                for index in TableRows.part(part, of: threads, in: 0..<count) { widen(index, &local) }
                parts[part] = local
            }
        }
    } else {
        buildRows(0..<count, into: &partWidths, makeRow: makeRow) { cells, local in
            for (column, cell) in cells.enumerated() where column < local.count {
                local[column] = max(local[column], cellWidth(cell))
            }
        }
    }
    for part in partWidths {
        for column in widths.indices { widths[column] = max(widths[column], part[column]) }
    }
    let fixedWidths = widths
    // Built as bytes and written to descriptor 1 in large chunks, after flushing what `print`
    // buffered (so lines keep their order): at 100k rows, a `String` and a `print` per line
    // cost a third of `migrate status`. A cell of printable ASCII (nearly every one) is checked
    // and copied in one pass over its bytes; only the others are escaped.
    fflush(nil)
    var out: [UInt8] = []
    appendTableLine(header, widths: fixedWidths, to: &out)
    writeToStandardOutput(out)
    var buffers = [[UInt8]](repeating: [], count: threads)
    var window = 0
    while window < count {
        let rows = window..<min(window + tableWindow, count)
        for part in buffers.indices { buffers[part].removeAll(keepingCapacity: true) }
        buildRows(rows, into: &buffers, makeRow: makeRow) { cells, bytes in
            appendTableLine(cells, widths: fixedWidths, to: &bytes)
        }
        for bytes in buffers { writeToStandardOutput(bytes) }
        window = rows.upperBound
    }
}

/// How many rows of a table are built before they are written.
private let tableWindow = 1 << 14

/// Builds the rows `rows` on `slots.count` threads at once: each thread takes its own contiguous
/// part of them, makes its own row function and hands `use` each row's cells with its own slot.
private func buildRows<Slot>(
    _ rows: Range<Int>, into slots: inout [Slot], makeRow: @Sendable () -> (Int, inout [String]) -> Void,
    _ use: @Sendable (_ cells: [String], _ slot: inout Slot) -> Void
) {
    let threads = slots.count
    slots.withUnsafeMutableBufferPointer { buffer in
        nonisolated(unsafe) let parts = buffer
        DispatchQueue.concurrentPerform(iterations: threads) { part in
            let row = makeRow()
            var cells: [String] = []
            var slot = parts[part]
            for index in TableRows.part(part, of: threads, in: rows) {
                cells.removeAll(keepingCapacity: true)
                row(index, &cells)
                use(cells, &slot)
            }
            parts[part] = slot
        }
    }
}

private enum TableRows {
    /// Part `part` of `threads` contiguous parts of `rows`.
    static func part(_ part: Int, of threads: Int, in rows: Range<Int>) -> Range<Int> {
        let size = (rows.count + threads - 1) / threads
        let start = min(rows.lowerBound + part * size, rows.upperBound)
        return start..<min(start + size, rows.upperBound)
    }
}

/// Appends one line of a table: `cells` escaped and padded to `widths` (the last left as it is).
private func appendTableLine(_ cells: [String], widths: [Int], to out: inout [UInt8]) {
    // Spaces appended one by one: an array literal of two (an allocation a cell) and
    // `repeatElement` (a generic sequence, appended through its witnesses) cost more than the
    // cells (callgrind, `migrate status` of 10,000 records: the table 61.1M → 55.3M instructions).
    for (index, cell) in cells.enumerated() {
        if index > 0 {
            out.append(0x20)
            out.append(0x20)
        }
        let width: Int
        if let plain = appendPlain(cell, to: &out) {
            width = plain
        } else {
            let escaped = escapedForTerminal(cell)
            out.append(contentsOf: escaped.utf8)
            width = columns(escaped)
        }
        if index < cells.count - 1, index < widths.count {
            let padding = widths[index] - width
            if padding > 0 { for _ in 0..<padding { out.append(0x20) } }
        }
    }
    out.append(0x0A)
}

/// Writes `bytes` to descriptor 1 whole; a closed standard output ends it quietly.
private func writeToStandardOutput(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { bytes in
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let count = Glibc.write(1, base + done, bytes.count - done)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }  // standard output closed: nothing more to do
            done += count
        }
    }
}

/// How many columns `cell` takes in a table, once escaped for the terminal.
func cellWidth(_ cell: String) -> Int {
    plainWidth(cell) ?? columns(escapedForTerminal(cell))
}

/// How many columns a table cell takes: its characters (its UTF-8 length when it is ASCII).
private func columns(_ cell: String) -> Int {
    cell.utf8.allSatisfy { $0 < 0x80 } ? cell.utf8.count : cell.count
}

/// The width of `cell` when it is printable ASCII only (nothing to escape, one column a byte),
/// else `nil`.
private func plainWidth(_ cell: String) -> Int? {
    let plain = cell.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
        for byte in bytes where byte < 0x20 || byte >= 0x7F { return nil }
        return bytes.count
    }
    return plain ?? (cell.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } ? cell.utf8.count : nil)
}

/// Appends `cell` to `out` and returns its width when it is printable ASCII only; else appends
/// nothing and returns `nil`.
private func appendPlain(_ cell: String, to out: inout [UInt8]) -> Int? {
    let appended = cell.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
        for byte in bytes where byte < 0x20 || byte >= 0x7F { return nil }
        out.append(contentsOf: bytes)
        return bytes.count
    }
    if let appended { return appended }
    guard let width = plainWidth(cell) else { return nil }
    out.append(contentsOf: cell.utf8)
    return width
}

/// Prints `value` as the command's one `--json` output (see ``JSONOutput``): every command
/// prints its JSON through here.
func printJSON<T: Encodable>(_ value: T) {
    JSONOutput.emit(value)
}

/// Writes JSON text and a newline to standard output, with DEL, the C1 controls and the
/// bidirectional overrides and isolates inside strings written as `\u` escapes: the same JSON
/// values, exactly (the encoders already escape U+0000–U+001F), and nothing a terminal acts on.
func writeJSON(_ json: Data) {
    FileHandle.standardOutput.write(escapingTerminalControls(inJSON: json) + Data("\n".utf8))
}

/// `json` with U+007F, U+0080–U+009F, U+202A–U+202E and U+2066–U+2069 as `\uXXXX`. Their UTF-8
/// bytes can only occur inside JSON strings, where the escape means the same character.
func escapingTerminalControls(inJSON json: Data) -> Data {
    let bytes = [UInt8](json)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count)
    func escape(_ value: Int) {
        out.append(contentsOf: Array(String(format: "\\u%04x", value).utf8))
    }
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == 0x7F {
            escape(0x7F)
            index += 1
        } else if byte == 0xC2, index + 1 < bytes.count, (0x80...0x9F).contains(bytes[index + 1]) {
            escape(Int(bytes[index + 1]))
            index += 2
        } else if byte == 0xE2, index + 2 < bytes.count,
            (bytes[index + 1] == 0x80 && (0xAA...0xAE).contains(bytes[index + 2]))
                || (bytes[index + 1] == 0x81 && (0xA6...0xA9).contains(bytes[index + 2]))
        {
            escape(0x2000 + Int(bytes[index + 1] & 0x3F) << 6 + Int(bytes[index + 2] & 0x3F))
            index += 3
        } else {
            out.append(byte)
            index += 1
        }
    }
    return Data(out)
}
#endif
