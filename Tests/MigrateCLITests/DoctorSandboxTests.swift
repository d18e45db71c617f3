import Foundation
import Testing

/// `migrate doctor`'s sandbox line, with the sandbox given through the child's environment.
@Suite("doctor in Flatpak and Snap")
struct DoctorSandboxTests {
    func sandboxLine(_ environment: [String: String]) throws -> [String: Any] {
        let result = try runBinary(migrateBinary, ["doctor", "--json", "--timeout", "2"], environment: environment)
        let checks = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]],
            "\(result.stdout)\n\(result.stderr)")
        #expect(checks.map { $0["store"] as? String } == ["defaults", "file", "keyring", "sandbox"])
        return try #require(checks.last)
    }

    @Test("not sandboxed: none")
    func none() throws {
        let line = try sandboxLine(["FLATPAK_ID": "", "SNAP": ""])
        #expect(line["status"] as? String == "none")
        #expect(line["usable"] as? Bool == true)
        #expect(line["detail"] as? String == "not sandboxed (no FLATPAK_ID, /.flatpak-info or SNAP)")
    }

    @Test("FLATPAK_ID: flatpak, what to request and what --delete-data deletes")
    func flatpak() throws {
        let line = try sandboxLine(["FLATPAK_ID": "org.example.Notes"])
        #expect(line["status"] as? String == "flatpak")
        let detail = try #require(line["detail"] as? String)
        #expect(detail.contains("Flatpak app org.example.Notes"))
        #expect(detail.contains("--talk-name=org.freedesktop.secrets"))
        #expect(detail.contains("`flatpak uninstall --delete-data`"))
    }

    @Test("SNAP: snap, the interface to connect and what snap remove deletes")
    func snap() throws {
        let line = try sandboxLine(["SNAP": "/snap/notes/3", "SNAP_NAME": "notes"])
        #expect(line["status"] as? String == "snap")
        let detail = try #require(line["detail"] as? String)
        #expect(detail.contains("snap connect notes:password-manager-service"))
        #expect(detail.contains("~/snap/notes"))
    }
}
