import Keepsake

/// Person without an age: `{"alias", "email"}`. Frozen.
public struct PersonV3: ModelVersion, Equatable {
    public typealias Predecessor = PersonV2
    public static let version = 3

    public let alias: String
    public let email: String

    public init(alias: String, email: String) {
        self.alias = alias
        self.email = email
    }

    /// The age is dropped.
    public init(migrating previous: PersonV2, context: MigrationContext) {
        self.init(alias: previous.alias, email: previous.email)
    }
}
