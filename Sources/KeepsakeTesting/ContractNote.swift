import Foundation
import Keepsake

/// A two-version model the store contract suite stores through each backend.
public struct ContractNoteV0: ModelVersion, Equatable {
    public static let version = 0
    /// The note's text.
    public let text: String
    /// When the note was written.
    public let created: Date

    /// A note with `text`, written at `created`.
    public init(text: String, created: Date) {
        self.text = text
        self.created = created
    }
}

/// Version 1 adds `tags`, empty for migrated notes.
public struct ContractNoteV1: ModelVersion, Equatable {
    public typealias Predecessor = ContractNoteV0
    public static let version = 1
    /// The note's text.
    public let text: String
    /// When the note was written.
    public let created: Date
    /// The note's tags; empty for a note migrated from version 0.
    public let tags: [String]

    /// A note with `text`, written at `created`, tagged `tags`.
    public init(text: String, created: Date, tags: [String]) {
        self.text = text
        self.created = created
        self.tags = tags
    }

    public init(migrating previous: ContractNoteV0, context: MigrationContext) {
        self.init(text: previous.text, created: previous.created, tags: [])
    }
}

/// The ContractNote model: versions 0 and 1.
public enum ContractNote {
    /// Versions 0 → 1, stored under `"note"` by default.
    public static let chain = ModelChain<ContractNoteV1>(name: "ContractNote", defaultKeys: ["note"])
}
