import Foundation
import Keepsake
import Testing

@testable import KeepsakeKeyring

extension KeyringTests {
    /// The provider is named, found through the bus and /proc (never by asking the provider).
    @Suite("Provider named")
    struct ProviderNamed {
        @Test("the private keyring's provider is named, with its daemon's process")
        func providerNamed() throws {
            let expected = PrivateKeyring.expectedProvider
            let diagnosis = KeyringStore.diagnose(timeout: .seconds(5))
            #expect(diagnosis.status == .usable)
            let provider = try #require(diagnosis.provider)
            #expect(provider.kind == expected.kind)
            #expect(provider.processName == expected.process)
            #expect(provider.note == nil)
            let pid = try #require(provider.processID)
            // The process the bus named is the running provider.
            let command = try String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
            #expect(command.hasPrefix(String(expected.process.prefix(13))))
            #expect(
                diagnosis.description.contains("; provider \(expected.kind.rawValue)"), "\(diagnosis.description)")
            #expect(diagnosis.description.contains("(\(expected.process), pid \(pid))"), "\(diagnosis.description)")
            if expected.kind != .gnomeKeyring {
                // KeePassXC and KWallet carry their version (gnome-keyring's daemon has none to read).
                #expect(provider.version?.isEmpty == false, "\(provider)")
            }
        }

        @Test("doctor names the provider in its table and in --json")
        func doctorNamesProvider() throws {
            let expected = PrivateKeyring.expectedProvider
            let table = try runMigrate(["doctor"])
            #expect(table.status == 0, "\(table.stdout)\(table.stderr)")
            #expect(table.stdout.contains("provider \(expected.kind.rawValue)"), "\(table.stdout)")
            #expect(table.stdout.contains("(\(expected.process), pid "), "\(table.stdout)")

            let json = try runMigrate(["doctor", "--json"])
            #expect(json.status == 0, "\(json.stderr)")
            let checks = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            let keyring = try #require(checks.first { $0["store"] as? String == "keyring" })
            let provider = try #require(keyring["provider"] as? [String: Any], "\(json.stdout)")
            #expect(provider["name"] as? String == expected.kind.rawValue)
            #expect(provider["process"] as? String == expected.process)
            #expect((provider["pid"] as? Int ?? 0) > 0)
            #expect(checks.filter { $0["provider"] != nil }.count == 1)
        }

        @Test(
            "KeePassXC set to confirm every read: doctor says so, with the setting to change",
            .enabled(if: PrivateKeyring.runningProvider == .keePassXC, "only KeePassXC's settings are read"))
        func keePassXCConfirmationReported() throws {
            let settings = try PrivateKeyring.keyring.keyringDataDirectory
                .appendingPathComponent("config/keepassxc/keepassxc.ini")
            let original = try Data(contentsOf: settings)
            defer { _ = FileManager.default.createFile(atPath: settings.path, contents: original) }
            let text = String(decoding: original, as: UTF8.self)
            #expect(text.contains("ConfirmAccessItem=false"))
            try Data(text.replacingOccurrences(of: "ConfirmAccessItem=false", with: "ConfirmAccessItem=true").utf8)
                .write(to: settings)
            let diagnosis = KeyringStore.diagnose(timeout: .seconds(5))
            #expect(diagnosis.status == .confirmationRequired)
            #expect(!diagnosis.isUsable)
            #expect(diagnosis.error?.code == .locked)
            #expect(diagnosis.provider?.prompts?.confirmsAccess == true)
            #expect(diagnosis.provider?.prompts?.confirmsDeletion == false)
            #expect(diagnosis.description.contains("ConfirmAccessItem=false under [FdoSecrets] in \(settings.path)"))
            let json = try runMigrate(["doctor", "--json"])
            #expect(json.stdout.contains("\"confirmationRequired\""), "\(json.stdout)")

            _ = FileManager.default.createFile(atPath: settings.path, contents: original)
            #expect(KeyringStore.diagnose(timeout: .seconds(5)).status == .usable)
        }

        @Test("while the keyring is locked, doctor still names the provider")
        func lockedStillNamed() throws {
            let expected = PrivateKeyring.expectedProvider
            try PrivateKeyring.whileLocked {
                let diagnosis = KeyringStore.diagnose(timeout: .seconds(5))
                #expect(diagnosis.status == .locked)
                #expect(diagnosis.provider?.kind == expected.kind)
                #expect(
                    diagnosis.description.contains("provider \(expected.kind.rawValue)"), "\(diagnosis.description)")
            }
        }
    }
}

