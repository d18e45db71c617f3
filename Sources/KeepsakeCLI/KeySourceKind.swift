#if CLI
import Keepsake
import KeepsakeSodium

/// A kind of master key source of the app's own, that `--master-key SCHEME:VALUE` (and
/// `--from-master-key`, `--to-master-key`, `--new-master-key`) names beside the standard
/// `file:`, `passphrase-file:`, `passphrase-env:`, `ask` and `keyring`.
///
/// The stock `migrate` registers `transit:` (an OpenBao Transit key, `OpenBaoTransitKey` in
/// KeepsakeOpenBao) this way:
///
/// ```swift
/// let transit = KeySourceKind(
///     scheme: "transit", valueName: "URI", summary: "a key wrapped by OpenBao Transit"
/// ) { value throws(KeepsakeError) in try OpenBaoTransitKey(parsing: value) }
/// MigrateCommand.main(chains: chains, keySources: [transit])
/// ```
public struct KeySourceKind: Sendable {
    /// What comes before the colon: `transit`.
    public let scheme: String
    /// What the value after the colon is, for help: `URI`, `PATH`.
    public let valueName: String
    /// What the key source is, in a few words, for messages.
    public let summary: String
    /// Makes the provider from the value after the colon; a value it cannot use is
    /// `KeepsakeError.Code.invalidArgument`.
    public let make: @Sendable (_ value: String) throws(KeepsakeError) -> any MasterKeyProvider

    /// A key source kind named `scheme`, whose value (a `valueName`) `make` turns into a
    /// provider; `summary` says what it is.
    public init(
        scheme: String, valueName: String, summary: String,
        make: @escaping @Sendable (_ value: String) throws(KeepsakeError) -> any MasterKeyProvider
    ) {
        self.scheme = scheme
        self.valueName = valueName
        self.summary = summary
        self.make = make
    }

    /// The standard sources' names, which no kind of an app's own may take.
    static let reserved: Set<String> = ["file", "passphrase-file", "passphrase-env", "ask", "keyring"]
}
#endif
