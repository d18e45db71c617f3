// swift-tools-version:6.0
// Keepsake's libFuzzer targets: a package of their own, on the root package by path, so that the
// root Package.swift declares the same targets whatever the environment. Built and run by
// scripts/fuzz with the fuzzer and address sanitizers:
//   swift build --package-path Fuzz --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address \
//     --product fuzz-record
// Not for apps; nothing here is a product of Keepsake.
import PackageDescription

let package = Package(
    name: "KeepsakeFuzz",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "fuzz-record", targets: ["fuzz-record"]),
        .executable(name: "fuzz-defaults", targets: ["fuzz-defaults"]),
        .executable(name: "fuzz-sodium", targets: ["fuzz-sodium"])
    ],
    dependencies: [
        // Named, so that the products below find it whatever the checkout's directory is called.
        .package(name: "Keepsake", path: "..")
    ],
    targets: [
        // The driver hand-over, scratch directories and whole-file reads every target shares.
        .target(name: "FuzzSupport", path: "FuzzSupport"),
        // Arbitrary bytes through the record pipeline of the sample chains.
        .executableTarget(
            name: "fuzz-record",
            dependencies: [
                "FuzzSupport", .product(name: "Keepsake", package: "Keepsake"),
                .product(name: "Migrations", package: "Keepsake")
            ],
            path: "FuzzRecord"),
        // Arbitrary bytes as a defaults suite file: read, one write, re-read.
        .executableTarget(
            name: "fuzz-defaults",
            dependencies: [
                "FuzzSupport", .product(name: "Keepsake", package: "Keepsake"),
                .product(name: "KeepsakeDefaults", package: "Keepsake")
            ],
            path: "FuzzDefaults"),
        // Arbitrary bytes as an encrypted store's header, record files and record plaintexts.
        // It reaches KeepsakeSodium's internals (the header and record formats) with
        // `@testable import`, which a debug build (the only one scripts/fuzz makes) allows.
        .executableTarget(
            name: "fuzz-sodium",
            dependencies: [
                "FuzzSupport", .product(name: "Keepsake", package: "Keepsake"),
                .product(name: "KeepsakeSodium", package: "Keepsake")
            ],
            path: "FuzzSodium")
    ],
    swiftLanguageModes: [.v6]
)
