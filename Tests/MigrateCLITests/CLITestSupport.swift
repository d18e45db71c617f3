import Foundation
import KeepsakeTesting
import Testing

/// The built executable `name`, beside the test bundle (or at `$<variable>` when that is set).
func builtBinary(_ name: String, overriddenBy variable: String) -> String {
    BuiltExecutable(named: name, overriddenBy: variable).path
}

/// The built `migrate` binary, beside the test bundle (or `$MIGRATE_BINARY`).
let migrateBinary = builtBinary("migrate", overriddenBy: "MIGRATE_BINARY")

/// The built `custom-migrate` binary (KeepsakeCLI on the Note chain, `Tests/CustomMigrate`),
/// beside the test bundle (or `$CUSTOM_MIGRATE_BINARY`).
let customMigrateBinary = builtBinary("custom-migrate", overriddenBy: "CUSTOM_MIGRATE_BINARY")

struct CommandResult {
    let stdout: String
    let stderr: String
    let status: Int32
}

/// Runs `migrate` with `arguments`, feeding `stdin`, and waits for it.
func migrate(_ arguments: [String], stdin: String? = nil) throws -> CommandResult {
    try runBinary(migrateBinary, arguments, stdin: stdin)
}

/// Runs `custom-migrate` with `arguments`, feeding `stdin`, and waits for it.
func customMigrate(
    _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
) throws -> CommandResult {
    try runBinary(customMigrateBinary, arguments, stdin: stdin, environment: environment)
}

/// Runs `binary` with `arguments`, feeding `stdin`, with `environment` added to this process's
/// environment, and waits for it.
func runBinary(
    _ binary: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
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
    return CommandResult(
        stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
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

    /// `migrate COMMAND --store this-suite ARGS...`, with `--device-id test-device` for the
    /// commands that take it (or another `binary`, such as `customMigrateBinary`).
    func run(
        _ command: String, _ arguments: [String] = [], stdin: String? = nil, binary: String = migrateBinary
    ) throws -> CommandResult {
        let device = ["status", "plan", "run", "show"].contains(command) ? ["--device-id", "test-device"] : []
        return try runBinary(binary, [command, "--store", store] + device + arguments, stdin: stdin)
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

/// The `records` of the one object `status`, `plan` and `run --json` print.
func decodeRecords(_ text: String) throws -> [[String: Any]] {
    let object = try #require(try decodeJSON(text) as? [String: Any], "not one JSON object: \(text)")
    return try #require(object["records"] as? [[String: Any]], "no records array: \(text)")
}

/// The `error` object of a record or of a failure's JSON.
func errorObject(_ value: Any?) throws -> [String: Any] {
    try #require(value as? [String: Any], "no error object")
}

/// Makes a FIFO at `path` (mode 0600). Five seconds later a writer opens it and closes it at
/// once, so that a command wrongly blocked reading it is released — and then fails the test's
/// expectations — instead of hanging the test run.
func makeFIFO(_ path: String) throws {
    guard mkfifo(path, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown) }
    Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 5)
        let fd = open(path, O_WRONLY | O_NONBLOCK)  // ENXIO when nobody reads: nothing to release
        if fd >= 0 { close(fd) }
    }
}
