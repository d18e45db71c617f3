import Foundation

/// The `migrate` commands of README.md's "Server apps" section, each as its arguments
/// (continuation lines joined, quotes removed), so that tests run them verbatim.
public enum ReadmeCommands {
    public struct Missing: Error, CustomStringConvertible {
        public let description = "the README has no Server apps section"
    }

    /// Every `migrate` command of the section, in order.
    public static func serverApps() throws -> [[String]] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = readme.range(of: "## Server apps"),
            let end = readme.range(of: "\n## ", range: start.upperBound..<readme.endIndex)
        else { throw Missing() }
        var commands: [[String]] = []
        var pending = ""
        for line in readme[start.upperBound..<end.lowerBound].split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("migrate ") || !pending.isEmpty else { continue }
            pending += text.hasSuffix("\\") ? String(text.dropLast()) : text
            if !text.hasSuffix("\\") {
                commands.append(words(pending))
                pending = ""
            }
        }
        return commands
    }

    /// `line` split at spaces outside quotes (double or single, as a shell reads them), the
    /// quotes removed.
    public static func words(_ line: String) -> [String] {
        var words: [String] = []
        var word = ""
        var quote: Character?
        for character in line {
            if character == quote {
                quote = nil
            } else if quote == nil, character == "\"" || character == "'" {
                quote = character
            } else if character == " ", quote == nil {
                if !word.isEmpty { words.append(word) }
                word = ""
            } else {
                word.append(character)
            }
        }
        if !word.isEmpty { words.append(word) }
        return words
    }
}
