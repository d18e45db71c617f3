/// How far a store's ``RecordStore/commit(_:)`` has come through a batch of writes, for a caller
/// that shows progress while a long batch is written (`migrate run` on a terminal).
///
/// A caller sets ``observer`` for the duration of a call; stores that apply a batch write by
/// write (the encrypted file store, the keyring) call ``report(_:of:)`` after each one. A store
/// that writes the whole batch at once (the defaults store's single document) does not report.
///
/// ```swift
/// let reports = try CommitProgress.$observer.withValue({ done, total in show(done, total) }) {
///     try migrator.run()
/// }
/// ```
public enum CommitProgress {
    /// Called with the number of writes done so far and the batch's size. Task-local (and
    /// thread-local outside a task): it applies only to calls made inside `withValue`.
    @TaskLocal public static var observer: (@Sendable (_ done: Int, _ total: Int) -> Void)?

    /// Tells the current ``observer``, if any, that `done` of `total` writes are done.
    @inlinable
    public static func report(_ done: Int, of total: Int) {
        observer?(done, total)
    }
}
