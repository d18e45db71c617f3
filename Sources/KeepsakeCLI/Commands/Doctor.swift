#if CLI
import ArgumentParser
import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeSodium

extension Migrate {
    struct Doctor: OutputCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Report, for each kind of store, whether it can be used here and why not.",
                    usage: "\(CLI.name) doctor [--store <uri>] [--keyring-timeout <seconds>] [--json]",
                    discussion: """
                        Never prompts and never writes. The keyring check names the Secret Service provider (gnome-keyring, KeePassXC, KWallet or other, with its version where it can be found without running anything: asked of the bus and /proc, never of the provider) and asks it for its default collection and whether it is locked, within --keyring-timeout. The sandbox line says whether the app runs in Flatpak or Snap, what it must request there for the keyring, and what survives a reinstall. With --store URI, one more line says whether that store opens and, where its kind can tell (a PostgreSQL server's version), more. Exits 0 when every line is usable, 69 otherwise.
                        """)
            }
        }

        @Option(name: .long, help: ArgumentHelp("Deadline for the keyring check, in seconds.", valueName: "seconds"))
        var keyringTimeout: Double?

        /// The name this option had before it was named like every other keyring deadline.
        @Option(
            name: .customLong("timeout"),
            help: ArgumentHelp(
                "Deprecated spelling of --keyring-timeout.", valueName: "seconds", visibility: .hidden))
        var deprecatedTimeout: Double?

        /// The deadline: `--keyring-timeout`, else the deprecated `--timeout`, else 5 seconds.
        var timeout: Double { keyringTimeout ?? deprecatedTimeout ?? 5 }
        var timeoutOption: String {
            keyringTimeout == nil && deprecatedTimeout != nil ? "--timeout" : "--keyring-timeout"
        }

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Also open this store and report whether it can be used (its server's version, for a server).",
                valueName: "uri"))
        var store: String?

        @OptionGroup var output: OutputOptions

        struct Check: Encodable {
            let store: String
            let usable: Bool
            let status: String
            let detail: String
            /// The keyring's Secret Service provider (keyring row only).
            var provider: Provider? = nil
        }

        /// Which program provides the Secret Service, in `--json`.
        struct Provider: Encodable {
            /// `gnome-keyring`, `KeePassXC`, `KWallet`, `other` or `unknown`.
            let name: String
            let version: String?
            let process: String?
            let pid: UInt32?
            let note: String?

            init(_ provider: KeyringProvider) {
                name = provider.kind.rawValue
                version = provider.version
                process = provider.processName
                pid = provider.processID
                note = provider.note
            }
        }

        func validate() throws {
            if keyringTimeout != nil && deprecatedTimeout != nil {
                throw ValidationError("--timeout is the old name of --keyring-timeout; give only --keyring-timeout")
            }
            _ = try timeoutDuration(timeout, option: timeoutOption)
        }

        func run() throws {
            if deprecatedTimeout != nil && !CLI.quiet {
                printError("warning: --timeout is deprecated; use --keyring-timeout")
            }
            let sandbox = Sandbox.current
            let keyring = KeyringStore.diagnose(
                timeout: try timeoutDuration(timeout, option: timeoutOption),
                sandbox: sandbox)
            var checks = [
                Check(
                    store: "defaults", usable: true, status: "usable",
                    detail: "JSON suite files; needs only a writable directory"),
                Check(
                    store: "file", usable: true, status: "usable",
                    detail: "libsodium \(SodiumFileStore.libraryVersion); needs a writable directory and a key"),
                Check(
                    store: "keyring", usable: keyring.isUsable, status: keyring.status.rawValue,
                    detail: keyring.description, provider: keyring.provider.map(Provider.init)),
                // Flatpak or Snap: whether the Secret Service may be reached, what survives a reinstall.
                Check(
                    store: "sandbox", usable: sandbox.secretServiceAccess != .notGranted, status: sandbox.kind.rawValue,
                    detail: sandbox.kind == .none
                        ? "not sandboxed (no FLATPAK_ID, /.flatpak-info or SNAP)"
                        : sandbox.description)
            ]
            if let store { checks.append(try check(store)) }
            if output.json {
                printJSON(checks)
            } else {
                printTable(
                    ["STORE", "USABLE", "STATUS", "DETAIL"],
                    checks.map {
                        [$0.store + ":", $0.usable ? "yes" : "no", $0.status, $0.detail]
                    })
            }
            if checks.contains(where: { !$0.usable }) { throw Exit.unavailable }
        }

        /// Whether the store `text` names opens here (without a master key: a `file:` store says
        /// it needs one), and what it says of itself.
        private func check(_ text: String) throws -> Check {
            let uri: StoreURI
            do throws(KeepsakeError) {
                uri = try CLI.backends.parse(text)
            } catch {
                throw usageError("--store: \(error.message)")
            }
            let deadline = try timeoutDuration(timeout, option: timeoutOption)
            do throws(KeepsakeError) {
                var options = StoreOpenOptions(requireExisting: true)
                options.keyringTimeout = deadline
                let opened = try CLI.backends.open(uri, options: options)
                let detail =
                    try (opened as? any DiagnosableStore)?.diagnosis()
                    ?? "opens; \(opened.capabilities.isEmpty ? "no capabilities" : opened.capabilities.description)"
                return Check(store: opened.uri, usable: true, status: "usable", detail: detail)
            } catch {
                return Check(store: uri.description, usable: false, status: error.code.rawValue, detail: error.message)
            }
        }
    }
}
#endif
