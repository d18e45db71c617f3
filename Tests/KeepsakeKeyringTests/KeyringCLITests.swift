import Foundation
import Testing

/// The built `migrate` binary beside this test bundle.
let migrateExecutable: String = {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        directory = URL(fileURLWithPath: resolved).deletingLastPathComponent()
    }
    for _ in 0..<3 {
        let candidate = directory.appendingPathComponent("migrate").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory.deleteLastPathComponent()
    }
    return "migrate-binary-not-found"
}()

func runMigrate(_ arguments: [String]) throws -> Shell.Result {
    try Shell.run([migrateExecutable] + arguments)
}

func jsonObject(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
}

extension KeyringTests {
    @Suite("migrate CLI on keyring: stores")
    struct KeyringCLITests {
        let service = PrivateKeyring.uniqueService("cli")
        var store: String { "keyring:" + service }

        @Test("old Person and TrialInfo records in the keyring migrate end to end, readable by secret-tool")
        func migrateEndToEnd() throws {
            try PrivateKeyring.secretToolStore(
                label: "p", attributes: [("service", service), ("username", "person")],
                secret: #"{"name":"Ada","age":"36"}"#)
            try PrivateKeyring.secretToolStore(
                label: "t", attributes: [("service", service), ("username", "trialInfo")],
                secret: #"{"version":0,"startDate":700000000}"#)
            let status = try runMigrate(["status", "--store", store])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("2 outdated"))
            let run = try runMigrate(["run", "--store", store, "--device-id", "dev"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("2 migrated"))
            #expect(
                try PrivateKeyring.secretToolLookup(service: service, key: "person")
                    == #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#)
            #expect(
                try PrivateKeyring.secretToolLookup(service: service, key: "trialInfo")
                    == #"{"data":{"deviceId":"dev","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
            )
            let again = try runMigrate(["run", "--store", store, "--json"])
            #expect(again.stdout.components(separatedBy: #""state" : "current""#).count == 3)
        }

        @Test("doctor reports the keyring usable here, and locked while it is locked")
        func doctor() throws {
            let usable = try runMigrate(["doctor", "--json"])
            #expect(usable.status == 0, "\(usable.stdout)")
            try PrivateKeyring.whileLocked {
                let locked = try runMigrate(["doctor"])
                #expect(locked.status == 69)
                #expect(locked.stdout.contains("keyring:   no      locked"))
                let status = try runMigrate(["status", "--store", store])
                #expect(status.status == 70)
                #expect(status.stderr.contains(store))
            }
        }

        @Test("trial status and start through the CLI with --now: start, reinstall, expiry, clock back, locked")
        func trialThroughCLI() throws {
            func trial(_ command: String, _ now: String) throws -> (Int32, [String: Any]) {
                let result = try runMigrate([
                    "trial", command, "--store", store, "--now", now, "--json", "--device-id", "d"
                ])
                return (result.status, try jsonObject(result.stdout))
            }
            var (code, json) = try trial("status", "2026-01-01T09:00:00Z")
            #expect(code == 0)
            #expect(json["state"] as? String == "notStarted")
            (code, json) = try trial("start", "2026-01-01T09:00:00Z")
            #expect(code == 0)
            #expect(json["state"] as? String == "active")
            #expect(json["startDate"] as? String == "2026-01-01T09:00:00.000Z")
            #expect(json["daysLeft"] as? Int == 14)
            #expect(json["expiresAt"] as? String == "2026-01-15T09:00:00.000Z")

            try PrivateKeyring.restartDaemon()  // the "machine" restarts; the app is reinstalled
            (code, json) = try trial("start", "2026-01-04T10:00:00Z")
            #expect(code == 0)
            #expect(json["startDate"] as? String == "2026-01-01T09:00:00.000Z")
            #expect(json["daysLeft"] as? Int == 10)

            (code, json) = try trial("status", "2026-01-20T00:00:00Z")
            #expect(code == 80)
            #expect(json["state"] as? String == "expired")
            #expect(json["daysLeft"] as? Int == 0)

            (code, json) = try trial("status", "2026-01-10T00:00:00Z")
            #expect(code == 81)
            #expect(json["state"] as? String == "clockMovedBack")

            try PrivateKeyring.whileLocked {
                let (lockedCode, lockedJSON) = try trial("status", "2026-01-20T00:00:00Z")
                #expect(lockedCode == 82)
                #expect(lockedJSON["state"] as? String == "unknown")
                let error = try #require(lockedJSON["error"] as? [String: Any])
                #expect(error["code"] as? String == "locked")
                #expect(error["exitCode"] as? Int == 70)
                #expect(error["store"] as? String == store)
                #expect(lockedJSON["exitCode"] as? Int == 82)
            }
        }
    }
}
