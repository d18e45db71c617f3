import Foundation
import Keepsake
import KeepsakePostgres
import Logging
import Migrations

// keepsake-postgres-writer: one app instance of the many-instances test (ManyInstancesTests.swift)
// and of the rotation test (KeyRotationTests.swift): the URI's sealkey_ parameters give its key set.
//
//   keepsake-postgres-writer --store URI --process P --tasks T --operations K --shared S [--updates-only] [--sync]
//
// T tasks, each K operations through Vault's async API on the Person chain: even operations
// save a record of its own ("own-P-t-i", alias "P-t-i"); odd ones update one of S shared
// records ("shared-1" … "shared-S", seeded as old versions), appending the token "P-t-i" to
// its alias. With --updates-only every operation is such an update; with --sync the updates go
// through the synchronous API (`attempts: 1`: a conflict would be a failure). Each operation that
// reported success is printed as one line: `save KEY TOKEN` or `update KEY TOKEN`; a failure as
// `failed KEY CODE MESSAGE`. Exit 0 when it ran, 2 for a usage error, 1 when the store did not open.

func option(_ name: String) -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--" + name), index + 1 < arguments.count else {
        FileHandle.standardError.write(Data("keepsake-postgres-writer: --\(name) is required\n".utf8))
        exit(2)
    }
    return arguments[index + 1]
}

if ProcessInfo.processInfo.environment["KEEPSAKE_WRITER_DEBUG"] != nil {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = .debug
        return handler
    }
}

let storeURI = option("store")
let process = option("process")
guard let tasks = Int(option("tasks")), let operations = Int(option("operations")), let shared = Int(option("shared"))
else { exit(2) }
let updatesOnly = CommandLine.arguments.contains("--updates-only")
let synchronous = CommandLine.arguments.contains("--sync")

/// The blocking `update` (in an async context the async overload would be chosen).
func updateSynchronously(
    _ vault: Vault, key: String, _ change: @Sendable (PersonV3?) -> PersonV3
) throws(KeepsakeError) {
    try vault.update(Person.chain, forKey: key, attempts: 1, change)
}

/// A failure's line: the code and the message on one line.
func failure(_ key: String, _ error: any Error) -> String {
    let code = (error as? KeepsakeError)?.code.rawValue ?? "other"
    return "failed \(key) \(code) \(String(describing: error).replacingOccurrences(of: "\n", with: " "))"
}

let vault: Vault
do {
    let configuration = try PostgresConfiguration(parsing: storeURI)
    vault = Vault(store: try PostgresStore(configuration: configuration, masterKey: configuration.sealingKey))
} catch {
    FileHandle.standardError.write(Data("keepsake-postgres-writer: \(error)\n".utf8))
    exit(1)
}

let lines = await withTaskGroup(of: [String].self) { group in
    for task in 0..<tasks {
        group.addTask {
            var lines: [String] = []
            for index in 0..<operations {
                let token = "\(process)-\(task)-\(index)"
                if index % 2 == 0 && !updatesOnly {
                    let key = "own-\(token)"
                    do {
                        try await vault.save(
                            PersonV3(alias: token, email: "\(token)@example.com"), in: Person.chain, forKey: key)
                        lines.append("save \(key) \(token)")
                    } catch {
                        lines.append(failure(key, error))
                    }
                } else {
                    let key = "shared-\((index / 2 + task) % shared + 1)"
                    let change: @Sendable (PersonV3?) -> PersonV3 = { current in
                        let base = current ?? PersonV3(alias: "", email: "shared@example.com")
                        return PersonV3(alias: base.alias + "," + token, email: base.email)
                    }
                    do {
                        if synchronous {
                            try updateSynchronously(vault, key: key, change)
                        } else {
                            try await vault.update(Person.chain, forKey: key, attempts: 1, change)
                        }
                        lines.append("update \(key) \(token)")
                    } catch {
                        lines.append(failure(key, error))
                    }
                }
            }
            return lines
        }
    }
    var all: [String] = []
    for await lines in group { all += lines }
    return all
}
print(lines.joined(separator: "\n"))
