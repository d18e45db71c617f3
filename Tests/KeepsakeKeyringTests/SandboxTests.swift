import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeTrial
import Testing

/// Flatpak and Snap detection, from an injected environment and file root: runs everywhere.
@Suite("Sandbox detection")
struct SandboxTests {
    /// What `Sandbox.detect` finds with `environment` and a directory standing for `/` that holds
    /// `.flatpak-info` with `text` (none when `nil`); the directory is removed afterwards.
    func detect(environment: [String: String], flatpakInfo text: String?) throws -> Sandbox {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sandbox-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }  // scratch files only
        if let text { try Data(text.utf8).write(to: directory.appendingPathComponent(".flatpak-info")) }
        return Sandbox.detect(environment: environment, root: directory.path)
    }

    static let grantedInfo = """
        [Application]
        name=org.example.Notes
        runtime=runtime/org.gnome.Platform/x86_64/46

        [Context]
        shared=network;ipc;
        sockets=x11;wayland;

        [Session Bus Policy]
        org.freedesktop.secrets=talk
        """

    @Test("no FLATPAK_ID, /.flatpak-info or SNAP: unconfined, and the keyring promises what it always did")
    func unconfined() throws {
        let sandbox = try detect(environment: ["PATH": "/usr/bin"], flatpakInfo: nil)
        #expect(sandbox == .unconfined)
        #expect(sandbox.description == "none")
        let store = try KeyringStore(service: "com.example.app", sandbox: sandbox)
        #expect(store.capabilities == [.survivesReinstall, .encryptedAtRest])
    }

    @Test("a Flatpak whose /.flatpak-info grants org.freedesktop.secrets: granted, with the app's name")
    func flatpakGranted() throws {
        let sandbox = try detect(environment: [:], flatpakInfo: Self.grantedInfo)
        #expect(sandbox == Sandbox(kind: .flatpak, appID: "org.example.Notes", secretServiceAccess: .granted))
        #expect(
            sandbox.secretServiceNote
                == "Flatpak app org.example.Notes: the Secret Service is reachable (org.freedesktop.secrets is granted)"
        )
        #expect(sandbox.reinstallNote.contains("deleted by `flatpak uninstall --delete-data`"))
        #expect(sandbox.reinstallNote.contains("~/.var/app/org.example.Notes"))
        #expect(try KeyringStore(service: "s", sandbox: sandbox).capabilities == [.survivesReinstall, .encryptedAtRest])
    }

    @Test(
        "a Flatpak granted by a wildcard talk-name, or the whole session bus, is granted",
        arguments: [
            "[Session Bus Policy]\norg.freedesktop.*=talk\n",
            "[Context]\nsockets=wayland;session-bus;\n",
            "[Session Bus Policy]\r\norg.freedesktop.secrets = own\r\n"
        ])
    func flatpakGrantedOtherwise(_ info: String) throws {
        #expect(
            try detect(environment: ["FLATPAK_ID": "org.example.Notes"], flatpakInfo: info)
                == Sandbox(kind: .flatpak, appID: "org.example.Notes", secretServiceAccess: .granted))
    }

    @Test(
        "a Flatpak that did not request the talk-name: not granted, the note says what to request, the keyring promises nothing"
    )
    func flatpakNotGranted() throws {
        let info = """
            [Application]
            name=org.example.Notes
            [Session Bus Policy]
            org.freedesktop.Notifications=talk
            org.freedesktop.secrets=see
            org.freedesktop.secretsX=talk
            """
        let sandbox = try detect(
            environment: ["FLATPAK_ID": "org.example.Notes"], flatpakInfo: info)
        #expect(sandbox == Sandbox(kind: .flatpak, appID: "org.example.Notes", secretServiceAccess: .notGranted))
        #expect(
            sandbox.secretServiceNote == """
                Flatpak app org.example.Notes: the Secret Service is not reachable — the app must request it with \
                --talk-name=org.freedesktop.secrets (finish-args), which its /.flatpak-info does not grant
                """)
        let store = try KeyringStore(service: "s", sandbox: sandbox)
        #expect(store.capabilities == [])
        let trial = TrialGuard(store: store, length: .days(14), deviceIdentity: "d")
        #expect(!trial.survivesReinstall)
        #expect(trial.sandbox == sandbox)
    }

    @Test("FLATPAK_ID without a readable /.flatpak-info: a Flatpak, access undetermined")
    func flatpakUndetermined() throws {
        let sandbox = try detect(environment: ["FLATPAK_ID": "org.example.Notes"], flatpakInfo: nil)
        #expect(sandbox == Sandbox(kind: .flatpak, appID: "org.example.Notes", secretServiceAccess: .undetermined))
        #expect(sandbox.secretServiceNote.contains("only if the app requests --talk-name=org.freedesktop.secrets"))
        #expect(try KeyringStore(service: "s", sandbox: sandbox).capabilities == [.survivesReinstall, .encryptedAtRest])
    }

    @Test("/.flatpak-info alone is a Flatpak; a huge or binary one is parsed in bounds or not at all")
    func flatpakInfoAlone() throws {
        #expect(
            try detect(environment: [:], flatpakInfo: "[Application]\nname=org.example.Solo\n")
                == Sandbox(kind: .flatpak, appID: "org.example.Solo", secretServiceAccess: .notGranted))
        let huge = String(repeating: "[Session Bus Policy]\norg.freedesktop.secrets=talk\n", count: 30_000)
        #expect(
            try detect(environment: [:], flatpakInfo: huge).secretServiceAccess == .undetermined)
        let binary = String(decoding: (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }, as: UTF8.self)
        #expect(try detect(environment: [:], flatpakInfo: binary).kind == .flatpak)
    }

    @Test("SNAP: a Snap, access undetermined, the note names the password-manager-service interface")
    func snap() throws {
        let sandbox = try detect(
            environment: ["SNAP": "/snap/notes/12", "SNAP_NAME": "notes"], flatpakInfo: nil)
        #expect(sandbox == Sandbox(kind: .snap, appID: "notes", secretServiceAccess: .undetermined))
        #expect(sandbox.secretServiceNote.contains("snap connect notes:password-manager-service"))
        #expect(sandbox.reinstallNote.contains("survive `snap remove`"))
        #expect(sandbox.reinstallNote.contains("~/snap/notes"))
    }
}
