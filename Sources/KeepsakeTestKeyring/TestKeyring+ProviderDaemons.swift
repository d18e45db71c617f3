import Foundation

// Starting each provider's daemon headless, on the keyring's files, unlocked with no dialog.

extension TestKeyring {
    /// Starts the provider's daemon on this keyring's files (creating them on the first start)
    /// and unlocks its collection with the password, without any dialog. Returns once it is
    /// started; ``waitUntilReady()`` waits for the collection.
    func startProvider() throws {
        switch provider {
        case .gnomeKeyring:
            try spawn(
                tools.program("gnome-keyring-daemon"), ["--foreground", "--unlock", "--components=secrets"],
                log: "gnome-keyring-daemon", stdin: Data(password.utf8))
        case .keePassXC:
            try startKeePassXC()
        case .kWallet:
            try startKWallet()
        }
    }

    /// Where a provider other than gnome-keyring keeps its configuration (`XDG_CONFIG_HOME`).
    var providerConfigDirectory: URL { keyringDataDirectory.appendingPathComponent("config") }

    private var keePassXCDatabase: URL { keyringDataDirectory.appendingPathComponent("keepsake.kdbx") }

    private func startKeePassXC() throws {
        let settings = providerConfigDirectory.appendingPathComponent("keepassxc")
        try FileManager.default.createDirectory(at: settings, withIntermediateDirectories: true)
        // The Secret Service on; no confirmation of reads or deletions (the defaults ask the
        // user each time: a hang without a display), no unlock dialog before a search, no
        // notifications. Saved when locked or closed (restartDaemon locks it first), not after
        // every change: KeePassXC 2.7.4 saving in the background while Secret Service requests
        // keep changing entries crashed (SIGSEGV in a pooled thread) in 3 runs out of 4.
        try """
        [General]
        SingleInstance=false
        AutoSaveAfterEveryChange=false
        AutoSaveOnExit=true
        [FdoSecrets]
        Enabled=true
        ConfirmAccessItem=false
        ConfirmDeleteItem=false
        UnlockBeforeSearch=false
        ShowNotification=false
        """.write(to: settings.appendingPathComponent("keepassxc.ini"), atomically: true, encoding: .utf8)
        if !FileManager.default.fileExists(atPath: keePassXCDatabase.path) { try createKeePassXCDatabase() }
        try spawn(
            tools.program("keepassxc"), ["--pw-stdin", keePassXCDatabase.path], log: "keepassxc",
            stdin: Data("\(password)\n".utf8))
    }

    /// KeePassXC's own D-Bus name, with its main window's interface at `/keepassxc`.
    static let keePassXCWindow = "org.keepassxc.KeePassXC.MainWindow"

    /// Unlocks the database of a running KeePassXC with the password, without any dialog:
    /// `openDatabase` of a database that is already open, and locked, unlocks it in place.
    /// Returns once KeePassXC has answered; ``waitUntilReady()`` waits for the collection.
    func unlockKeePassXC() throws(TestKeyringError) {
        // Quoted: gdbus would read an unquoted hexadecimal password such as 12e4… as a number.
        _ = try gdbusChecked(
            [
                "--dest", Self.keePassXCWindow, "--object-path", "/keepassxc",
                "--method", "\(Self.keePassXCWindow).openDatabase", "'\(keePassXCDatabase.path)'", "'\(password)'"
            ], doing: "unlocking the KeePassXC database")
    }

