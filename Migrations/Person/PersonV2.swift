import Keepsake

/// Person with `name` renamed to `alias`: `{"alias", "age", "email"}`. Frozen.
public struct PersonV2: ModelVersion, Equatable {
    public typealias Predecessor = PersonV1
    public static let version = 2

    public let alias: String
    public let age: String
    public let email: String

    public init(alias: String, age: String, email: String) {
        self.alias = alias
        self.age = age
        self.email = email
    }

    /// The alias is the former name.
    public init(migrating previous: PersonV1, context: MigrationContext) {
        self.init(alias: previous.name, age: previous.age, email: previous.email)
    }
}
