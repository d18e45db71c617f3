import Keepsake

/// Person with an email address: `{"name", "age", "email"}`. Frozen.
public struct PersonV1: ModelVersion, Equatable {
    public typealias Predecessor = PersonV0
    public static let version = 1

    public let name: String
    public let age: String
    public let email: String

    public init(name: String, age: String, email: String) {
        self.name = name
        self.age = age
        self.email = email
    }

    /// Records from before email existed get the placeholder `"---"`.
    public init(migrating previous: PersonV0, context: MigrationContext) {
        self.init(name: previous.name, age: previous.age, email: "---")
    }
}
