import Foundation
import Keepsake
import KeepsakeCLI
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
MigrateCommand.main(chains: chains, commandName: commandName, backends: backends, bootstrapsLogging: !ownLogging)
