#if Configuration
import Configuration
import Foundation
import Keepsake

extension KeepsakeProvider {
    /// One record a ``KeepsakeProvider`` serves: its chain, the storage key it is read from, the
    /// configuration key its fields appear under, and which of its fields are secret.
    ///
    /// ```swift
    /// let provider = KeepsakeProvider(
    ///     vault: vault,
    ///     records: [
    ///         .init(.settings),                                  // settings.window.width, …
    ///         .init(.apiClient, at: "api", secretFields: ["token"])  // api.token is secret
    ///     ])
    /// ```
    public struct Record: Sendable {
        /// The storage key the record is read from.
        public let storageKey: String
        /// The configuration key the record's fields appear under (its components); empty when
        /// the record's fields are top-level configuration keys.
        public let prefix: [String]
        /// Field paths (`"credentials.token"`) whose values, and everything under them, are secret.
        public let secretFields: Set<String>
        /// Whether every value of the record is secret.
        public let isSecret: Bool

        /// The chain's name, for errors and the provider's description.
        let chainName: String
        /// Reads the stored bytes into what the provider serves; nothing is written.
        let decode: @Sendable (_ bytes: Data?, _ vault: Vault) -> RecordState
        /// Reads through `Vault.load`, which writes a migrated record back when the vault's
        /// options allow it.
        let loadWritingBack: @Sendable (_ vault: Vault) -> RecordState
        /// The record now, then each change (`Vault.updates(of:forKey:)`).
        let updates: @Sendable (_ vault: Vault) -> AsyncStream<RecordState>

        /// The record under `key`, its fields under the configuration key `prefix`.
        ///
        /// While nothing is stored, the key's default value (if it has one) is served, as
        /// `Vault.value(_:)` returns it.
        ///
        /// - Parameters:
        ///   - key: The typed record key.
        ///   - prefix: Where the fields appear: `"settings"` makes field `window.width` the
        ///     configuration key `settings.window.width`. Default: the storage key, split at its
        ///     dots. An empty key (`ConfigKey([])`) makes the fields top-level keys.
        ///   - secretFields: Field paths, dot-separated, whose values are secret.
        ///   - isSecret: Whether every value of the record is secret (it is anyway when the
        ///     store is encrypted at rest).
        public init<Latest>(
            _ key: RecordKey<Latest>, at prefix: ConfigKey? = nil, secretFields: Set<String> = [],
            isSecret: Bool = false
        ) {
            self.init(
                chain: key.chain, storageKey: key.name, defaultValue: key.defaultValue, prefix: prefix,
                secretFields: secretFields, isSecret: isSecret)
        }

        /// The record of `chain` under `key` (the chain's first default key when `nil`), its
        /// fields under the configuration key `prefix`. See `init(_:at:secretFields:isSecret:)`.
        ///
        /// - Important: A chain with no default key needs a `key`; without one every lookup of
        ///   the record throws `KeepsakeError.Code.invalidArgument`.
        public init<Latest>(
            _ chain: ModelChain<Latest>, forKey key: String? = nil, at prefix: ConfigKey? = nil,
            secretFields: Set<String> = [], isSecret: Bool = false
        ) {
            self.init(
                chain: chain, storageKey: key ?? chain.defaultKeys.first ?? "", defaultValue: nil, prefix: prefix,
                secretFields: secretFields, isSecret: isSecret)
        }

        private init<Latest>(
            chain: ModelChain<Latest>, storageKey: String, defaultValue: Latest?, prefix: ConfigKey?,
            secretFields: Set<String>, isSecret: Bool
        ) {
            self.storageKey = storageKey
            self.prefix = prefix?.components ?? ConfigKey(storageKey).components
            self.secretFields = secretFields
            self.isSecret = isSecret
            self.chainName = chain.name
            let fallback: @Sendable (Vault) -> RecordState = { vault in
                guard let defaultValue else { return .absent }
                return RecordState(value: defaultValue, store: vault.store.uri, key: storageKey)
            }
            decode = { bytes, vault in
                let store = vault.store.uri
                do throws(KeepsakeError) {
                    guard let record = try chain.outcome(of: bytes, context: vault.context).get() else {
                        return fallback(vault)
                    }
                    return RecordState(value: record.value, store: store, key: storageKey)
                } catch {
                    return .failed(error.naming(store: store, key: storageKey))
                }
            }
            loadWritingBack = { vault in
                do throws(KeepsakeError) {
                    guard let loaded = try vault.load(chain, forKey: storageKey) else { return fallback(vault) }
                    return RecordState(value: loaded.value, store: vault.store.uri, key: storageKey)
                } catch {
                    return .failed(error.naming(store: vault.store.uri, key: storageKey))
                }
            }
            updates = { vault in
                let source = vault.updates(of: chain, forKey: storageKey)
                let (stream, continuation) = AsyncStream.makeStream(
                    of: RecordState.self, bufferingPolicy: .bufferingNewest(1))
                let task = Task {
                    for await update in source {
                        let store = vault.store.uri
                        switch update {
                        case let .record(record):
                            continuation.yield(RecordState(value: record.value, store: store, key: storageKey))
                        case .absent:
                            continuation.yield(fallback(vault))
                        case let .unreadable(error), let .locked(error), let .failed(error):
                            continuation.yield(.failed(error.naming(store: store, key: storageKey)))
                        }
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
                return stream
            }
        }

        /// Whether the field at `path` (below the record's prefix) is secret by the app's naming.
        func namesSecret(_ path: ArraySlice<String>) -> Bool {
            if isSecret { return true }
            guard !secretFields.isEmpty else { return false }
            var joined = ""
            for component in path {
                joined += joined.isEmpty ? component : "." + component
                if secretFields.contains(joined) { return true }
            }
            return false
        }
    }
}

/// What a record is when the provider reads it: absent, its fields, or why it cannot be read.
enum RecordState: Sendable, Equatable {
    case absent
    case fields(JSONValue)
    case failed(KeepsakeError)

    /// The fields of `value`, or the error encoding it threw.
    init(value: some ModelVersion, store: String, key: String) {
        do throws(KeepsakeError) {
            self = .fields(try JSONValue.fields(of: value, store: store, key: key))
        } catch {
            self = .failed(error)
        }
    }
}

extension KeepsakeError {
    /// A copy naming `store` and `key` where it did not yet.
    func naming(store: String, key: String) -> KeepsakeError {
        var copy = self
        if copy.store == nil { copy.store = store }
        if copy.key == nil { copy.key = key }
        return copy
    }
}
#endif
