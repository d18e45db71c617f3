import Foundation
import Keepsake
import Testing

@Suite("Version")
struct VersionTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test("the version is semantic and CHANGELOG.md's latest release heading names it")
    func changelogNamesTheVersion() throws {
        let parts = KeepsakePackage.version.split(separator: ".", omittingEmptySubsequences: false)
        #expect(
            parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && Int($0) != nil },
            "\(KeepsakePackage.version)")
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let releases = changelog.split(separator: "\n")
            .filter { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        #expect(releases.first?.hasPrefix("## [\(KeepsakePackage.version)] - ") == true, "\(releases.first ?? "none")")
    }
}
