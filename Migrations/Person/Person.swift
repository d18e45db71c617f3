import Keepsake

/// The Person model: a user profile kept in a defaults suite under `"person"`.
///
/// To add a version: add `PersonV4.swift` with `typealias Predecessor = PersonV3`, then point
/// ``Latest`` at it. No existing version file changes.
public enum Person {
    /// The version apps read and write.
    public typealias Latest = PersonV3

    /// Versions 0 → 3, stored under `"person"` by default.
    public static let chain = ModelChain<Latest>(name: "Person", defaultKeys: ["person"])
}