    /// A new database whose root group is exposed over the Secret Service: created, exported
    /// to XML, marked (`FDO_SECRETS_EXPOSED_GROUP` in its metadata) and imported again —
    /// keepassxc-cli cannot set that mark directly.
    private func createKeePassXCDatabase() throws {
        let cli = tools.program("keepassxc-cli")
        let work = keyringDataDirectory.appendingPathComponent("keepassxc-setup")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }  // scratch only; cleanup removes it too
        let plain = work.appendingPathComponent("plain.kdbx").path
        let twice = Data("\(password)\n\(password)\n".utf8)
        func cliRun(_ arguments: [String], stdin: Data, doing what: String) throws -> String {
            let result = try Subprocess.run(
                cli, arguments, environment: daemonEnvironment, scratch: scratch, timeout: .seconds(60), stdin: stdin)
            guard result.status == 0 else {
                throw TestKeyringError(
                    .startFailed, "keepassxc-cli could not \(what) (exit \(result.status)): \(result.stderr)")
            }
            return result.stdout
        }
        _ = try cliRun(["db-create", "-q", "-p", "-t", "100", plain], stdin: twice, doing: "create a database")
        let xml = try cliRun(
            ["export", "-q", "-f", "xml", plain], stdin: Data("\(password)\n".utf8), doing: "export the database")
        guard let marked = Self.exposingRootGroup(xml) else {
            throw TestKeyringError(.startFailed, "the exported KeePassXC database has no root group UUID")
        }
        let exposed = work.appendingPathComponent("exposed.xml")
        try marked.write(to: exposed, atomically: true, encoding: .utf8)
        _ = try cliRun(
            ["import", "-q", "-p", "-t", "100", exposed.path, keePassXCDatabase.path], stdin: twice,
            doing: "import the marked database")
    }

    /// `xml` (a KeePass XML export) with its root group marked as the one exposed over the
    /// Secret Service, or `nil` when it has no root group UUID.
    static func exposingRootGroup(_ xml: String) -> String? {
        guard let root = xml.range(of: "<Root>"),
            let open = xml.range(of: "<UUID>", range: root.upperBound..<xml.endIndex),
            let close = xml.range(of: "</UUID>", range: open.upperBound..<xml.endIndex),
            let bytes = Data(base64Encoded: String(xml[open.upperBound..<close.lowerBound])), bytes.count == 16,
            let meta = xml.range(of: "</Meta>")
        else { return nil }
        let uuid = bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        let mark =
            "<CustomData><Item><Key>FDO_SECRETS_EXPOSED_GROUP</Key>"
            + "<Value>{\(uuid.uuidString.lowercased())}</Value></Item></CustomData>"
        return xml.replacingCharacters(in: meta, with: mark + "</Meta>")
    }

    private func startKWallet() throws {
        let rc = providerConfigDirectory.appendingPathComponent("kwalletrc")
        try FileManager.default.createDirectory(at: providerConfigDirectory, withIntermediateDirectories: true)
        try """
        [Wallet]
        Enabled=true
        First Use=false
        Close When Idle=false
        Prompt on Open=false
        [org.freedesktop.secrets]
        apiEnabled=true
        """.write(to: rc, atomically: true, encoding: .utf8)
        var process = try startKWalletDaemon()
        if try !collectionExists() {
            // The first start creates the wallet, which the Secret Service lists only after a restart.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            process = try startKWalletDaemon()
        }
        try unlockKWallet()
    }

    /// Starts kwalletd5, waits for its bus names and opens the wallet with a key derived from
    /// the password (what PAM hands it at login).
    private func startKWalletDaemon() throws -> Process {
        let process = try spawn(tools.program("kwalletd5"), [], log: "kwalletd5")
        let deadline = ContinuousClock.now + .seconds(15)
        while try !(hasOwner("org.kde.kwalletd5") && hasOwner("org.freedesktop.secrets")) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw TestKeyringError(.startFailed, "kwalletd5 did not start: \(log("kwalletd5"))")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        try openKWallet()
        return process
    }

    /// `pamOpen` with 56 bytes derived from the password (any 56 bytes will do; the same ones
    /// open the same wallet again).
    func openKWallet() throws(TestKeyringError) {
        var bytes: [UInt8] = []
        var seed = Array(password.utf8)
        while bytes.count < 56 {
            bytes += seed
            seed = seed.map { $0 &* 31 &+ 7 }
        }
        let array = "[" + bytes.prefix(56).map { "byte \($0)" }.joined(separator: ", ") + "]"
        _ = try gdbusChecked(
            [
                "--dest", "org.kde.kwalletd5", "--object-path", "/modules/kwalletd5",
                "--method", "org.kde.KWallet.pamOpen", "kdewallet", array, "0"
            ], doing: "opening the KDE wallet")
        Thread.sleep(forTimeInterval: 0.3)  // pamOpen opens the wallet after it answers
    }

    /// KWallet reports an opened wallet's collection locked until an `Unlock` prompt runs (no
    /// dialog: the wallet is open).
    private func unlockKWallet() throws(TestKeyringError) {
        let result = try gdbusChecked(
            [
                "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.Unlock", "['\(collection)']"
            ], doing: "unlocking the KDE wallet's collection")
        try runPrompt(in: result.stdout)
    }

    /// Runs the prompt a Secret Service answer names, if any (`Prompt.Prompt` with no window);
    /// its completion is then seen as a change of state.
    func runPrompt(in answer: String) throws(TestKeyringError) {
        guard let start = answer.range(of: "/org/freedesktop/secrets/prompt/") else { return }
        let path = String(answer[start.lowerBound...].prefix { $0 != "'" && $0 != "," && $0 != ")" })
        _ = try gdbusChecked(
            [
                "--dest", "org.freedesktop.secrets", "--object-path", path,
                "--method", "org.freedesktop.Secret.Prompt.Prompt", ""
            ], doing: "running the provider's prompt \(path)")
    }

    /// Whether the provider lists this keyring's collection.
    private func collectionExists() throws(TestKeyringError) -> Bool {
        let result = try gdbusChecked(
            [
                "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.DBus.Properties.Get", "org.freedesktop.Secret.Service", "Collections"
            ], doing: "listing the collections")
        return result.stdout.contains("'\(collection)'")
    }

    /// Whether `name` has an owner on the private bus (asked of the bus: never activates it).
    func hasOwner(_ name: String) throws(TestKeyringError) -> Bool {
        try gdbusChecked(
            [
                "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                "--method", "org.freedesktop.DBus.NameHasOwner", name
            ], doing: "asking the private bus who owns \(name)"
        ).stdout.contains("true")
    }
}
