import CoreMetrics

/// The `Vault`'s metrics (swift-metrics): records a load migrated, and how their write-backs
/// ended. Labelled by the store's scheme and the outcome — never a key, a value or a schema's
/// data. A no-op until the app bootstraps a metrics backend.
///
/// | metric | kind | labels |
/// |---|---|---|
/// | `keepsake_migrations_total` | counter | scheme |
/// | `keepsake_write_backs_total` | counter | scheme, outcome (`ok` or a `KeepsakeError` code) |
@usableFromInline
enum VaultMetrics {
    /// The scheme of `uri` (`postgresql`, `defaults`, …), the one store label.
    static func scheme(of uri: String) -> String {
        String(uri.prefix { $0 != ":" })
    }

    /// Whether a metrics backend is in force. Without one every counter is a no-op, and making
    /// one per call (the factory's lock, an object, the dimensions array, the scheme) was 7 % of
    /// a `Vault.load` that migrates and writes back (`perf` of `keepsake-bench`), so nothing is
    /// made then.
    private static var counting: Bool {
        // The factory's own type, compared: a dynamic cast (`is`) cost as much again as the
        // factory's lock.
        ObjectIdentifier(type(of: MetricsSystem.factory)) != ObjectIdentifier(NOOPMetricsHandler.self)
    }

    /// A load read an older version and migrated it in memory.
    @usableFromInline
    static func migrated(store uri: String) {
        guard counting else { return }
        Counter(label: "keepsake_migrations_total", dimensions: [("scheme", scheme(of: uri))]).increment()
    }

    /// A migrated record's write-back ended with `error` (`nil`: written).
    static func wroteBack(_ error: KeepsakeError?, store uri: String) {
        guard counting else { return }
        Counter(
            label: "keepsake_write_backs_total",
            dimensions: [("scheme", scheme(of: uri)), ("outcome", error?.code.rawValue ?? "ok")]
        ).increment()
    }
}
