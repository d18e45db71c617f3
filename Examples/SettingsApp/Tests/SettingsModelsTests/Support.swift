import Foundation
import Keepsake
import KeepsakeTesting
import Testing

/// The moment every fixed migration context stops at: 2024-03-01T09:30:00.250Z.
let fixedNow = Date(timeIntervalSince1970: 1_709_285_400.25)

/// A new fixed context: the clock at ``fixedNow``, identifiers `id-1`, `id-2`, …
func fixedContext() -> MigrationContext {
    .fixed(now: fixedNow, deviceIdentity: nil, identifierPrefix: "id")
}

/// The install identity a V0 record gets from `id-1` (computed independently of the Swift code:
/// FNV-1a + SplitMix64 of `installID-1:id-1` and `installID-2:id-1`, version 8).
let installIDFromID1 = UUID(uuidString: "63B8799E-21DD-8D80-96C2-C5397006E13B")!

/// This package's `Tests/SettingsModelsTests/Fixtures`, found from this file's path.
let fixturesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

/// The stored bytes of fixture `name` (`Fixtures/NAME.json`), as text.
func fixtureText(_ name: String) throws -> String {
    try String(contentsOf: fixturesDirectory.appendingPathComponent(name + ".json"), encoding: .utf8)
}

/// A new, empty temporary directory, named after the test.
func temporaryDirectory(function: String = #function) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("settings-app-tests")
        .appendingPathComponent(function.filter { $0.isLetter } + "-" + UUID().uuidString.prefix(8))
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Milliseconds since 1970, to compare dates without floating-point noise.
func milliseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1000).rounded())
}

/// Bytes as UTF-8 text, `<absent>` for `nil`.
func text(_ data: Data?) -> String {
    data.map { String(decoding: $0, as: UTF8.self) } ?? "<absent>"
}

// MARK: Running the built executables

/// The built executable `name`, beside the test bundle.
func builtBinary(_ name: String) -> String {
    BuiltExecutable(named: name).path
}

typealias CommandResult = BuiltExecutable.Result

/// Runs `binary` with `arguments`, `stdin` as its input and `environment` added to this
/// process's, and waits for it.
func run(
    _ binary: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
) throws -> CommandResult {
    try BuiltExecutable(path: binary).run(arguments, stdin: stdin, environment: environment)
}

/// Parses JSON text.
func decodeJSON(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8))
}
