/// An enum stored in a record that lists one value of each of its cases, so that its cases are
/// part of the version's frozen shape.
///
/// A released version's shape (``RecordShape``) records, for every enum it stores, its cases:
/// renaming, removing or retyping one breaks every record holding it, and
/// `KeepsakeTesting.SchemaSnapshot` fails on it. A raw-value enum that is `CaseIterable` needs
/// nothing more. An enum with associated values cannot list its cases by itself — nor can a
/// raw-value enum that is not `CaseIterable` — so it lists them here, one value per case, with
/// any payload (the values are encoded to learn each case's key, and the payload's shape is read
/// off the enum's `Decodable` conformance; they are never stored):
///
/// ```swift
/// public enum Credential: Codable, Sendable, DeclaredCases {
///     case password(hash: String)
///     case passkey(id: UUID, createdAt: Date)
///     case none
///
///     public static let declaredCases: [Credential] = [
///         .password(hash: ""), .passkey(id: UUID(), createdAt: Date()), .none,
///     ]
/// }
/// ```
///
/// An enum that declares neither is recorded with its cases `"not declared"`, and the snapshot
/// check says so in its notes: its cases are not frozen. A case left out of `declaredCases` is
/// not frozen either; list every case.
public protocol DeclaredCases: Encodable {
    /// One value of each case, in any order.
    static var declaredCases: [Self] { get }
}
