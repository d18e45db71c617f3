import Keepsake

extension SodiumFileStore: ObservableStore {
    /// Hints from an inotify watch on the store's directory: `.any` whenever a record file is
    /// written, replaced or removed (by any process). Record files are named by a keyed hash of
    /// their key, so the hint does not say which key; an observer reads its key again.
    ///
    /// - Throws: `KeepsakeError` when the directory cannot be watched.
    public func changes() throws(KeepsakeError) -> StoreChanges {
        try .watching(directory, store: uri) { Self.isRecordFileName($0) }
    }
}
