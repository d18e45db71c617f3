internal import FileKit

extension AsyncStream where Element == StoreChange {
    /// Hints from an inotify watch on `directory`: `.any` for every changed entry whose name
    /// `isRelevant` accepts, and after an overflow. The watch stops when the stream's consumer
    /// does.
    package static func watching(
        _ directory: String, store: String, relevant isRelevant: @escaping @Sendable (String) -> Bool
    ) throws(KeepsakeError) -> StoreChanges {
        let (stream, continuation) = StoreChanges.makeStream(bufferingPolicy: .bufferingNewest(256))
        let watch: DirectoryWatch
        do throws(SystemFailure) {
            watch = try DirectoryWatch(
                directory, opened: { WatchCount.opened(store: store) }, closed: { WatchCount.closed(store: store) },
                report: { name in
                    guard let name else {
                        continuation.yield(.any)
                        return
                    }
                    if isRelevant(name) { continuation.yield(.any) }
                })
        } catch {
            throw error.error(store: store, "cannot watch the directory \(directory) for changes")
        }
        continuation.onTermination = { _ in watch.stop() }
        return stream
    }
}
