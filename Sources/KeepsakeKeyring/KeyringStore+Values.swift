import Foundation
import Keepsake

extension KeyringStore: ValueConstrainedStore {
    /// The keyring holds text: each item's secret is UTF-8 text, which `secret-tool`, Python's
    /// `keyring` and other clients read as a string. Bytes that are not UTF-8, or that hold NUL
    /// (where C clients would cut the text short), cannot be stored here as they are.
    ///
    /// - Throws: `KeepsakeError.Code.valueRefused` naming this store and `key` when `value`
    ///   is not UTF-8 text without NUL.
    public func checkCanHold(_ value: Data, forKey key: String) throws(KeepsakeError) {
        guard String(validating: value, as: UTF8.self) != nil else {
            throw KeepsakeError(
                .valueRefused, store: uri, key: key,
                """
                the keyring holds text, and this value is not UTF-8 text, so it cannot be copied here as it \
                is; it was left where it is (keep it in a file: store, which holds any bytes)
                """)
        }
        guard !value.contains(0) else {
            throw KeepsakeError(
                .valueRefused, store: uri, key: key,
                """
                the keyring holds text, and this value contains a NUL byte, which other keyring clients \
                would cut the text at; it was left where it is (keep it in a file: store, which holds any bytes)
                """)
        }
    }
}
