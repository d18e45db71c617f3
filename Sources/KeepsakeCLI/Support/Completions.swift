#if CLI
import ArgumentParser
import Foundation
import Keepsake

/// Shell completions beyond the command and option names ArgumentParser completes itself: store
/// URIs (the schemes, then paths), `--model KEY=NAME` (the configured model names), and the
/// keys of a `defaults:` suite named by `--store` (read from the file, never from an encrypted
/// store or the keyring, which could prompt).
enum Completions {
    /// The schemes `--store` takes: those of the command's backends whose stores persist.
    static var schemes: [String] { CLI.backends.all.filter(\.persists).map { "\($0.scheme):" } }

    static var store: CompletionKind {
        .custom { _, _, prefix in storeCandidates(prefix) }
    }

    static var model: CompletionKind {
        .custom { _, _, prefix in modelCandidates(prefix) }
    }

    static var key: CompletionKind {
        .custom { words, _, prefix in keyCandidates(words: words, prefix: prefix) }
    }

    /// The schemes (`defaults:`, `file:`, `keyring:`); after the scheme of a path, the entries of the directory typed
    /// so far (directories with a trailing `/`).
    static func storeCandidates(_ prefix: String) -> [String] {
        guard let colon = prefix.firstIndex(of: ":") else {
            return schemes.filter { $0.hasPrefix(prefix) }
        }
        let scheme = String(prefix[...colon])
        guard CLI.backends.all.contains(where: { "\($0.scheme):" == scheme && $0.locationIsPath }) else { return [] }
        let typed = String(prefix[prefix.index(after: colon)...])
        var expanded = typed
        let home = ProcessInfo.processInfo.environment["HOME"] ?? ""
        if typed.hasPrefix("~/"), !home.isEmpty { expanded = home + typed.dropFirst() }
        let directory = expanded.contains("/") ? String(expanded[...expanded.lastIndex(of: "/")!]) : ""
        let shownDirectory = typed.contains("/") ? String(typed[...typed.lastIndex(of: "/")!]) : ""
        let namePrefix =
            expanded.contains("/")
            ? String(expanded[expanded.index(after: expanded.lastIndex(of: "/")!)...])
            : expanded
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)
        else { return [] }  // completion only: an unreadable directory offers nothing
        return names.filter { $0.hasPrefix(namePrefix) && ($0.hasPrefix(".") == namePrefix.hasPrefix(".")) }
            .sorted()
            .prefix(200)
            .map { name in
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: directory + name, isDirectory: &isDirectory)
                return scheme + shownDirectory + name + (isDirectory.boolValue ? "/" : "")
            }
    }

    /// `KEY=NAME` with every configured model name after the `=` typed so far; before it, the
    /// default keys of the models followed by `=`.
    static func modelCandidates(_ prefix: String) -> [String] {
        let chains = CLI.chains
        guard let equals = prefix.firstIndex(of: "=") else {
            return chains.flatMap(\.defaultKeys).map { $0 + "=" }.filter { $0.hasPrefix(prefix) }
        }
        let key = prefix[..<equals]
        return chains.map { "\(key)=\($0.name)" }.filter { $0.hasPrefix(prefix) }
    }

    /// The keys of the store that `--store` names among `words`, when its backend lists keys
    /// without options or prompts (``StoreBackend/locationIsPath`` and no accepted options: a
    /// `defaults:` suite); nothing for other stores.
    static func keyCandidates(words: [String], prefix: String) -> [String] {
        var store: String?
        for (index, word) in words.enumerated() {
            if word == "--store", index + 1 < words.count { store = words[index + 1] }
            if word.hasPrefix("--store=") { store = String(word.dropFirst("--store=".count)) }
        }
        // Completion only: a store that cannot be parsed, opened or read offers no keys.
        guard let store, let uri = try? CLI.backends.parse(store),
            let backend = CLI.backends.backend(for: uri.scheme),
            backend.locationIsPath, backend.acceptedOptions.isEmpty, backend.persists,
            let keys = try? CLI.backends.open(uri, options: StoreOpenOptions(requireExisting: true)).keys()
        else { return [] }
        return keys.filter { $0.hasPrefix(prefix) }.prefix(500).map { $0 }
    }
}
#endif
