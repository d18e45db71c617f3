import Foundation

/// The program that provides the Secret Service (owns `org.freedesktop.secrets` on the session
/// bus): what ``KeyringDiagnosis/provider`` and `migrate doctor` report.
///
/// Found without contacting the provider: the bus daemon tells the process ID of the name's
/// owner, and the process's `/proc` entries tell its executable, its name and — where that is
/// cheap — its version. Nothing is run, and nothing can prompt.
///
/// ```swift
/// if let provider = KeyringStore.diagnose().provider {
///     print(provider)   // "KeePassXC 2.7.4 (keepassxc, pid 4242)"
/// }
/// ```
public struct KeyringProvider: Sendable, Equatable, CustomStringConvertible {
    /// The providers whose differences Keepsake knows.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// GNOME Keyring (`gnome-keyring-daemon`).
        case gnomeKeyring = "gnome-keyring"
        /// KeePassXC's Secret Service integration (`keepassxc`).
        case keePassXC = "KeePassXC"
        /// KDE Wallet (`kwalletd5`, `kwalletd6`, `ksecretd`).
        case kWallet = "KWallet"
        /// Another program; ``KeyringProvider/processName`` says which.
        case other
        /// The provider's process could not be found or read; ``KeyringProvider/note`` says why.
        case unknown
    }

    /// Which provider it is.
    public let kind: Kind
    /// The program's name: its executable's file name, or the process name when the executable
    /// cannot be read; `nil` when neither could.
    public let processName: String?
    /// The provider's process ID, as the bus daemon reported it.
    public let processID: UInt32?
    /// The version, when it could be found without running anything: from the path of a
    /// KeePassXC AppImage or KeePassXC's installed AppStream file, or the KDE Wallet library
    /// the KWallet daemon has loaded. `nil` for gnome-keyring, whose version is not found this way.
    public let version: String?
    /// Why the provider is ``Kind/unknown``, or `nil`.
    public let note: String?
    /// What the provider's settings say about prompts, where Keepsake knows how to read them
    /// (KeePassXC's `keepassxc.ini`); `nil` for other providers or when they could not be read.
    public internal(set) var prompts: PromptSettings?

    /// Settings of a provider that make it ask the user before a client's request.
    public struct PromptSettings: Sendable, Equatable {
        /// The settings file they were read from.
        public var file: String
        /// Whether every read of an item by another program asks the user to confirm
        /// (KeePassXC's `[FdoSecrets] ConfirmAccessItem`, on unless set to `false`). Keepsake
        /// never answers such a prompt: reads of items it did not create then throw `.locked`.
        public var confirmsAccess: Bool
        /// Whether deleting an item asks the user to confirm (`[FdoSecrets] ConfirmDeleteItem`,
        /// on unless set to `false`): a removal waits for the answer until the call's deadline.
        public var confirmsDeletion: Bool
    }

    /// A provider as found; for tests and reports.
    public init(kind: Kind, processName: String?, processID: UInt32?, version: String?, note: String? = nil) {
        self.kind = kind
        self.processName = processName
        self.processID = processID
        self.version = version
        self.note = note
    }

    /// `KeePassXC 2.7.4 (keepassxc, pid 4242)`, `gnome-keyring (gnome-keyring-daemon, pid 12)`,
    /// `other (my-daemon, pid 7)`, or `unknown (why)`.
    public var description: String {
        var head = kind.rawValue
        if let version { head += " \(version)" }
        var details: [String] = []
        if let processName { details.append(processName) }
        if let processID { details.append("pid \(processID)") }
        if let note { details.append(note) }
        return details.isEmpty ? head : "\(head) (\(details.joined(separator: ", ")))"
    }

    // MARK: Finding it

    /// What `/proc` says about one process: each part `nil` when it could not be read.
    struct ProcessFacts {
        /// The target of `/proc/PID/exe` (a deleted executable ends in ` (deleted)`).
        var executable: String?
        /// `/proc/PID/comm`, without its newline (at most 15 bytes).
        var command: String?
        /// `/proc/PID/cmdline`, split at NUL.
        var arguments: [String]
        /// `/proc/PID/maps`, for the libraries the process loaded.
        var maps: String?
        /// The first part that could not be read and why, for the note of an unknown provider.
        var failure: String?
    }

    /// The longest `/proc` file read (the maps of a large process stay well below).
    static let procReadLimit = 4 << 20

    /// The provider with process ID `pid`, from its `/proc` entries. `readFile` reads a file
    /// (up to a limit) or says why it could not; tests give their own.
    static func identify(
        processID pid: UInt32, root: String = "/proc",
        readFile: (String) -> Result<Data, FileFailure> = KeyringProvider.readFile
    ) -> KeyringProvider {
        let directory = "\(root)/\(pid)"
        var facts = ProcessFacts(arguments: [])
        switch readLink("\(directory)/exe") {
        case let .success(target): facts.executable = target
        case let .failure(failure): facts.failure = "\(directory)/exe: \(failure.reason)"
        }
        switch readFile("\(directory)/comm") {
        case let .success(data):
            facts.command = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
        case let .failure(failure): facts.failure = facts.failure ?? "\(directory)/comm: \(failure.reason)"
        }
        if case let .success(data) = readFile("\(directory)/cmdline") {
            facts.arguments = data.split(separator: 0, omittingEmptySubsequences: true)
                .map { String(decoding: $0, as: UTF8.self) }
        }
        if case let .success(data) = readFile("\(directory)/maps") {
            facts.maps = String(decoding: data, as: UTF8.self)
        }
        var provider = identify(processID: pid, facts: facts, readFile: readFile)
        if provider.kind == .keePassXC, case let .success(environ) = readFile("\(directory)/environ") {
            provider.prompts = keePassXCPromptSettings(environ: environ, readFile: readFile)
        }
        return provider
    }

    /// KeePassXC's prompt settings, from the `keepassxc.ini` its environment points at
    /// (`$XDG_CONFIG_HOME/keepassxc/`, else `$HOME/.config/keepassxc/`); `nil` when it cannot
    /// be read. A missing setting is KeePassXC's default: on. Linear in the sizes read.
    static func keePassXCPromptSettings(
        environ: Data, readFile: (String) -> Result<Data, FileFailure>
    ) -> PromptSettings? {
        var variables: [String: String] = [:]
        for entry in environ.split(separator: 0) {
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(decoding: entry[entry.startIndex..<equals], as: UTF8.self)
            guard name == "XDG_CONFIG_HOME" || name == "HOME" else { continue }
            variables[name] = String(decoding: entry[(equals + 1)...], as: UTF8.self)
        }
        let directory: String
        if let config = variables["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            directory = config
        } else if let home = variables["HOME"], home.hasPrefix("/") {
            directory = home + "/.config"
        } else {
            return nil
        }
        let file = directory + "/keepassxc/keepassxc.ini"
        var settings = PromptSettings(file: file, confirmsAccess: true, confirmsDeletion: true)
        switch readFile(file) {
        case let .success(data):
            var section = ""
            for raw in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("[") {
                    section = line
                    continue
                }
                guard section == "[FdoSecrets]", let equals = line.firstIndex(of: "=") else { continue }
                let key = line[..<equals].trimmingCharacters(in: .whitespaces)
                let on = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces).lowercased() != "false"
                if key == "ConfirmAccessItem" { settings.confirmsAccess = on }
                if key == "ConfirmDeleteItem" { settings.confirmsDeletion = on }
            }
            return settings
        case let .failure(failure):
            // No settings file yet: KeePassXC runs with its defaults.
            return failure.reason == String(cString: strerror(ENOENT)) ? settings : nil
        }
    }

    /// The provider these facts describe. Linear in the size of the facts.
    static func identify(
        processID pid: UInt32, facts: ProcessFacts, readFile: (String) -> Result<Data, FileFailure>
    ) -> KeyringProvider {
        let executable = facts.executable.map { $0.hasSuffix(" (deleted)") ? String($0.dropLast(10)) : $0 }
        let name =
            executable.map { ($0 as NSString).lastPathComponent }.flatMap { $0.isEmpty ? nil : $0 }
            ?? facts.command.flatMap { $0.isEmpty ? nil : $0 }
        guard let name else {
            return KeyringProvider(
                kind: .unknown, processName: nil, processID: pid, version: nil,
                note: "its process could not be read: \(facts.failure ?? "no name")")
        }
        let lowered = name.lowercased()
        let command = facts.command?.lowercased() ?? ""
        let kind: Kind
        if lowered.hasPrefix("gnome-keyring") || command.hasPrefix("gnome-keyring") {
            kind = .gnomeKeyring
        } else if lowered.contains("keepassxc") || command.contains("keepassxc") {
            kind = .keePassXC
        } else if lowered.hasPrefix("kwalletd") || lowered == "ksecretd" || command.hasPrefix("kwalletd") {
            kind = .kWallet
        } else {
            kind = .other
        }
        let version: String?
        switch kind {
        case .keePassXC:
            version =
                appImageVersion(executable) ?? appImageVersion(facts.arguments.first)
                ?? executable.flatMap { keePassXCMetainfoVersion(executable: $0, readFile: readFile) }
        case .kWallet:
            version = facts.maps.flatMap(kWalletLibraryVersion)
        default:
            version = nil
        }
        return KeyringProvider(kind: kind, processName: name, processID: pid, version: version)
    }

    /// `2.7.4` from `…/KeePassXC-2.7.4-x86_64.AppImage`.
    static func appImageVersion(_ path: String?) -> String? {
        guard let path else { return nil }
        let file = (path as NSString).lastPathComponent
        guard file.lowercased().hasPrefix("keepassxc-") else { return nil }
        return leadingVersion(file.dropFirst("keepassxc-".count))
    }

    /// The newest release in KeePassXC's AppStream file under the executable's prefix
    /// (`/usr/bin/keepassxc` → `/usr/share/metainfo/org.keepassxc.KeePassXC.appdata.xml`).
    static func keePassXCMetainfoVersion(executable: String, readFile: (String) -> Result<Data, FileFailure>) -> String?
    {
        let prefix = ((executable as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        guard case let .success(data) = readFile("\(prefix)/share/metainfo/org.keepassxc.KeePassXC.appdata.xml") else {
            return nil
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let release = text.range(of: "<release ") else { return nil }
        guard let attribute = text[release.upperBound...].range(of: "version=\"") else { return nil }
        return leadingVersion(text[attribute.upperBound...])
    }

    /// `5.103.0` from a maps line ending in `/libKF5Wallet.so.5.103.0` (or `libKF6Wallet…`).
    static func kWalletLibraryVersion(_ maps: String) -> String? {
        for line in maps.split(separator: "\n") {
            let file = line.split(separator: "/").last ?? ""
            guard file.hasPrefix("libKF5Wallet") || file.hasPrefix("libKF6Wallet"),
                let so = file.range(of: ".so.")
            else { continue }
            if let version = leadingVersion(file[so.upperBound...]), version.contains(".") { return version }
        }
        return nil
    }

    /// The digits and dots at the start of `text` (`2.7.4` from `2.7.4-x86_64`), ending in a
    /// digit, or `nil` when it does not start with one.
    static func leadingVersion(_ text: Substring) -> String? {
        var version = String(text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }.prefix(32))
        while version.hasSuffix(".") { version.removeLast() }
        return version.first?.isNumber == true ? version : nil
    }

    // MARK: Reading /proc

    /// Why a file could not be read.
    struct FileFailure: Error {
        var reason: String
    }

    /// Up to ``procReadLimit`` bytes of the file at `path` (`/proc` files report no size, so
    /// they are read until the end).
    static func readFile(_ path: String) -> Result<Data, FileFailure> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(FileFailure(reason: String(cString: strerror(errno)))) }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while data.count < procReadLimit {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(FileFailure(reason: String(cString: strerror(errno))))
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return .success(data)
    }

    /// The target of the symbolic link at `path`.
    static func readLink(_ path: String) -> Result<String, FileFailure> {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return .failure(FileFailure(reason: String(cString: strerror(errno)))) }
        return .success(String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
