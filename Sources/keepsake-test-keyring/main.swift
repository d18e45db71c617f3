import Foundation
import KeepsakeTestKeyring

#if canImport(Glibc)
import Glibc
#endif

// keepsake-test-keyring: runs a command inside a private, throwaway keyring — never the user's.
//
//   keepsake-test-keyring [--provider PROVIDER] [--keep-home] [--] COMMAND [ARGUMENT…]
//   keepsake-test-keyring [--provider PROVIDER] --check
//   keepsake-test-keyring [--provider PROVIDER] --install
//   keepsake-test-keyring -- .build/debug/MyApp
//   keepsake-test-keyring --keep-home -- swift test
//   keepsake-test-keyring --provider keepassxc --keep-home -- swift test --filter KeyringTests
//
// Starts a D-Bus session bus of its own and a Secret Service provider on it in a temporary
// directory — gnome-keyring-daemon (login collection unlocked with a random password) unless
// PROVIDER (or KEEPSAKE_TEST_KEYRING_PROVIDER) says keepassxc or kwallet — runs COMMAND with
//   DBUS_SESSION_BUS_ADDRESS         the private bus
//   XDG_RUNTIME_DIR                  a private runtime directory (0700)
//   HOME, XDG_{CONFIG,DATA,CACHE,STATE}_HOME
//                                    throwaway directories (<ROOT>/home), so that an app run
//                                    inside writes nothing into the user's own home; with
//                                    --keep-home, the caller's, for a build tool that keeps its
//                                    caches there (`swift test`): the test process itself still
//                                    moves to the throwaway ones when TestKeyring.shared()
//                                    attaches, and ReinstallSimulator wipes them
//   KEEPSAKE_TEST_KEYRING=1 and KEEPSAKE_TEST_KEYRING_{ROOT,BUS,PASSWORD,DIR,PROVIDER}
//                                    what TestKeyring.shared() attaches to, to lock, unlock and
//                                    restart the daemon
// and DISPLAY, WAYLAND_DISPLAY, GNOME_KEYRING_CONTROL and SSH_AUTH_SOCK removed; then stops
// the daemon and the bus (and any process a test registered), removes the directory, and exits
// with COMMAND's status. Needs dbus-daemon, gdbus and the provider; on Debian:
//   apt-get install -y --no-install-recommends dbus gnome-keyring libglib2.0-bin
//   (KeePassXC: keepassxc; KWallet: libkf5wallet-bin libqca-qt5-2-plugins)
//
// --check starts nothing: it says whether PROVIDER could be started here (exit 0), or prints why
// not, with the Debian packages to install (exit 1). --install is --check that first installs
// those packages with apt-get when the provider cannot start (as root, or through sudo), for CI.
//
// Exit status: COMMAND's (128 + N when signal N ended it); 125 when the private keyring could
// not be started (COMMAND did not run); 127 when COMMAND was not found; 2 for a usage error.

