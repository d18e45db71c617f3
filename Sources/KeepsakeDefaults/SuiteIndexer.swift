import Dispatch
import Foundation
import Keepsake
import Synchronization

/// Slices a suite document into its top-level members — each key and the byte range of its
/// value, in file order — validating every value as ``JSONParser`` does, on every core for a
/// large document.
///
/// Indexing is the one part of reading a suite no other work overlaps (a `migrate status` of
/// 100,000 records spent about an eighth of its time there, on one core of two). A large
/// document is cut into parts at places that look like the start of a top-level member (a
/// member name after a `,` at the start of a line, as Keepsake writes suites), and each part is
/// parsed on a thread of its own as a run of top-level members. A guess can be wrong — the
/// place may lie inside a string or a nested value — so a part's result is used only when the
/// part before it, itself used, ended on a member that starts exactly where this part began:
/// then both parsed the same bytes in the same state, and the result is what one pass from the
/// start gives, entries and first error alike. Otherwise the rest is parsed again from where the
/// last used part stopped, in one pass. The result never depends on the guesses, only the time.
enum SuiteIndexer {
    typealias Entry = (key: String, range: Range<Int>)

    /// Documents from this size are indexed in parts, one per core.
    static let parallelThreshold = 1 << 20

    /// The document's top-level members in file order.
    ///
    /// - Parameter namingDuplicates: Whether a key seen twice throws `duplicate key` at its
    ///   second occurrence (in one pass: the caller asks once it knows there is one).
    /// - Throws: ``JSONSyntaxError`` for a document that is not one JSON object, or whose values
    ///   are not JSON — the error a single pass from the start would throw.
    static func members(
        of bytes: Data, threads: Int? = nil, namingDuplicates: Bool = false
    ) throws(JSONSyntaxError) -> [Entry] {
        let threads = namingDuplicates ? 1 : threads ?? min(ProcessInfo.processInfo.activeProcessorCount, 8)
        // Data slices keep their parent's indices; ranges are kept in the slice's own.
        let base = bytes.startIndex
        let starts = threads > 1 && bytes.count >= parallelThreshold ? partStarts(of: bytes, parts: threads) : []
        guard !starts.isEmpty else {
            return try JSONParser.withParser(bytes) { parser throws(JSONSyntaxError) in
                try run(&parser, base: base, from: nil, until: .max, namingDuplicates: namingDuplicates).entries
            }
        }
        // Part 0 opens the object; part k starts at starts[k - 1]; each stops before the first
        // member that starts at or past the next part's start.
        let count = starts.count + 1
        let results = Mutex<[Result<Run, JSONSyntaxError>?]>(Array(repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { part in
            let from = part == 0 ? nil : starts[part - 1]
            let until = part < starts.count ? starts[part] : .max
            let result: Result<Run, JSONSyntaxError>
            do throws(JSONSyntaxError) {
                result = .success(
                    try JSONParser.withParser(bytes) { parser throws(JSONSyntaxError) in
                        try run(&parser, base: base, from: from, until: until)
                    })
            } catch {
                result = .failure(error)
            }
            results.withLock { $0[part] = result }
        }
        let parts = results.withLock { $0 }
        var entries: [Entry] = []
        entries.reserveCapacity(
            parts.reduce(0) { total, part in
                guard case let .success(run)? = part else { return total }
                return total + run.entries.count
            })
        for part in 0..<count {
            // Part `part` is used: every part before it was, and ended where it began.
            // (`concurrentPerform` returns once every part has run, so each has a result.)
            guard let result = parts[part] else { break }
            let run = try result.get()
            entries.append(contentsOf: run.entries)
            if run.ended { return entries }
            if part + 1 < count, run.stop == starts[part] { continue }
            // The next guess was not a member start this part reached: the rest in one pass.
            let rest = try JSONParser.withParser(bytes) { parser throws(JSONSyntaxError) in
                try Self.run(&parser, base: base, from: run.stop, until: .max)
            }
            entries.append(contentsOf: rest.entries)
            return entries
        }
        // Not reached: the last part runs until the end (`until: .max`) and ends or throws.
        return try JSONParser.withParser(bytes) { parser throws(JSONSyntaxError) in
            try run(&parser, base: base, from: nil, until: .max).entries
        }
    }

    /// What parsing a run of top-level members gave: the members, and either the end of the
    /// document (`ended`) or the offset of the first member it left for the next part (`stop`).
    struct Run {
        var entries: [Entry] = []
        var stop = 0
        var ended = false
    }

    /// Parses top-level members: from the document's start (`from` is `nil`: the opening `{`
    /// first) or from the member name at `from`; until the object ends, or until a member
    /// would start at or past `until`.
    private static func run(
        _ parser: inout JSONParser, base: Int, from: Int?, until: Int, namingDuplicates: Bool = false
    ) throws(JSONSyntaxError) -> Run {
        var run = Run()
        var seen: Set<ExactString> = []
        if let from {
            parser.seek(to: from)
        } else {
            guard try parser.peek() == UInt8(ascii: "{") else {
                throw JSONSyntaxError(offset: parser.offset, reason: "the document is not a JSON object")
            }
            try parser.expect(UInt8(ascii: "{"), "'{'")
            if try parser.peek() == UInt8(ascii: "}") {
                try parser.expect(UInt8(ascii: "}"), "'}'")
                try parser.expectEnd()
                run.ended = true
                return run
            }
        }
        while true {
            guard try parser.peek() == UInt8(ascii: "\"") else {
                throw JSONSyntaxError(offset: parser.offset, reason: "expected a member name")
            }
            if parser.offset >= until {
                run.stop = parser.offset
                return run
            }
            let keyOffset = parser.offset
            let key = try parser.parseString()
            if namingDuplicates {
                guard seen.insert(ExactString(key)).inserted else {
                    throw JSONSyntaxError(offset: keyOffset, reason: "duplicate key '\(key)'")
                }
            }
            try parser.expect(UInt8(ascii: ":"), "':'")
            let skipped = try parser.skipValue(depth: 1)
            run.entries.append((key, (base + skipped.lowerBound)..<(base + skipped.upperBound)))
            if try parser.peek() == UInt8(ascii: ",") {
                try parser.expect(UInt8(ascii: ","), "','")
                continue
            }
            try parser.expect(UInt8(ascii: "}"), "',' or '}'")
            try parser.expectEnd()
            run.ended = true
            return run
        }
    }

    /// Where parts 1… of the document begin: for each cut at an equal share of the bytes, the
    /// first `"` after it that follows `,`, a newline and spaces (`,\n  "` as Keepsake writes
    /// a suite); strictly increasing, and none for a cut that finds no such place.
    static func partStarts(of bytes: Data, parts: Int) -> [Int] {
        bytes.withUnsafeBytes { raw -> [Int] in
            var starts: [Int] = []
            let count = raw.count
            for part in 1..<parts {
                var index = max(count / parts * part, (starts.last ?? 0) + 1)
                var found: Int?
                // A member of a suite is small; a cut that finds no start within 64 KiB is dropped.
                let limit = min(count, index + (1 << 16))
                while index < limit {
                    guard raw[index] == UInt8(ascii: "\n") else {
                        index += 1
                        continue
                    }
                    var before = index - 1
                    while before >= 0, raw[before] == UInt8(ascii: " ") || raw[before] == UInt8(ascii: "\r") {
                        before -= 1
                    }
                    var after = index + 1
                    while after < count, raw[after] == UInt8(ascii: " ") || raw[after] == UInt8(ascii: "\t") {
                        after += 1
                    }
                    if before >= 0, raw[before] == UInt8(ascii: ","), after < count, raw[after] == UInt8(ascii: "\"") {
                        found = after
                        break
                    }
                    index += 1
                }
                if let found { starts.append(found) }
            }
            return starts
        }
    }
}
