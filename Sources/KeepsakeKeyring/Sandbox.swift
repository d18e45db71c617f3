import Foundation
import Keepsake

/// The application sandbox this process runs in, if any — Flatpak or Snap — and what that
/// means for the keyring: whether the Secret Service can be reached, and what survives when
/// the app is uninstalled and installed again.
///
/// ```swift
/// let sandbox = Sandbox.current
/// if sandbox.secretServiceAccess == .notGranted { print(sandbox.secretServiceNote) }
/// ```
///
/// Detected from the environment and the file system, both injectable for tests:
/// - **Flatpak**: `FLATPAK_ID`, or `/.flatpak-info`. The Secret Service is reachable only
///   through a D-Bus hole the app requests (`--talk-name=org.freedesktop.secrets`, or the whole
///   session bus); `/.flatpak-info` lists what was granted. `flatpak uninstall --delete-data`
///   deletes the app's data directory (`~/.var/app/<id>`, where its XDG directories point);
///   the user's keyring, outside the sandbox, keeps its items.
/// - **Snap**: `SNAP`. Under strict confinement the Secret Service is reachable only when the
///   `password-manager-service` interface is connected (`snap connect <snap>:password-manager-service`),
///   which is not automatic; whether it is cannot be read from inside, so it is reported as
///   undetermined and the keyring check says whether the service answers. `snap remove`
///   deletes `~/snap/<snap>` (keeping a snapshot for a while unless `--purge`); keyring items stay.
public struct Sandbox: Sendable, Equatable, CustomStringConvertible {
    /// Which sandbox.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// Not sandboxed (as far as can be told).
        case none
        /// A Flatpak app.
        case flatpak
        /// A Snap.
        case snap
    }

    /// Whether the sandbox lets the app talk to the Secret Service (`org.freedesktop.secrets`).
    public enum SecretServiceAccess: String, Sendable, Equatable, CaseIterable {
        /// Not sandboxed: the session bus is the user's own.
        case unconfined
        /// The sandbox grants it (Flatpak: a talk-name for `org.freedesktop.secrets`, or the
        /// whole session bus).
        case granted
        /// The sandbox does not grant it: the keyring store is unavailable here.
        case notGranted
        /// It cannot be told from inside (a Snap, or no readable `/.flatpak-info`): the keyring
        /// check says whether the service answers.
        case undetermined
    }

    /// The sandbox.
    public let kind: Kind
    /// The app's id in the sandbox (`FLATPAK_ID` or the `name` in `/.flatpak-info`; `SNAP_NAME`).
    public let appID: String?
    /// Whether the Secret Service may be reached.
    public let secretServiceAccess: SecretServiceAccess

    /// A sandbox as described; ``detect(environment:root:)`` finds this process's.
    public init(kind: Kind, appID: String?, secretServiceAccess: SecretServiceAccess) {
        self.kind = kind
        self.appID = appID
        self.secretServiceAccess = secretServiceAccess
    }

    /// No sandbox.
    public static let unconfined = Sandbox(kind: .none, appID: nil, secretServiceAccess: .unconfined)

    /// The sandbox of this process.
    public static var current: Sandbox { detect() }

    /// The largest `/.flatpak-info` read; a bigger one is not parsed (access `undetermined`).
    static let infoFileLimit = 1 << 20

    /// Detects the sandbox from `environment` and the files under `root` (`/` normally; a
    /// test's directory holding a `.flatpak-info` otherwise).
    public static func detect(
        environment: [String: String] = ProcessInfo.processInfo.environment, root: String = "/"
    ) -> Sandbox {
        let infoPath = (root.hasSuffix("/") ? root : root + "/") + ".flatpak-info"
        let info = readInfo(infoPath)
        let flatpakID = environment["FLATPAK_ID"].flatMap { $0.isEmpty ? nil : $0 }
        if flatpakID != nil || info != .missing {
            switch info {
            case let .parsed(sections):
                let name = sections["Application"]?["name"] ?? sections["Runtime"]?["name"]
                return Sandbox(
                    kind: .flatpak, appID: flatpakID ?? name,
                    secretServiceAccess: grantsSecretService(sections) ? .granted : .notGranted)
            case .missing, .unreadable:
                return Sandbox(kind: .flatpak, appID: flatpakID, secretServiceAccess: .undetermined)
            }
        }
        if let snap = environment["SNAP"], !snap.isEmpty {
            return Sandbox(
                kind: .snap, appID: environment["SNAP_NAME"].flatMap { $0.isEmpty ? nil : $0 },
                secretServiceAccess: .undetermined)
        }
        return .unconfined
    }

    private enum Info: Equatable {
        case missing
        case unreadable
        case parsed([String: [String: String]])
    }

    /// `/.flatpak-info`, an ini file: `[Section]` lines and `key=value` lines. Linear in its
    /// size; anything else on a line is ignored.
    private static func readInfo(_ path: String) -> Info {
        guard FileManager.default.fileExists(atPath: path) else { return .missing }
        guard let handle = FileHandle(forReadingAtPath: path) else { return .unreadable }
        defer { try? handle.close() }  // read-only handle: nothing to lose
        let data: Data
        do {
            data = try handle.read(upToCount: infoFileLimit + 1) ?? Data()
        } catch {
            return .unreadable
        }
        guard data.count <= infoFileLimit else { return .unreadable }
        var sections: [String: [String: String]] = [:]
        var current = ""
        for rawLine in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") && line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast())
            } else if !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") {
                let key = line[..<equals].trimmingCharacters(in: .whitespaces)
                sections[current, default: [:]][key] = line[line.index(after: equals)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
        return .parsed(sections)
    }

    /// A talk (or own) rule for `org.freedesktop.secrets` in `[Session Bus Policy]` — exactly or
    /// through a `prefix.*` wildcard — or `session-bus` among the `[Context]` sockets.
    private static func grantsSecretService(_ sections: [String: [String: String]]) -> Bool {
        let sockets = sections["Context"]?["sockets"]?.split(separator: ";").map(String.init) ?? []
        if sockets.contains("session-bus") { return true }
        for (name, policy) in sections["Session Bus Policy"] ?? [:] where ["talk", "own"].contains(policy) {
            if name == "org.freedesktop.secrets" { return true }
            if name.hasSuffix(".*"), "org.freedesktop.secrets".hasPrefix(String(name.dropLast(1))) { return true }
        }
        return false
    }

    /// What the app needs for the keyring, in one sentence.
    public var secretServiceNote: String {
        let app = appID ?? "this app"
        switch (kind, secretServiceAccess) {
        case (.none, _):
            return "not sandboxed: the keyring is the user's session keyring"
        case (.flatpak, .granted):
            return "Flatpak app \(app): the Secret Service is reachable (org.freedesktop.secrets is granted)"
        case (.flatpak, .notGranted):
            return """
                Flatpak app \(app): the Secret Service is not reachable — the app must request it with \
                --talk-name=org.freedesktop.secrets (finish-args), which its /.flatpak-info does not grant
                """
        case (.flatpak, _):
            return """
                Flatpak app \(app): the Secret Service is reachable only if the app requests \
                --talk-name=org.freedesktop.secrets (no readable /.flatpak-info says whether it did)
                """
        case (.snap, _):
            return """
                Snap \(app): the Secret Service is reachable only when the password-manager-service \
                interface is connected (snap connect \(appID ?? "<snap>"):password-manager-service)
                """
        }
    }

    /// What survives an uninstall and reinstall of the app here, in one sentence.
    public var reinstallNote: String {
        switch kind {
        case .none:
            return "an uninstall leaves the keyring; the app's own files go only if they are removed"
        case .flatpak:
            return """
                the keyring's items survive `flatpak uninstall`; the app's data directory \
                (~/.var/app/\(appID ?? "<app>"), its XDG directories) is deleted by `flatpak uninstall --delete-data`
                """
        case .snap:
            return """
                the keyring's items survive `snap remove`; the snap's data (~/snap/\(appID ?? "<snap>")) \
                is deleted (kept as a snapshot for a while unless --purge)
                """
        }
    }

    /// `none`, or both notes: what the keyring needs here, and what survives a reinstall.
    public var description: String {
        kind == .none ? "none" : "\(secretServiceNote); \(reinstallNote)"
    }
}

/// A store that can tell which sandbox it runs in and what reaching its backend requires there
/// (the keyring store: a Flatpak or Snap must be granted the Secret Service). Code that holds
/// any store — the trial guard — asks for this capability instead of naming a store type.
public protocol SandboxedStore: RecordStore {
    /// The sandbox the store runs in, with what the app must request there.
    var sandbox: Sandbox { get }
}

extension KeyringStore: SandboxedStore {}