let usage = """
    usage: keepsake-test-keyring [--provider gnome-keyring|keepassxc|kwallet] [--keep-home] [--] COMMAND [ARGUMENT…]
           keepsake-test-keyring [--provider gnome-keyring|keepassxc|kwallet] --check | --install
    Runs COMMAND inside a private D-Bus session with a throwaway Secret Service provider
    (gnome-keyring unless --provider or KEEPSAKE_TEST_KEYRING_PROVIDER says otherwise), never the
    user's keyring, then cleans up and exits with COMMAND's status (125: the keyring did not start).
    COMMAND gets a throwaway HOME and XDG_{CONFIG,DATA,CACHE,STATE}_HOME, removed afterwards.
    --keep-home keeps the caller's instead: for a build tool with caches there (`swift test`).
    --check starts nothing: exit 0 when the provider could start here, else 1 with the reason.
    --install: the same, after installing the provider's Debian packages with apt-get when it cannot.
    """

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("keepsake-test-keyring: \(message)\n".utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "-h" || arguments.first == "--help" {
    print(usage)
    exit(0)
}
var providerName = ProcessInfo.processInfo.environment[TestKeyring.Variable.provider] ?? ""
var keepHome = false
while let option = arguments.first, option == "--provider" || option == "--keep-home" {
    if option == "--keep-home" {
        keepHome = true
        arguments.removeFirst()
        continue
    }
    guard arguments.count >= 2 else { fail("--provider needs a name\n\(usage)", status: 2) }
    providerName = arguments[1]
    arguments.removeFirst(2)
}
let provider: TestKeyring.Provider
if providerName.isEmpty {
    provider = .gnomeKeyring
} else if let named = TestKeyring.Provider(name: providerName) {
    provider = named
} else {
    let names = TestKeyring.Provider.allCases.map(\.rawValue).joined(separator: ", ")
    fail("unknown provider \(providerName) (one of \(names))", status: 2)
}
/// Why `provider` cannot start here, or `nil`. The runner starts a bus of its own: only the tools
/// matter, not a session bus around it.
func unavailableReason() -> String? {
    var environment = ProcessInfo.processInfo.environment
    for name in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", TestKeyring.Variable.inside] { environment[name] = nil }
    environment[TestKeyring.Variable.provider] = provider.rawValue
    return TestKeyring.unavailableReason(environment: environment)
}

/// Runs `apt-get` with `arguments` (through sudo unless root), quietly; its last lines when it fails.
func aptGet(_ arguments: [String]) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = (getuid() == 0 ? [] : ["sudo"]) + ["apt-get"] + arguments
    var environment = ProcessInfo.processInfo.environment
    environment["DEBIAN_FRONTEND"] = "noninteractive"
    process.environment = environment
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    do {
        try process.run()
    } catch {
        return "could not run apt-get: \(error)"
    }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationReason == .exit, process.terminationStatus == 0 else {
        return text.split(separator: "\n").suffix(2).joined(separator: " ")
    }
    return nil
}

if arguments == ["--check"] || arguments == ["--install"] {
    guard var reason = unavailableReason() else { exit(0) }
    if arguments == ["--install"] {
        let install =
            ["install", "-y", "-qq", "--no-install-recommends", "dbus", "libglib2.0-bin"] + provider.debianPackages
        // A fresh machine's package lists may be missing or stale: update once and try again.
        let failure = aptGet(install).flatMap { _ in aptGet(["update", "-qq"]) ?? aptGet(install) }
        guard let after = unavailableReason() else { exit(0) }
        reason =
            failure.map { "apt-get install \(provider.debianPackages.joined(separator: " ")) failed: \($0); " } ?? ""
        reason += after
    }
    print(reason)
    exit(1)
}
if arguments.first == "--" { arguments.removeFirst() }
guard let command = arguments.first else { fail("no command given\n\(usage)", status: 2) }
if command.hasPrefix("-") { fail("unknown option \(command)\n\(usage)", status: 2) }

let keyring: TestKeyring
do {
    keyring = try TestKeyring.start(provider: provider)
} catch {
    fail(error.message, status: 125)
}

var environment = keyring.childEnvironment(homeDirectories: !keepHome)
if !keepHome {
    // HOME too: an app that looks for ~/.config itself, or a tool that writes dotfiles.
    let home = keyring.root.appendingPathComponent("home")
    do {
        for directory in [home] + keyring.home.all {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
    } catch {
        keyring.stop()
        fail("could not create the throwaway home \(home.path): \(error)", status: 125)
    }
    environment["HOME"] = home.path
}
var executable = command
if !command.contains("/") {
    guard
        let found = (environment["PATH"] ?? "").split(separator: ":").map({ "\($0)/\(command)" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    else {
        keyring.stop()
        fail("\(command): command not found", status: 127)
    }
    executable = found
}

/// The command's pid, for the signal handlers (0 before it starts).
nonisolated(unsafe) var commandPID: Int32 = 0
// SIGTERM or SIGHUP to this process goes on to the command, and the cleanup still runs; SIGINT
// from a terminal reaches the command by itself (same process group). Handlers, not SIG_IGN:
// an ignored signal would stay ignored in the command.
for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
    signal(signalNumber) { received in
        if received != SIGINT && commandPID > 0 { kill(commandPID, received) }
    }
}

let process = Process()
process.executableURL = URL(fileURLWithPath: executable)
process.arguments = Array(arguments.dropFirst())
process.environment = environment
do {
    try process.run()
} catch {
    keyring.stop()
    fail("could not run \(command): \(error)", status: 126)
}
commandPID = process.processIdentifier
process.waitUntilExit()
commandPID = 0
keyring.stop()
switch process.terminationReason {
case .exit: exit(process.terminationStatus)
case .uncaughtSignal: exit(128 + process.terminationStatus)
@unknown default: exit(process.terminationStatus)
}
