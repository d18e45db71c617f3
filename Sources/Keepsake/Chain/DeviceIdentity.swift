internal import FileKit
import Foundation

/// This device's identity as migration steps record it (TrialInfo's `deviceId`).
///
/// The default identity is app-specific: HMAC-SHA-256 of `/etc/machine-id`, keyed with the app's
/// identifier, as 32 lowercase hex digits. Two apps on one machine get unrelated identities, the
/// same app gets the same one after a reinstall, and the machine id itself is never stored.
public enum DeviceIdentity {
    /// The app-specific identity of this machine.
    ///
    /// - Parameters:
    ///   - appID: The app's identifier, e.g. `"com.example.notes"`.
    ///   - machineIDPath: Where the machine id is read (`/etc/machine-id`), injectable for tests.
    /// - Throws: ``KeepsakeError/Code/unavailable`` when the machine id cannot be read or is empty.
    public static func derived(appID: String, machineIDPath: String = "/etc/machine-id") throws(KeepsakeError) -> String
    {
        let contents: [UInt8]?
        do throws(SystemFailure) {
            contents = try Syscall.readFile(machineIDPath)
        } catch {
            throw KeepsakeError(.unavailable, "cannot read the machine id at \(machineIDPath)", cause: error.cause)
        }
        let machineID = String(decoding: contents ?? [], as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !machineID.isEmpty else {
            throw KeepsakeError(.unavailable, "no machine id at \(machineIDPath); pass a device identity explicitly")
        }
        return derived(appID: appID, machineID: machineID)
    }

    /// The app-specific identity for a given machine id (what ``derived(appID:machineIDPath:)`` computes).
    public static func derived(appID: String, machineID: String) -> String {
        let mac = HMACSHA256.authenticationCode(
            key: Array(appID.utf8), message: Array("keepsake-device-id:".utf8) + Array(machineID.utf8))
        return mac.prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
