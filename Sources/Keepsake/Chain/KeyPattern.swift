/// Keys a model owns by their beginning: `tenant-*` is every key that starts with `tenant-`.
///
/// A chain declares the keys of its many records with patterns, beside the fixed keys of its
/// single ones:
///
/// ```swift
/// public enum Tenant {
///     public typealias Latest = TenantV2
///     public static let chain = ModelChain<Latest>(name: "Tenant", defaultKeys: [], keyPatterns: ["tenant-*"])
/// }
/// ```
///
/// A record stored without an envelope is matched to a model by its key: a key given to the
/// ``Migrator`` (or `migrate --model`) first, then a chain's fixed key, then the pattern with
/// the longest prefix that matches. A pattern is a prefix followed by one `*`, and nothing
/// else: `*` anywhere but at the end, or a pattern without it, is not a pattern. Keys are
/// compared by their UTF-8 bytes, as everywhere in Keepsake.
public struct KeyPattern: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// What every matching key starts with (`"tenant-"`); empty for `*`, which matches every key.
    public let prefix: String

    /// The pattern for keys that start with `prefix`.
    public init(prefix: String) {
        self.prefix = prefix
    }

    /// Reads a pattern: a prefix followed by one `*` (`tenant-*`).
    ///
    /// - Throws: ``KeepsakeError/Code/invalidArgument`` for text that is not a pattern: no `*`
    ///   at its end, a `*` elsewhere, or a NUL.
    public init(parsing text: String) throws(KeepsakeError) {
        guard let reason = Self.problem(in: text) else {
            prefix = String(text.dropLast())
            return
        }
        throw KeepsakeError(.invalidArgument, "'\(text)' is not a key pattern: \(reason)")
    }

    /// A pattern written in code (`"tenant-*"`).
    ///
    /// - Important: Text that is not a pattern stops the program with a message naming it (a
    ///   programmer error, like a chain whose versions are not contiguous). Use
    ///   ``init(parsing:)`` for text that comes from outside the program.
    public init(stringLiteral text: String) {
        if let reason = Self.problem(in: text) { preconditionFailure("'\(text)' is not a key pattern: \(reason)") }
        prefix = String(text.dropLast())
    }

    /// Why `text` is not a pattern; `nil` when it is one.
    static func problem(in text: String) -> String? {
        guard text.utf8.last == UInt8(ascii: "*") else {
            return "a pattern ends with * (tenant-* is every key that starts with tenant-)"
        }
        if text.utf8.dropLast().contains(UInt8(ascii: "*")) { return "* may only be its last character" }
        if text.utf8.contains(0) { return "a key cannot contain NUL" }
        return nil
    }

    /// Whether `text` is written as a pattern: ends with `*`.
    public static func isPattern(_ text: String) -> Bool { text.utf8.last == UInt8(ascii: "*") }

    /// Whether `key` starts with ``prefix``, compared by UTF-8 bytes.
    public func matches(_ key: String) -> Bool {
        key.utf8.starts(with: prefix.utf8)
    }

    /// Whether a key could match both this pattern and `other`: one's prefix starts with the other's.
    public func overlaps(_ other: KeyPattern) -> Bool {
        matches(other.prefix) || other.matches(prefix)
    }

    /// Two patterns are one when their prefixes' UTF-8 bytes are the same.
    public static func == (lhs: KeyPattern, rhs: KeyPattern) -> Bool { lhs.prefix.isExactly(rhs.prefix) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(prefix.utf8.count)
        for byte in prefix.utf8 { hasher.combine(byte) }
    }

    /// The pattern as written: its prefix and `*`.
    public var description: String { prefix + "*" }

    /// The least string (by UTF-8 bytes) above every key that starts with `prefix`, for a range
    /// scan `prefix <= key < upperBound`; `nil` when there is none (every key from `prefix` on
    /// matches: an empty prefix, or one of nothing but U+10FFFF).
    public var upperBound: String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            var next = last.value + 1
            if next == 0xD800 { next = 0xE000 }  // past the surrogates, which are not scalars
            if let scalar = Unicode.Scalar(next) {
                scalars.append(scalar)
                var text = ""
                text.unicodeScalars.append(contentsOf: scalars)
                return text
            }
        }
        return nil
    }
}

/// Which model a key belongs to, by exact keys and key patterns: what the ``Migrator`` and
/// ``StoreTransfer`` use for records stored without an envelope.
///
/// The order is: an exact key given by the caller, a pattern given by the caller (the longest
/// prefix), a chain's fixed key, a chain's pattern (the longest prefix).
struct KeyRouting: Sendable {
    let chains: [AnyModelChain]
    let keyModels: [String: String]
    /// Caller's patterns, longest prefix first.
    let patternModels: [(pattern: KeyPattern, model: String)]
    /// Chains' patterns, longest prefix first.
    let chainPatterns: [(pattern: KeyPattern, chain: Int)]

    init(chains: [AnyModelChain], keyModels: [String: String], patternModels: [KeyPattern: String]) {
        self.chains = chains
        self.keyModels = keyModels
        self.patternModels = patternModels.map { ($0.key, $0.value) }
            .sorted { $0.pattern.prefix.utf8.count > $1.pattern.prefix.utf8.count }
        var patterns: [(pattern: KeyPattern, chain: Int)] = []
        for (index, chain) in chains.enumerated() {
            for pattern in chain.keyPatterns { patterns.append((pattern, index)) }
        }
        chainPatterns = patterns.sorted { $0.pattern.prefix.utf8.count > $1.pattern.prefix.utf8.count }
    }

    func chain(named name: String) -> AnyModelChain? {
        chains.first { $0.name.isExactly(name) }
    }

    /// The chain `key` belongs to when its record names none, or `nil` (unmanaged).
    func chain(forKey key: String) -> AnyModelChain? {
        if let index = keyModels.index(forKey: key), keyModels[index].key.isExactly(key) {
            return chain(named: keyModels[index].value)
        }
        if let match = patternModels.first(where: { $0.pattern.matches(key) }) { return chain(named: match.model) }
        if let chain = chains.first(where: { $0.defaultKeys.contains { $0.isExactly(key) } }) { return chain }
        if let match = chainPatterns.first(where: { $0.pattern.matches(key) }) { return chains[match.chain] }
        return nil
    }
}
