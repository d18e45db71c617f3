import Foundation
import Keepsake

/// A two-version model the store contract suite stores through each backend.
public struct ContractNoteV0: ModelVersion, Equatable {
    public static let version = 0
    public let text: String
    public let created: Date

    public init(text: String, created: Date) {
        self.text = text
        self.created = created
    }
}

/// Version 1 adds `tags`, empty for migrated notes.
public struct ContractNoteV1: ModelVersion, Equatable {
    public typealias Predecessor = ContractNoteV0
    public static let version = 1
    public let text: String
    public let created: Date
    public let tags: [String]

    public init(text: String, created: Date, tags: [String]) {
        self.text = text
        self.created = created
        self.tags = tags
    }

    public init(migrating previous: ContractNoteV0, context: MigrationContext) {
        self.init(text: previous.text, created: previous.created, tags: [])
    }
}

public enum ContractNote {
    public static let chain = ModelChain<ContractNoteV1>(name: "ContractNote", defaultKeys: ["note"])
}
