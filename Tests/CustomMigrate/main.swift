import Foundation
import Keepsake
import KeepsakeCLI
import Logging

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
// chain at all, to check what an empty list prints.
let environment = ProcessInfo.processInfo.environment
let duplicate = environment["CUSTOM_MIGRATE_DUPLICATE_CHAIN"] == "1"
let none = environment["CUSTOM_MIGRATE_NO_CHAINS"] == "1"
// And an app that bootstraps swift-log itself: its own handler, and MigrateCommand leaves it be.
let ownLogging = environment["CUSTOM_MIGRATE_OWN_LOGGING"] == "1"
if ownLogging {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = .info
        return handler
    }
}
MigrateCommand.main(
    chains: none ? [] : duplicate ? [Note.chain.erased, Note.chain.erased] : [Note.chain.erased],
    commandName: "custom-migrate", bootstrapsLogging: !ownLogging)
