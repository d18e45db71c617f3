/// What loading a record found. Records that cannot be used — newer than known, unrecognised,
/// corrupt — are not states but thrown ``KeepsakeError``s, so they cannot be mistaken for absent.
public enum RecordState<Model: Sendable>: Sendable {
    /// Nothing is stored under the key.
    case absent
    /// The record is at the latest version.
    case current(Model)
    /// The record was at version `from` and was migrated to `to` (written back unless the load
    /// asked not to).
    case migrated(Model, from: Int, to: Int)

    /// The record, if there is one.
    public var value: Model? {
        switch self {
        case .absent: return nil
        case let .current(value), let .migrated(value, _, _): return value
        }
    }
}

extension RecordState: Equatable where Model: Equatable {}
