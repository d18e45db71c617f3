import Foundation
import Keepsake

/// The committed fixtures folder.
let fixturesURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

/// The context every fixture was generated with.
let fixtureContext = MigrationContext.fixed(
    now: Date(timeIntervalSince1970: 1_763_700_000), deviceIdentity: "fixture-device", identifierPrefix: "fixture-id")

/// 700000000.123 seconds after 2001-01-01, the start date in every TrialInfo fixture.
let fixtureStartDate = Date(timeIntervalSinceReferenceDate: 700_000_000.123)

func bytes(_ text: String) -> Data { Data(text.utf8) }

/// A new empty directory under the system's temporary directory.
func temporaryDirectory(_ function: String = #function) throws -> String {
    let base = FileManager.default.temporaryDirectory.path + "/keepsake-tests"
    try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
    let template = base + "/" + function.filter { $0.isLetter || $0.isNumber } + ".XXXXXX"
    var buffer = Array(template.utf8CString)
    guard mkdtemp(&buffer) != nil else { throw CocoaError(.fileWriteUnknown) }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The file mode bits of `path`.
func mode(of path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? Int) ?? -1
}
