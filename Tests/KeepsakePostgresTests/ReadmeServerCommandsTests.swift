import Foundation
import KeepsakeTesting
import TestSupport
import Testing

extension PostgresServerTests {
    @Suite("The README's PostgreSQL commands")
    struct ReadmeServerCommandsTests {
        /// The README's PostgreSQL commands of its "Server apps" section.
        static func readmeCommands() throws -> [[String]] {
            try ReadmeCommands.serverApps().filter { $0.contains { $0.hasPrefix("postgresql://") } }
        }

        @Test("status, run and watch from the README work verbatim on a sealed table given --master-key")
        func readmeCommandsOnSealedTable() throws {
            let commands = try Self.readmeCommands()
            let readmeURI = "postgresql://app@db.internal/myapp?table=app_records"
            let readmeKey = "file:/run/secrets/records.key"
            #expect(
                commands.map { $0.prefix(2).joined(separator: " ") } == [
                    "migrate status", "migrate run", "migrate watch", "migrate status"
                ], "\(commands)")
            #expect(commands.allSatisfy { $0.contains(readmeURI) })
            #expect(commands.last?.suffix(2) == ["--master-key", readmeKey])

            let directory =
                FileManager.default.temporaryDirectory.path + "/keepsake-readme-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
            let keyPath = directory + "/records.key"
            let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
            #expect(
                FileManager.default.createFile(
                    atPath: keyPath, contents: Data(key), attributes: [.posixPermissions: 0o600]))
            let uri = storeURI(table: newTable("readme"))
            for (name, record) in [
                ("person", #"{"name":"Ada","age":"36"}"#), ("tenant-42", #"{"name":"Bo","age":"7"}"#)
            ] {
                let put = try migrateBinary.run(
                    ["put", name, "--store", uri, "--master-key", "file:" + keyPath], stdin: record)
                #expect(put.status == 0, "\(put.stderr)")
            }
            for command in commands {
                var arguments = command.dropFirst().map {
                    $0 == readmeURI ? uri : $0 == readmeKey ? "file:" + keyPath : $0
                }
                if !arguments.contains("--master-key") { arguments += ["--master-key", "file:" + keyPath] }
                if arguments.first == "watch" { arguments += ["--count", "1", "--model", "tenant-*=Person"] }
                let result = try migrateBinary.run(arguments + ["--device-id", "d"])
                #expect(result.status == 0, "\(arguments.prefix(1)): \(result.stdout)\(result.stderr)")
                if arguments.first == "run" { #expect(result.stdout.contains("1 migrated"), "\(result.stdout)") }
                if arguments.first == "watch" {
                    #expect(
                        result.stdout.contains(#""key":"tenant-42""#) && result.stdout.contains(#""state":"outdated""#))
                }
            }
        }
    }
}
