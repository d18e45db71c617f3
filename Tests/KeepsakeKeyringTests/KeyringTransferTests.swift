// swift-format-ignore-file
// (The README or a DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeMemory
import KeepsakeKeyring
import KeepsakeSodium
import KeepsakeStores
import Migrations
import Testing

/// `custom-migrate` (Tests/CustomMigrate) beside `migrate`: on the sample chains
/// (`CUSTOM_MIGRATE_SAMPLE_CHAINS=1`) it is the stock command with the pause points of `copy`,
/// which the shipped `migrate` does not have.
private let pausableMigrateExecutable =
    URL(fileURLWithPath: migrateExecutable).deletingLastPathComponent().appendingPathComponent("custom-migrate").path

extension KeyringTests {
    /// Records moved between a defaults suite, the keyring and an encrypted file store, against
    /// the private keyring: the results read by `secret-tool`, an independent client.
    @Suite("Moving records into and out of the keyring")
    struct Transfer {
        let context = MigrationContext.fixed(now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")
        static let person = #"{"name":"Ada","age":"36"}"#
        static let personV3 = #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#

        /// A legacy defaults suite: an old Person, an API token as a plain JSON string, a theme.
        func legacySuite() throws -> DefaultsStore {
            let directory = PrivateKeyring.scratch.appendingPathComponent("transfer-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let suite = DefaultsStore(path: directory + "/settings.json")
            _ = try suite.commit([StoreWrite(key: "person", value: Data(Self.person.utf8)),
                                  StoreWrite(key: "apiToken", value: Data(#""s3cr3t-token""#.utf8)),
                                  StoreWrite(key: "theme", value: Data(#""dark""#.utf8))])
            return suite
        }

        /// The suite file's own keys, read as JSON by Foundation (not through Keepsake).
        func suiteKeys(_ suite: DefaultsStore) throws -> [String] {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: suite.path)))
            return try #require(object as? [String: Any]).keys.sorted()
        }

        @Test("defaults → keyring move: secret-tool reads the migrated record and the token; the suite no longer holds them")
        func defaultsToKeyring() throws {
            let suite = try legacySuite()
            let keyring = try PrivateKeyring.freshStore("move-in")
            let report = try StoreTransfer(from: suite, to: keyring, chains: SampleModels.all, context: context)
                .run(.keys(["person", "apiToken"]), options: .init(move: true, migrate: true))
            #expect(report.outcome == .completed)
            #expect(report.records.map(\.state) == [.moved, .moved])
            #expect(try PrivateKeyring.secretToolLookup(service: keyring.service, key: "person") == Self.personV3)
            #expect(try PrivateKeyring.secretToolLookup(service: keyring.service, key: "apiToken") == #""s3cr3t-token""#)
            #expect(try suiteKeys(suite) == ["theme"])
        }

        /// The README's "Moving secrets out of a plain suite" example, verbatim (ReadmeTests checks
        /// that it still is).
        func readmeMove() throws {
            let suite = try DefaultsStore(suite: "settings", app: "com.example.notes")
            let keyring = try KeyringStore.open(service: "com.example.notes")
            let transfer = StoreTransfer(from: suite, to: keyring, chains: [Person.chain.erased])
            let report = try transfer.run(.keys(["apiToken", "person"]), options: .init(move: true, migrate: true))
            if !report.succeeded {
                for record in report.records where record.error != nil {
                    print("\(record.key): \(record.state)")  // failed, reverted or inBoth: never lost
                }
            }
        }

        @Test("the README's move runs: the token and the migrated profile are in the keyring, only the theme stays in the suite")
        func readmeExample() throws {
            let config = PrivateKeyring.scratch.appendingPathComponent("readme-\(UUID().uuidString)").path
            setenv("XDG_CONFIG_HOME", config, 1)
            defer { unsetenv("XDG_CONFIG_HOME") }
            let suite = try DefaultsStore(suite: "settings", app: "com.example.notes")
            _ = try suite.commit([StoreWrite(key: "person", value: Data(Self.person.utf8)),
                                  StoreWrite(key: "apiToken", value: Data(#""tok_8f2c41""#.utf8)),
                                  StoreWrite(key: "theme", value: Data(#""dark""#.utf8))])
            let keyring = try KeyringStore(service: "com.example.notes")
            defer { for key in ["apiToken", "person"] { try? keyring.removeData(forKey: key) } }  // cleanup only
            try readmeMove()
            #expect(try PrivateKeyring.secretToolLookup(service: "com.example.notes", key: "person") == Self.personV3)
            #expect(try PrivateKeyring.secretToolLookup(service: "com.example.notes", key: "apiToken") == #""tok_8f2c41""#)
            #expect(try suiteKeys(suite) == ["theme"])
        }

        @Test("keyring → file move: every record in the encrypted store, the keyring items gone")
        func keyringToFile() throws {
            let keyring = try PrivateKeyring.freshStore("move-out")
            try PrivateKeyring.secretToolStore(label: "p", attributes: [("service", keyring.service), ("username", "person")],
                                               secret: Self.person)
            try PrivateKeyring.secretToolStore(label: "t", attributes: [("service", keyring.service), ("username", "token")],
                                               secret: "hunter2 – not JSON")
            let directory = PrivateKeyring.scratch.appendingPathComponent("file-\(UUID().uuidString)").path
            let files = try SodiumFileStore.create(directory: directory + "/store", key: .keyFile(path: directory + "/k.key"))
            let report = try StoreTransfer(from: keyring, to: files, chains: SampleModels.all, context: context)
                .run(.all, options: .init(move: true))
            #expect(report.outcome == .completed)
            #expect(report.records.map(\.key) == ["person", "token"])
            #expect(report.records.map(\.state) == [.moved, .moved])
            let reopened = try SodiumFileStore(directory: directory + "/store", key: .keyFile(path: directory + "/k.key"))
            #expect(try reopened.data(forKey: "person") == Data(Self.person.utf8))
            #expect(try reopened.data(forKey: "token") == Data("hunter2 – not JSON".utf8))
            #expect(try PrivateKeyring.secretToolSearch(service: keyring.service).isEmpty)
        }

        @Test("values a store cannot hold are refused before anything is written: text into a suite, bytes into the keyring")
        func cannotHold() throws {
            let keyring = try PrivateKeyring.freshStore("hold")
            try keyring.setData(Data("hunter2".utf8), forKey: "token")
            let suite = try legacySuite()
            let intoSuite = try StoreTransfer(from: keyring, to: suite).run(.keys(["token"]), options: .init(move: true, allowPlaintext: true))
            #expect(intoSuite.outcome == .refused)
            #expect(intoSuite.records.first?.error?.code == .valueRefused)
            #expect(intoSuite.records.first?.error?.store == suite.uri)
            #expect(try PrivateKeyring.secretToolLookup(service: keyring.service, key: "token") == "hunter2")
            #expect(try suiteKeys(suite) == ["apiToken", "person", "theme"])

            let binary = InMemoryStore(name: "bytes", contents: ["blob": Data([0x80, 0x00, 0xFF])])
            let intoKeyring = try StoreTransfer(from: binary, to: keyring).run(.all, options: .init(move: true))
            #expect(intoKeyring.outcome == .refused)
            #expect(intoKeyring.records.first?.error?.code == .valueRefused)
            #expect(intoKeyring.records.first?.error?.message.contains("the keyring holds text") == true)
            #expect(try keyring.keys() == ["token"])
        }

        @Test("a locked keyring as the destination is its typed error per record, and nothing moves")
        func lockedDestination() throws {
            let suite = try legacySuite()
            let keyring = try PrivateKeyring.freshStore("locked")
            try PrivateKeyring.whileLocked {
                let report = try StoreTransfer(from: suite, to: keyring).run(.keys(["apiToken"]), options: .init(move: true))
                #expect(report.outcome == .refused)
                #expect(report.records.first?.error?.code == .locked)
            }
            #expect(try suiteKeys(suite) == ["apiToken", "person", "theme"])
            #expect(try keyring.keys().isEmpty)
        }

        @Test("migrate copy --move into the keyring: table, --json and the exit code; a key that exists is refused with 83")
        func cliMove() throws {
            let suite = try legacySuite()
            let service = PrivateKeyring.uniqueService("cli-copy")
            let json = try runMigrate(["copy", "--from", "defaults:" + suite.path, "--to", "keyring:" + service,
                                       "person", "apiToken", "--move", "--migrate", "--json"])
            #expect(json.status == 0, "\(json.stderr)")
            let object = try jsonObject(json.stdout)
            #expect(object["outcome"] as? String == "completed")
            let records = try #require(object["records"] as? [[String: Any]])
            #expect(records.map { $0["state"] as? String } == ["moved", "moved"])
            #expect(records.map { $0["writtenVersion"] as? Int } == [3, nil])
            #expect(try PrivateKeyring.secretToolLookup(service: service, key: "person") == Self.personV3)
            #expect(try suiteKeys(suite) == ["theme"])

            try suite.setData(Data(#""new-token""#.utf8), forKey: "apiToken")
            let refused = try runMigrate(["copy", "--from", "defaults:" + suite.path, "--to", "keyring:" + service,
                                          "apiToken", "--move"])
            #expect(refused.status == 83)
            #expect(refused.stdout.contains("exists"))
            #expect(refused.stdout.contains("Nothing was written."))
            #expect(try PrivateKeyring.secretToolLookup(service: service, key: "apiToken") == #""s3cr3t-token""#)
            #expect(try suiteKeys(suite) == ["apiToken", "theme"])
        }

        @Test("migrate copy from the keyring to a defaults suite is refused without --allow-plaintext; nothing moves")
        func cliPlaintextRefused() throws {
            let keyring = try PrivateKeyring.freshStore("plaintext")
            try keyring.setData(Data(#""k3yring-token""#.utf8), forKey: "apiToken")
            let suite = try legacySuite()
            let before = try suite.allData().map(\.data)
            for extra in [[String](), ["--move"], ["--all", "--move", "--dry-run"]] {
                let refused = try runMigrate(
                    ["copy", "--from", "keyring:" + keyring.service, "--to", "defaults:" + suite.path]
                        + (extra.contains("--all") ? [] : ["apiToken"]) + extra)
                #expect(refused.status == 64, "\(refused.stdout)\(refused.stderr)")
                #expect(refused.stderr.contains("keeps its records encrypted and defaults:"))
                #expect(refused.stderr.contains("in plain text"))
                #expect(try suite.allData().map(\.data) == before)
                #expect(try PrivateKeyring.secretToolLookup(service: keyring.service, key: "apiToken") == #""k3yring-token""#)
            }
            let allowed = try runMigrate(
                ["copy", "--from", "keyring:" + keyring.service, "--to", "defaults:" + suite.path, "apiToken",
                 "--overwrite", "--allow-plaintext"])
            #expect(allowed.status == 0, "\(allowed.stderr)")
            #expect(try suite.data(forKey: "apiToken") == Data(#""k3yring-token""#.utf8))
        }

        // MARK: Killed between steps

        /// Runs `migrate copy … --move`, paused by the test hook after `step`, kills it with
        /// SIGKILL there, and returns once it is dead.
        func killedCopy(_ arguments: [String], after step: String) throws {
            let directory = PrivateKeyring.scratch.appendingPathComponent("kill-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let errURL = directory.appendingPathComponent("stderr")
            try Data().write(to: errURL)
            let err = try FileHandle(forWritingTo: errURL)
            defer { try? err.close() }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: pausableMigrateExecutable)
            process.arguments = arguments
            var environment = ProcessInfo.processInfo.environment
            environment["CUSTOM_MIGRATE_SAMPLE_CHAINS"] = "1"
            environment["CUSTOM_MIGRATE_COPY_PAUSE"] = step
            process.environment = environment
            process.standardError = err
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            try PrivateKeyring.register(process)
            let deadline = Date().addingTimeInterval(30)
            var paused = false
            while Date() < deadline, process.isRunning {
                if String(decoding: try Data(contentsOf: errURL), as: UTF8.self).contains("paused after \(step)") {
                    paused = true
                    break
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let printed = String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
            try #require(paused, "migrate copy never paused after \(step): \(printed)")
            #expect(process.terminationReason == .uncaughtSignal)
        }

        /// `migrate ARGUMENTS` paused by the test hook after `step`: returns once it has paused;
        /// `resume()` lets it go on, and `finish()` waits for it and returns its status and output.
        final class PausedCopy {
            let process = Process()
            let directory: URL
            var resumeFile: URL { directory.appendingPathComponent("resume") }

            init(_ arguments: [String], after step: String) throws {
                directory = PrivateKeyring.scratch.appendingPathComponent("paused-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let out = directory.appendingPathComponent("stdout"), err = directory.appendingPathComponent("stderr")
                try Data().write(to: out)
                try Data().write(to: err)
                process.executableURL = URL(fileURLWithPath: pausableMigrateExecutable)
                process.arguments = arguments
                var environment = ProcessInfo.processInfo.environment
                environment["CUSTOM_MIGRATE_SAMPLE_CHAINS"] = "1"
                environment["CUSTOM_MIGRATE_COPY_PAUSE"] = step
                environment["CUSTOM_MIGRATE_COPY_RESUME"] = directory.appendingPathComponent("resume").path
                process.environment = environment
                process.standardOutput = try FileHandle(forWritingTo: out)
                process.standardError = try FileHandle(forWritingTo: err)
                try process.run()
                try PrivateKeyring.register(process)
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline, process.isRunning,
                      !String(decoding: try Data(contentsOf: err), as: UTF8.self).contains("paused after \(step)") {
                    Thread.sleep(forTimeInterval: 0.02)
                }
                let printed = String(decoding: try Data(contentsOf: err), as: UTF8.self)
                try #require(printed.contains("paused after \(step)"), "migrate never paused after \(step): \(printed)")
            }

            func resume() throws { try Data().write(to: resumeFile) }

            func finish() throws -> Shell.Result {
                process.waitUntilExit()
                return Shell.Result(
                    status: process.terminationStatus,
                    stdout: String(decoding: try Data(contentsOf: directory.appendingPathComponent("stdout")), as: UTF8.self),
                    stderr: String(decoding: try Data(contentsOf: directory.appendingPathComponent("stderr")), as: UTF8.self))
            }
        }

        @Test("the keyring locked between verification and removal: the move exits 86, every record in both stores")
        func sourceLockedBeforeRemoval() throws {
            let service = PrivateKeyring.uniqueService("lock-before-removal")
            let keyring = try KeyringStore(service: service)
            try keyring.setData(Data(#""a""#.utf8), forKey: "first")
            try keyring.setData(Data(#""b""#.utf8), forKey: "second")
            let suite = try legacySuite()
            let copy = try PausedCopy(["copy", "--from", "keyring:" + service, "--to", "defaults:" + suite.path,
                                       "--all", "--move", "--json", "--allow-plaintext"], after: "verified")
            var result: Shell.Result?
            try PrivateKeyring.whileLocked {
                try copy.resume()
                result = try copy.finish()
            }
            let finished = try #require(result)
            #expect(finished.status == 86, "\(finished.stdout)\(finished.stderr)")
            let object = try jsonObject(finished.stdout)
            #expect(object["outcome"] as? String == "incomplete")
            let records = try #require(object["records"] as? [[String: Any]])
            #expect(records.map { $0["state"] as? String } == ["inBoth", "inBoth"])
            #expect(records.map { ($0["error"] as? [String: Any])?["code"] as? String } == ["locked", "locked"])
            #expect(object["exitCode"] as? Int == 86)
            #expect(try keyring.data(forKey: "first") == Data(#""a""#.utf8))
            #expect(try keyring.data(forKey: "second") == Data(#""b""#.utf8))
            #expect(try suite.data(forKey: "first") == Data(#""a""#.utf8))
            #expect(try suite.data(forKey: "second") == Data(#""b""#.utf8))
        }

        @Test("the keyring item changed by another client between write and read-back: exits 85, the keyring restored, the suite untouched")
        func readBackDiffersInKeyring() throws {
            let suite = try legacySuite()
            let before = try suite.allData().map(\.data)
            let service = PrivateKeyring.uniqueService("read-back")
            let keyring = try KeyringStore(service: service)
            let copy = try PausedCopy(["copy", "--from", "defaults:" + suite.path, "--to", "keyring:" + service,
                                       "apiToken", "--move"], after: "written")
            #expect(try keyring.data(forKey: "apiToken") == Data(#""s3cr3t-token""#.utf8), "written before the pause")
            try keyring.setData(Data("tampered".utf8), forKey: "apiToken")
            try copy.resume()
            let finished = try copy.finish()
            #expect(finished.status == 85, "\(finished.stdout)\(finished.stderr)")
            #expect(finished.stdout.contains("reads back as other bytes"))
            #expect(finished.stdout.contains("The destination was restored"))
            #expect(try PrivateKeyring.secretToolLookup(service: service, key: "apiToken") == nil)
            #expect(try suite.allData().map(\.data) == before)
        }

        @Test("migrate copy --move from the keyring killed at moments spread over its run: never a record in neither store", arguments: [0, 40, 80, 120, 160, 240, 320, 480])
        func killedAtRandomMoments(milliseconds: Int) throws {
            let service = PrivateKeyring.uniqueService("kill-at-\(milliseconds)")
            let keyring = try KeyringStore(service: service)
            let before = Dictionary(uniqueKeysWithValues: (0..<30).map { ("key\($0)", Data("\"value \($0)\"".utf8)) })
            #expect(try keyring.commit(before.map { StoreWrite(key: $0.key, value: $0.value) }).allSatisfy { $0 == .applied })
            let directory = PrivateKeyring.scratch.appendingPathComponent("kill-at-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let suite = DefaultsStore(path: directory + "/suite.json")
            let arguments = ["copy", "--from", "keyring:" + service, "--to", "defaults:" + suite.path, "--all", "--move",
                             "--allow-plaintext"]

            let process = Process()
            process.executableURL = URL(fileURLWithPath: migrateExecutable)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            try PrivateKeyring.register(process)
            Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()

            let inKeyring = Dictionary(uniqueKeysWithValues: try keyring.allData().map { ($0.key, $0.data) })
            let inSuite = Dictionary(uniqueKeysWithValues: try suite.allData().map { ($0.key, $0.data) })
            for (key, bytes) in before {
                #expect(inKeyring[key] == bytes || inSuite[key] == bytes, "\(key) is in neither store")
            }
            #expect(Set(inKeyring.keys).union(inSuite.keys) == Set(before.keys), "nothing else appeared")
            let rerun = try runMigrate(arguments)
            #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
            #expect(try keyring.keys().isEmpty)
            #expect(Dictionary(uniqueKeysWithValues: try suite.allData().map { ($0.key, $0.data) }) == before)
        }

        @Test("migrate copy --move killed after each step: every record is in the suite or the keyring or both; a rerun finishes", arguments: ["prepared", "written", "verified"])
        func killedBetweenSteps(step: String) throws {
            let suite = try legacySuite()
            let service = PrivateKeyring.uniqueService("kill-\(step)")
            let arguments = ["copy", "--from", "defaults:" + suite.path, "--to", "keyring:" + service, "--all", "--move"]
            let before = Dictionary(uniqueKeysWithValues: try suite.allData().map { ($0.key, $0.data) })
            try killedCopy(arguments, after: step)

            let keyring = try KeyringStore(service: service)
            let inSuite = Dictionary(uniqueKeysWithValues: try suite.allData().map { ($0.key, $0.data) })
            let inKeyring = Dictionary(uniqueKeysWithValues: try keyring.allData().map { ($0.key, $0.data) })
            for (key, bytes) in before {
                #expect(inSuite[key] == bytes || inKeyring[key] == bytes, "\(key) is in neither store after a kill \(step)")
            }
            // Up to `verified` the source was not touched.
            #expect(inSuite == before)
            #expect(inKeyring.count == (step == "prepared" ? 0 : 3))

            let rerun = try runMigrate(arguments + ["--json"])
            #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
            #expect(try suite.keys().isEmpty)
            for (key, bytes) in before {
                #expect(try PrivateKeyring.secretToolLookup(service: service, key: key) == String(decoding: bytes, as: UTF8.self))
            }
        }
    }
}