/// Providers this machine does not run, identified from injected `/proc` facts.
@Suite("Provider identified from its process")
struct ProviderIdentificationTests {
    typealias Facts = KeyringProvider.ProcessFacts

    static func noFiles(_ path: String) -> Result<Data, KeyringProvider.FileFailure> {
        .failure(.init(reason: "No such file or directory"))
    }

    static func identify(
        _ facts: Facts, files: [String: String] = [:]
    ) -> KeyringProvider {
        KeyringProvider.identify(processID: 4242, facts: facts) { path in
            files[path].map { .success(Data($0.utf8)) } ?? .failure(.init(reason: "No such file or directory"))
        }
    }

    @Test("KeePassXC from its package: named, version from its AppStream file under the executable's prefix")
    func keePassXCPackage() {
        let metainfo = """
            <component><id>org.keepassxc.KeePassXC</id><releases>
            <release version="2.7.4" date="2022-10-22"/><release version="2.7.3"/></releases></component>
            """
        let provider = Self.identify(
            Facts(executable: "/usr/bin/keepassxc", command: "keepassxc", arguments: ["keepassxc", "--pw-stdin"]),
            files: ["/usr/share/metainfo/org.keepassxc.KeePassXC.appdata.xml": metainfo])
        #expect(
            provider == KeyringProvider(kind: .keePassXC, processName: "keepassxc", processID: 4242, version: "2.7.4"))
        #expect(provider.description == "KeePassXC 2.7.4 (keepassxc, pid 4242)")
        // Without the file: named, no version.
        let bare = Self.identify(Facts(executable: "/opt/kp/bin/keepassxc", command: "keepassxc", arguments: []))
        #expect(bare.kind == .keePassXC && bare.version == nil)
    }

    @Test("KeePassXC as an AppImage: version from the image's name")
    func keePassXCAppImage() {
        let provider = Self.identify(
            Facts(
                executable: "/tmp/.mount_KeePasAbc/usr/bin/keepassxc", command: "keepassxc",
                arguments: ["/home/u/Apps/KeePassXC-2.7.9-x86_64.AppImage"]))
        #expect(provider.kind == .keePassXC && provider.version == "2.7.9")
    }

    @Test("KWallet: kwalletd5 named, version from the KDE Wallet library it loaded")
    func kWallet() {
        let maps = """
            55d0c000-55d0d000 r--p 00000000 08:01 123 /usr/bin/kwalletd5
            7f00a000-7f00b000 r--p 00000000 08:01 456 /usr/lib/x86_64-linux-gnu/libKF5WalletBackend5.so.5.103.0
            7f00c000-7f00d000 r--p 00000000 08:01 457 /usr/lib/x86_64-linux-gnu/libKF5Wallet.so.5.103.0
            """
        let provider = Self.identify(
            Facts(executable: "/usr/bin/kwalletd5", command: "kwalletd5", arguments: [], maps: maps))
        #expect(
            provider == KeyringProvider(kind: .kWallet, processName: "kwalletd5", processID: 4242, version: "5.103.0"))
        #expect(
            Self.identify(Facts(executable: "/usr/bin/ksecretd", command: "ksecretd", arguments: [])).kind == .kWallet)
    }

    @Test("another program is 'other', named; an unreadable process is 'unknown', with why")
    func otherAndUnknown() {
        let other = Self.identify(Facts(executable: "/usr/libexec/oo7-daemon", command: "oo7-daemon", arguments: []))
        #expect(other == KeyringProvider(kind: .other, processName: "oo7-daemon", processID: 4242, version: nil))
        #expect(other.description == "other (oo7-daemon, pid 4242)")

        // The executable's link cannot be read (another user's process): the process name still names it.
        let byCommand = Self.identify(
            Facts(command: "gnome-keyring-d", arguments: [], failure: "exe: Permission denied"))
        #expect(byCommand.kind == .gnomeKeyring && byCommand.processName == "gnome-keyring-d")
        // A replaced executable still names the program.
        let deleted = Self.identify(Facts(executable: "/usr/bin/gnome-keyring-daemon (deleted)", arguments: []))
        #expect(deleted.processName == "gnome-keyring-daemon" && deleted.kind == .gnomeKeyring)

        let unknown = Self.identify(Facts(arguments: [], failure: "/proc/4242/exe: No such file or directory"))
        #expect(unknown.kind == .unknown)
        #expect(
            unknown.description
                == "unknown (pid 4242, its process could not be read: /proc/4242/exe: No such file or directory)")
    }

    @Test(
        "a process that is gone reads as unknown, never as a provider",
        .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/exe")))
    func goneProcess() {
        // Process IDs stop below 2^22 on Linux: this one never exists.
        let provider = KeyringProvider.identify(processID: 4_000_000_000)
        #expect(provider.kind == .unknown)
        #expect(provider.note?.contains("No such file or directory") == true, "\(provider)")
    }

    @Test("versions: digits and dots only, bounded, never a guess")
    func versions() {
        #expect(KeyringProvider.leadingVersion("2.7.4-x86_64") == "2.7.4")
        #expect(KeyringProvider.leadingVersion("5.103.0.") == "5.103.0")
        #expect(KeyringProvider.leadingVersion("x2.7") == nil)
        #expect(KeyringProvider.leadingVersion(Substring(String(repeating: "9", count: 10_000)))?.count == 32)
        #expect(KeyringProvider.kWalletLibraryVersion("/usr/lib/libKF5Wallet.so.5\n") == nil)
        #expect(KeyringProvider.appImageVersion("/apps/KeePassXC-latest.AppImage") == nil)
    }
}

