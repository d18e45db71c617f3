import Foundation
import Testing

/// The built `migrate` binary, beside the test bundle (or `$MIGRATE_BINARY`).
let migrateBinary: String = {
    if let explicit = ProcessInfo.processInfo.environment["MIGRATE_BINARY"] { return explicit }
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
    // On Linux the test runner is `<products>/KeepsakePackageTests.xctest`; look there and one level up.
    for _ in 0..<3 {
        let candidate = directory.appendingPathComponent("migrate").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory.deleteLastPathComponent()
    }
    return "migrate-binary-not-found"
}()

struct CommandResult {
    let stdout: String
    let stderr: String
    let status: Int32
}

/// Runs `migrate` with `arguments`, feeding `stdin`, and waits for it.
func migrate(_ arguments: [String], stdin: String? = nil) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: migrateBinary)
    process.arguments = arguments
    let output = Pipe(), errors = Pipe(), input = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
                         status: process.terminationStatus)
}

/// A temporary suite file seeded with `contents` (written as-is), and its `--store` argument.
struct Suite {
    let directory: String
    var path: String { directory + "/suite.json" }
    var store: String { "defaults:" + path }

    init(_ contents: String? = nil, function: String = #function) throws {
        let base = FileManager.default.temporaryDirectory.path + "/keepsake-cli-tests"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        directory = base + "/" + function.filter { $0.isLetter } + "-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let contents { try Data(contents.utf8).write(to: URL(fileURLWithPath: path)) }
    }

    var contents: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "<missing>" }

    /// `migrate COMMAND --store this-suite --device-id test-device ARGS...`
    func run(_ command: String, _ arguments: [String] = [], stdin: String? = nil) throws -> CommandResult {
        try migrate([command, "--store", store, "--device-id", "test-device"] + arguments, stdin: stdin)
    }
}

/// A suite as an app of each era left it: Person V0 as a JSON string, TrialInfo V0 with a
/// numeric date, and a plain value.
let legacySuite = #"""
{
  "person": "{\"name\":\"Ada\",\"age\":\"36\"}",
  "theme": "dark",
  "trialInfo": {"version":0,"startDate":700000000}
}
"""#

func decodeJSON(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8))
}
