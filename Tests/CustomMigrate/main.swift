import Foundation
import Keepsake
import KeepsakeCLI
import KeepsakeSodium
import Logging
import Migrations

#if DEBUG
@_spi(Testing) import KeepsakeCLI
#endif

// A `migrate` for an app of its own: one small chain, Note, defined here and nowhere else.
// MigrateCLITests runs this binary to check that KeepsakeCLI works with chains it never saw.

/// The first Note: `{"text"}`.
struct NoteV0: ModelVersion {
    static let version = 0
    let text: String
}

/// Notes can be pinned: `{"text", "pinned"}`; older notes are not.
struct NoteV1: ModelVersion {
    typealias Predecessor = NoteV0
    static let version = 1
    let text: String
    let pinned: Bool

    init(migrating previous: NoteV0, context: MigrationContext) {
        text = previous.text
        pinned = false
    }
}

enum Note {
    static let chain = ModelChain<NoteV1>(name: "Note", defaultKeys: ["note"])
}

// Test hooks: configure the chain twice, to check that a duplicate name is refused; or no
// chain at all, to check what an empty list prints; or the stock `migrate`'s sample chains
// (Person, TrialInfo), for the tests that stop a stock command between two steps (below).
let environment = ProcessInfo.processInfo.environment
let duplicate = environment["CUSTOM_MIGRATE_DUPLICATE_CHAIN"] == "1"
let none = environment["CUSTOM_MIGRATE_NO_CHAINS"] == "1"
let samples = environment["CUSTOM_MIGRATE_SAMPLE_CHAINS"] == "1"
// And an app that bootstraps swift-log itself: its own handler, and MigrateCommand leaves it be.
let ownLogging = environment["CUSTOM_MIGRATE_OWN_LOGGING"] == "1"
if ownLogging {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = .debug
        return handler
    }
}
// The pause points of `copy`, which the shipped `migrate` does not have: with
// CUSTOM_MIGRATE_COPY_PAUSE=STEP (prepared, written, verified, removed), `copy` prints
// `paused after STEP` on standard error and waits there — to be killed (a test stops the process
// between two steps with SIGKILL), or, when CUSTOM_MIGRATE_COPY_RESUME=PATH is set, until a file
// exists at PATH (a test changes a store between two steps, then lets the command go on).
// Debug builds only, as the `MigrateCommand.main` that takes the checkpoint.
let chains =
    none ? [] : samples ? SampleModels.all : duplicate ? [Note.chain.erased, Note.chain.erased] : [Note.chain.erased]
// With the sample chains it stands in for the stock `migrate`, under its name.
let commandName = samples ? "migrate" : "custom-migrate"
// With CUSTOM_MIGRATE_HOLD_COMMIT=PREFIX, the store kind held-defaults:PATH, a suite whose writes
// wait for the test (HeldCommit.swift), for the tests of `run` racing another writer.
let backends: [any StoreBackend] =
    environment["CUSTOM_MIGRATE_HOLD_COMMIT"].map { [HeldDefaultsBackend(resumePrefix: $0)] } ?? []
// A master key source of the app's own: `--master-key hexenv:VAR`, 64 hex digits in VAR. With
// CUSTOM_MIGRATE_TAKEN_KEY_SOURCE=1 it is registered as `file:` too, which must be refused.
struct HexEnvironmentKey: MasterKeyProvider {
    let variable: String
    var description: String { "hex key in environment variable \(variable)" }

    func masterKey(createIfAbsent: Bool) throws(KeepsakeError) -> SecureBytes {
        let text = Array((environment[variable] ?? "").utf8)
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var key: [UInt8] = []
        for index in stride(from: 0, to: text.count - 1, by: 2) {
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else { break }
            key.append(high << 4 | low)
        }
        guard text.count == 64, key.count == 32 else {
            throw KeepsakeError(.invalidArgument, "\(description) does not hold 64 lowercase hex digits")
        }
        return SecureBytes(copying: key)
    }
}
let hexEnvironment = KeySourceKind(scheme: "hexenv", valueName: "VAR", summary: "a hex key in the environment") {
    value throws(KeepsakeError) in HexEnvironmentKey(variable: value)
}
let keySources =
    environment["CUSTOM_MIGRATE_TAKEN_KEY_SOURCE"] == "1"
    ? [
        hexEnvironment,
        KeySourceKind(scheme: "file", valueName: "PATH", summary: "taken") { value throws(KeepsakeError) in
            HexEnvironmentKey(variable: value)
        }
    ] : [hexEnvironment]
#if DEBUG
if let pause = environment["CUSTOM_MIGRATE_COPY_PAUSE"] {
    let resume = environment["CUSTOM_MIGRATE_COPY_RESUME"]
    MigrateCommand.main(chains: chains, commandName: commandName, bootstrapsLogging: !ownLogging) { step in
        guard step.rawValue == pause else { return }
        FileHandle.standardError.write(Data("paused after \(step.rawValue)\n".utf8))
        while resume.map({ !FileManager.default.fileExists(atPath: $0) }) ?? true { usleep(20_000) }
    }
}
#endif
MigrateCommand.main(
    chains: chains, commandName: commandName, backends: backends, keySources: keySources,
    bootstrapsLogging: !ownLogging)
