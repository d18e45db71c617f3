/// The namespace typed record keys are declared in, so that calls can name them with a
/// leading dot.
///
/// ```swift
/// extension RecordKeys {
///     static let settings = RecordKey("settings", chain: Settings.chain, default: SettingsV2())
///     static let person = RecordKey("person", chain: Person.chain)
/// }
///
/// let settings = try vault.value(.settings)        // the default while nothing is stored
/// let person = try vault.load(.person)?.value      // nil while nothing is stored
/// ```
///
/// It holds no state (hence `@unchecked Sendable`, which a non-final class needs); each key is a
/// ``RecordKey``, a final subclass.
open class RecordKeys: @unchecked Sendable {
    init() {}
}

/// A record's storage key, its model's chain, and optionally the value to use while nothing is
/// stored — in the spirit of `Defaults.Key<Value>`.
public final class RecordKey<Latest: ModelVersion>: RecordKeys, @unchecked Sendable {
    // `@unchecked`: every stored property is an immutable `let` of a `Sendable` type.

    /// The key the record is stored under.
    public let name: String
    /// The model's chain.
    public let chain: ModelChain<Latest>
    /// What `Vault.value(_:)` returns while nothing is stored.
    public let defaultValue: Latest?

    /// - Parameters:
    ///   - name: The storage key; the chain's first default key when `nil`.
    ///   - chain: The model's chain.
    ///   - defaultValue: What `Vault.value(_:)` returns while nothing is stored. It is never
    ///     written by a read.
    /// - Important: A chain with no default key needs a `name`; without one the key is empty
    ///   and every call with it throws ``KeepsakeError/Code/invalidArgument``.
    public init(_ name: String? = nil, chain: ModelChain<Latest>, default defaultValue: Latest? = nil) {
        self.name = name ?? chain.defaultKeys.first ?? ""
        self.chain = chain
        self.defaultValue = defaultValue
    }
}
