import Keepsake

/// Person as the first release stored it: `{"name", "age"}`, no version. Frozen.
public struct PersonV0: ModelVersion, Equatable {
    public static let version = 0

    public let name: String
    public let age: String

    public init(name: String, age: String) {
        self.name = name
        self.age = age
    }
}
