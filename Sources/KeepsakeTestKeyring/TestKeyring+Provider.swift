import Foundation

extension TestKeyring {
    /// The Secret Service provider a private keyring runs, chosen when it starts: by
    /// ``start(provider:)``, or for ``shared()`` and the `keepsake-test-keyring` runner by
    /// ``Variable/provider`` (`keepsake-test-keyring --provider keepassxc --keep-home -- swift test`).
    ///
    /// Each runs headless, with no dialog, on files in the keyring's temporary directory, and
    /// is driven the same way: ``TestKeyring/lock()``, ``TestKeyring/unlock()`` and
    /// ``TestKeyring/restartDaemon()`` (a new process on the same files: what a reboot or a
    /// reinstall of the app looks like).
    public enum Provider: String, Sendable, CaseIterable, CustomStringConvertible {
        /// GNOME Keyring (`gnome-keyring-daemon`): a `login` collection created unlocked with
        /// the throwaway password.
        case gnomeKeyring = "gnome-keyring"
        /// KeePassXC's Secret Service integration: a new database (`keepsake.kdbx`) whose root
        /// group is exposed as the `keepsake` collection, opened with the password; set not to
        /// confirm reads or deletions (its defaults ask the user for both).
        case keePassXC = "keepassxc"
        /// KDE Wallet (`kwalletd5`) with its Secret Service API on: the `kdewallet` wallet,
        /// opened the way a PAM login opens it.
        case kWallet = "kwallet"

        /// The provider named `name` (`gnome-keyring`, `keepassxc`, `kwallet`), or `nil`.
        public init?(name: String) { self.init(rawValue: name.lowercased()) }

        /// The name ``Variable/provider`` and the runner's `--provider` take.
        public var description: String { rawValue }

        /// How `migrate doctor` names the provider (`KeyringProvider`'s names).
        public var displayName: String {
            switch self {
            case .gnomeKeyring: return "gnome-keyring"
            case .keePassXC: return "KeePassXC"
            case .kWallet: return "KWallet"
            }
        }

        /// The D-Bus object path of the collection it serves as the default.
        public var collection: String {
            switch self {
            case .gnomeKeyring: return TestKeyring.loginCollection
            case .keePassXC: return "/org/freedesktop/secrets/collection/keepsake"
            case .kWallet: return "/org/freedesktop/secrets/collection/kdewallet"
            }
        }

        /// The programs it needs beside `dbus-daemon` and `gdbus`.
        var programs: [String] {
            switch self {
            case .gnomeKeyring: return ["gnome-keyring-daemon"]
            case .keePassXC: return ["keepassxc", "keepassxc-cli"]
            case .kWallet: return ["kwalletd5"]
            }
        }

        /// The Debian packages that provide it.
        public var debianPackages: [String] {
            switch self {
            case .gnomeKeyring: return ["gnome-keyring"]
            case .keePassXC: return ["keepassxc"]
            // Without QCA's OpenSSL plugin every KWallet client fails ("createDLGroup failed").
            case .kWallet: return ["libkf5wallet-bin", "libqca-qt5-2-plugins"]
            }
        }

        /// The provider ``Variable/provider`` names in `environment` (gnome-keyring when unset).
        ///
        /// - Throws: `.startFailed` when it names no known provider.
        static func chosen(in environment: [String: String]) throws(TestKeyringError) -> Provider {
            guard let name = environment[Variable.provider], !name.isEmpty else { return .gnomeKeyring }
            guard let provider = Provider(name: name) else {
                throw TestKeyringError(
                    .startFailed,
                    """
                    \(Variable.provider)=\(name) names no provider; use one of \
                    \(allCases.map(\.rawValue).joined(separator: ", "))
                    """)
            }
            return provider
        }

        /// Files KWallet needs besides its packages: QCA's OpenSSL plugin, looked for where
        /// Debian installs it. `nil` when present (or not needed).
        var missingPlugin: String? {
            guard self == .kWallet else { return nil }
            let libraries = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? []
            for triple in libraries
            where FileManager.default.fileExists(atPath: "/usr/lib/\(triple)/qca-qt5/crypto/libqca-ossl.so") {
                return nil
            }
            return "the QCA OpenSSL plugin (libqca-ossl.so)"
        }
    }
}

extension TestKeyring.Provider {
    /// The name of its log file in the keyring's `logs/` folder.
    var logName: String {
        switch self {
        case .gnomeKeyring: return "gnome-keyring-daemon"
        case .keePassXC: return "keepassxc"
        case .kWallet: return "kwalletd5"
        }
    }
}
