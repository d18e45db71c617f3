// swift-tools-version:6.0
import PackageDescription

// An app adopting Keepsake, as its developer would write it: its own model chain, an app that
// loads and saves it through a Vault, its own `settings-migrate` tool, and tests that pin it.
let package = Package(
    name: "SettingsApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        // In a real app: .package(url: "<Keepsake's repository>", from: "…").
        .package(name: "Keepsake", path: "../.."),
        // Configuration: environment variables layered over the settings record (SettingsConfiguration).
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0")
    ],
    targets: [
        // The Settings chain: one frozen file per version, the chain and the typed key.
        .target(
            name: "SettingsModels",
            dependencies: [.product(name: "Keepsake", package: "Keepsake")]
        ),
        // The app's 14-day trial, kept in the keyring so that a reinstall does not restart it.
        .target(
            name: "SettingsTrial",
            dependencies: [
                "SettingsModels",
                .product(name: "Keepsake", package: "Keepsake"),
                .product(name: "KeepsakeKeyring", package: "Keepsake"),
                .product(name: "KeepsakeTrial", package: "Keepsake")
            ]
        ),
        // The app: prints its settings and changes the theme.
        .executableTarget(
            name: "settings-app",
            dependencies: [
                "SettingsModels", "SettingsTrial",
                .product(name: "Keepsake", package: "Keepsake"),
                .product(name: "KeepsakeDefaults", package: "Keepsake"),
                .product(name: "KeepsakeStores", package: "Keepsake"),
                .product(name: "KeepsakeSodium", package: "Keepsake")
            ]
        ),
        // A store of the app's own, in one file: `folder:DIR`, one plain file per record.
        .target(
            name: "SettingsFolderStore",
            dependencies: [.product(name: "Keepsake", package: "Keepsake")]
        ),
        // The app's own `migrate`: Keepsake's CLI on the Settings chain, with the folder store.
        .executableTarget(
            name: "settings-migrate",
            dependencies: [
                "SettingsModels", "SettingsFolderStore", .product(name: "KeepsakeCLI", package: "Keepsake")
            ]
        ),
        // The app's configuration: environment variables over the settings record, through
        // swift-configuration's ConfigReader and Keepsake's provider.
        .target(
            name: "SettingsConfiguration",
            dependencies: [
                "SettingsModels",
                .product(name: "Keepsake", package: "Keepsake"),
                .product(name: "KeepsakeConfiguration", package: "Keepsake"),
                .product(name: "Configuration", package: "swift-configuration")
            ]
        ),
        .testTarget(
            name: "SettingsModelsTests",
            // The executables are dependencies so that they are built beside the test bundle,
            // where the end-to-end tests run them.
            dependencies: [
                "SettingsModels", "SettingsTrial", "SettingsFolderStore", "settings-app", "settings-migrate",
                .product(name: "Keepsake", package: "Keepsake"),
                // The private keyring and the reinstall simulator, for the trial tests.
                .product(name: "KeepsakeTestKeyring", package: "Keepsake"),
                .product(name: "KeepsakeTrial", package: "Keepsake"),
                .product(name: "KeepsakeTesting", package: "Keepsake"),
                .product(name: "KeepsakeSodium", package: "Keepsake"),
                .product(name: "KeepsakeKeyring", package: "Keepsake"),
                .product(name: "KeepsakeStores", package: "Keepsake"),
                .product(name: "KeepsakeDefaults", package: "Keepsake"),
                // The configuration tests.
                "SettingsConfiguration",
                .product(name: "Configuration", package: "swift-configuration")
            ],
            exclude: ["Fixtures"]
        )
    ],
    swiftLanguageModes: [.v6]
)
