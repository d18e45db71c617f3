import Foundation
import Keepsake
import KeepsakeTesting
import Synchronization
import Testing

@testable import KeepsakeOpenBao

extension OpenBaoServerTests {
    @Suite("Watching an OpenBao store from its first listing")
    struct WatchStart {
        typealias Tick = ObservableStoreContract.Tick

        /// The race a polling watch has at its start: `Vault.updates` subscribes, reads the record
        /// (absent) and yields it; a write lands; only then does the polling thread take its first
        /// listing, which holds the write and becomes the baseline later listings are compared
        /// with — so no listing ever differs, and without a hint for that first listing the watch
        /// would never see the write. The hook holds the first listing until the write has landed,
        /// so the race is taken every time, not by chance.
        @Test("a write landing between a watch's start and its first listing is seen")
        func writeBeforeFirstListing() async throws {
            let server = try SharedServer.get()
            let folder = "start\(UUID().uuidString.prefix(8).lowercased())"
            let store = try OpenBaoStore(
                configuration: OpenBaoConfiguration(parsing: server.uri(folder: folder, extra: "&poll_interval=0.2")))
            let writer = try OpenBaoStore(configuration: OpenBaoConfiguration(parsing: server.uri(folder: folder)))
            let written = DispatchSemaphore(value: 0)
            let listingHeld = Atomic<Int>(0)
            store.watcher.beforeFirstListing.withLock {
                $0 = {
                    listingHeld.add(1, ordering: .relaxed)
                    written.wait()
                }
            }
            defer { written.signal() }  // never leave the polling thread waiting, whatever fails

            let seen = UpdateRecorder<RecordUpdate<Tick>>()
            let consumer = seen.consume(
                Vault(store: store).updates(of: ObservableStoreContract.tickChain, forKey: "tick"))
            defer { consumer.cancel() }
            let absentFirst = await seen.wait(after: 0, within: .seconds(10)) {
                if case .absent = $0 { return true }
                return false
            }
            #expect(absentFirst, "updates: \(seen.all.map(String.init(describing:)))")

            try await onThread {
                try Vault(store: writer).save(Tick(tick: 7), in: ObservableStoreContract.tickChain, forKey: "tick")
            }
            #expect(listingHeld.load(ordering: .relaxed) == 1, "the first listing waited for the write")
            written.signal()

            let sawWrite = await seen.wait(after: 1, within: .seconds(10)) { $0.value?.tick == 7 }
            #expect(sawWrite, "updates: \(seen.all.map(String.init(describing:)))")
            #expect(try writer.data(forKey: "tick") != nil)
        }

        /// Runs `work` on a thread of its own, so that a blocking store call never holds Swift's
        /// cooperative pool, which the watch under test needs.
        private func onThread(_ work: @escaping @Sendable () throws -> Void) async throws {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Thread { continuation.resume(with: Result { try work() }) }.start()
            }
        }
    }
}
