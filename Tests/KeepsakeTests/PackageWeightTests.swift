import Foundation
import KeepsakeTesting
import Testing

/// What an app that depends on Keepsake resolves (Package.swift's traits): a new package on this
/// checkout, resolved by SwiftPM, its `Package.resolved` read.
@Suite("Package weight")
struct PackageWeightTests {
    /// The packages (besides Keepsake) a new app package resolves when it depends on `products`
    /// with `traits` on.
    func resolved(products: [String], traits: String) async throws -> [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keepsake-weight-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/Sources/App", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }  // scratch files only
        let dependencies = products.map { ".product(name: \"\($0)\", package: \"keepsake\")" }.joined(separator: ", ")
        try """
        // swift-tools-version:6.2
        import PackageDescription
        let package = Package(
            name: "App",
            dependencies: [.package(name: "keepsake", path: "\(root)", traits: \(traits))],
            targets: [.executableTarget(name: "App", dependencies: [\(dependencies)])]
        )
        """.write(toFile: directory + "/Package.swift", atomically: true, encoding: .utf8)
        try "print(1)\n".write(toFile: directory + "/Sources/App/main.swift", atomically: true, encoding: .utf8)
        // Seconds of work: waited for off Swift's cooperative pool, which the other tests share.
        let resolve = try await BuiltExecutable(path: "/usr/bin/env").runOffThePool([
            "swift", "package", "resolve", "--package-path", directory
        ])
        try #require(resolve.status == 0, "\(resolve.stderr)")
        let pins = try String(contentsOfFile: directory + "/Package.resolved", encoding: .utf8)
        return pins.split(separator: "\n").compactMap { line in
            guard line.contains("\"identity\"") else { return nil }
            return line.split(separator: "\"").dropFirst(3).first.map(String.init)
        }
    }

    @Test(
        "an app on Keepsake + KeepsakeDefaults with traits off resolves 3 packages: Keepsake, swift-log, swift-metrics")
    func desktopApp() async throws {
        let packages = try await resolved(products: ["Keepsake", "KeepsakeDefaults"], traits: "[]")
        print("Keepsake + KeepsakeDefaults, traits off: keepsake, \(packages.joined(separator: ", "))")
        #expect(packages == ["swift-log", "swift-metrics"])
    }

    @Test("turning on OpenBao brings async-http-client and not postgres-nio or swift-argument-parser")
    func serverTraits() async throws {
        let openBao = try await resolved(products: ["Keepsake", "KeepsakeOpenBao"], traits: #"["OpenBao"]"#)
        #expect(openBao.contains("async-http-client"))
        #expect(!openBao.contains("postgres-nio") && !openBao.contains("swift-argument-parser"))
        print("Keepsake + KeepsakeOpenBao, OpenBao on: \(openBao.count + 1) packages")
    }
}
