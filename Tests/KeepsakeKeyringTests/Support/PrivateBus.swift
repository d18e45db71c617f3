import Foundation
import Testing

/// A second, private D-Bus bus with no service files: nothing can be activated on it, so it
/// has no Secret Service unless a test starts one.
final class PrivateBus {
    let address: String
    private let daemon: Process
    private let directory: URL
    private var provider: Process?

    init() throws {
        directory = PrivateKeyring.scratch.appendingPathComponent("bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let config = directory.appendingPathComponent("bus.conf")
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:dir=\(directory.path)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(to: config, atomically: false, encoding: .utf8)
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        daemon.arguments = ["dbus-daemon", "--config-file=\(config.path)", "--nofork", "--print-address=1"]
        let output = Pipe()
        daemon.standardOutput = output
        daemon.standardError = FileHandle.nullDevice
        daemon.standardInput = FileHandle.nullDevice
        try daemon.run()
        do {
            try PrivateKeyring.register(daemon)
        } catch {
            kill(daemon.processIdentifier, SIGKILL)
            throw error
        }
        var text = Data()
        while !text.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += chunk
        }
        address = String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if address.isEmpty {
            kill(daemon.processIdentifier, SIGKILL)
            throw PrivateBusError("dbus-daemon printed no address")
        }
    }

    /// Starts a gnome-keyring-daemon that owns `org.freedesktop.secrets` on this bus, with its
    /// own empty data directory, then stops it with SIGSTOP: the name stays owned, messages
    /// to it are queued, and no reply ever comes — a hung provider.
    func startHungProvider() throws {
        let home = directory.appendingPathComponent("provider")
        let run = home.appendingPathComponent("run"), data = home.appendingPathComponent("data")
        for folder in [run, data] {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gnome-keyring-daemon", "--foreground", "--components=secrets"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        environment["XDG_RUNTIME_DIR"] = run.path
        environment["XDG_DATA_HOME"] = data.path
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        provider = process
        try PrivateKeyring.register(process)
        let start = ContinuousClock.now
        while !(try ownsSecretsName()) {
            guard ContinuousClock.now - start < .seconds(15), process.isRunning else {
                throw PrivateBusError("gnome-keyring-daemon did not take org.freedesktop.secrets on the private bus")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        kill(process.processIdentifier, SIGSTOP)
    }

    private func ownsSecretsName() throws -> Bool {
        let result = try Shell.run(
            [
                "gdbus", "call", "--address", address, "--timeout", "5", "--dest", "org.freedesktop.DBus",
                "--object-path", "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.NameHasOwner",
                "org.freedesktop.secrets"
            ])
        return result.stdout.contains("true")
    }

    /// Stops the provider and the bus (both started by this object) and removes the directory.
    ///
    /// SIGKILL, not SIGTERM: processes started from the test's threads inherit their blocked
    /// signal mask, SIGTERM included.
    func stop() {
        for process in [provider, daemon].compactMap({ $0 }) where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)  // scratch space only; the harness removes it anyway
    }
}

struct PrivateBusError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