/// What Keepsake knows of KeePassXC without running it: its placeholders and its prompt settings.
@Suite("KeePassXC placeholders and settings")
struct KeePassXCKnowledgeTests {
    @Test("placeholders are found with their offset, without case; other braces are not")
    func placeholders() {
        func first(_ text: String) -> (String, Int)? {
            KeePassXCPlaceholders.first(in: Data(text.utf8)).map { ($0.token, $0.offset) }
        }
        #expect(first(#"{"data":{"title":"{TITLE}"}}"#)! == ("{TITLE}", 18))
        #expect(first("a{password}{PASSWORD}")! == ("{password}", 1))
        #expect(first("{S:service}")! == ("{S:service}", 0))
        #expect(first("x{REF:P@I:0}")! == ("{REF:P@I:0}", 1))
        #expect(first("{T-REPLACE-RX:/a/b/c/}")! == ("{T-REPLACE-RX:/a/b/c/}", 0))
        #expect(first("{{PASSWORD}}")! == ("{PASSWORD}", 1))
        for plain in [#"{"data":{"alias":"Ada"},"schema":"Person","version":3}"#, "{}", "{TITLES}", "{", "}{", ""] {
            #expect(first(plain) == nil, "\(plain)")
        }
        // A brace pair longer than any placeholder is not one; a run of braces stays linear.
        #expect(first("{S:" + String(repeating: "x", count: 300) + "}") == nil)
        #expect(first(String(repeating: "{", count: 100_000)) == nil)
    }

    @Test("prompt settings are read from the keepassxc.ini the process's environment points at")
    func promptSettings() {
        let files: [String: String] = [
            "/xdg/keepassxc/keepassxc.ini":
                "[General]\nConfirmAccessItem=false\n[FdoSecrets]\nEnabled=true\nConfirmAccessItem = false\n",
            "/home/ada/.config/keepassxc/keepassxc.ini": "[FdoSecrets]\nConfirmDeleteItem=false\n"
        ]
        let read: (String) -> Result<Data, KeyringProvider.FileFailure> = { path in
            files[path].map { .success(Data($0.utf8)) }
                ?? .failure(KeyringProvider.FileFailure(reason: String(cString: strerror(ENOENT))))
        }
        func settings(_ environ: String) -> KeyringProvider.PromptSettings? {
            KeyringProvider.keePassXCPromptSettings(
                environ: Data(environ.replacingOccurrences(of: "|", with: "\0").utf8), readFile: read)
        }
        #expect(
            settings("HOME=/home/ada|XDG_CONFIG_HOME=/xdg|PATH=/bin")
                == .init(file: "/xdg/keepassxc/keepassxc.ini", confirmsAccess: false, confirmsDeletion: true))
        #expect(
            settings("HOME=/home/ada")
                == .init(
                    file: "/home/ada/.config/keepassxc/keepassxc.ini", confirmsAccess: true, confirmsDeletion: false))
        // No settings file: KeePassXC's defaults, both on.
        #expect(settings("HOME=/nowhere")?.confirmsAccess == true)
        #expect(settings("PATH=/bin") == nil)
        #expect(settings("HOME=relative") == nil)
    }
}
