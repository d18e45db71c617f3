import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeSodium
import Migrations
import Synchronization
import Testing

/// `Vault.updates(for:)` in this process while another process — the built `migrate` — puts,
/// migrates and deletes the record.
@Suite("updates(for:) sees another process's writes")
struct UpdatesCLITests {
    /// The updates seen so far, collected by a consumer task.
    final class Seen: Sendable {
        let updates = Mutex<[RecordUpdate<PersonV3>]>([])
        var all: [RecordUpdate<PersonV3>] { updates.withLock { $0 } }

        /// Waits up to `bound` for an update `matches` accepts, after the first `after` seen
        /// (generous: other tests may hold the shared pool's threads for a while, and the watch's
        /// task waits for one; it returns as soon as the update is seen).
        func wait(
            after: Int, within bound: Duration = .seconds(60), for matches: (RecordUpdate<PersonV3>) -> Bool
        ) async -> Bool {
            let deadline = ContinuousClock.now + bound
            while ContinuousClock.now < deadline {
                if all.dropFirst(after).contains(where: matches) { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
    }

    func observe(_ store: any RecordStore, _ arguments: [String]) async throws {
        let seen = Seen()
        let consumer = Task {
            for await update in Vault(store: store).updates(of: Person.chain, forKey: "person") {
                seen.updates.withLock { $0.append(update) }
            }
        }
        defer { consumer.cancel() }
        #expect(await seen.wait(after: 0) { if case .absent = $0 { true } else { false } }, "absent first")

        var count = seen.all.count
        let put = try migrate(["put", "person"] + arguments, stdin: #"{"name":"Ada","age":"36"}"#)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(
            await seen.wait(after: count) { $0.value?.alias == "Ada" && storedVersion($0) == 0 },
            "\(store.uri): the put is seen as a V0 record: \(seen.all)")

        count = seen.all.count
        let run = try migrate(["run"] + arguments + ["--device-id", "test-device"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            await seen.wait(after: count) { $0.value?.alias == "Ada" && storedVersion($0) == 3 },
            "\(store.uri): the run is seen as the same person at version 3: \(seen.all)")

        count = seen.all.count
        let delete = try migrate(["delete", "person"] + arguments)
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(
            await seen.wait(after: count) { if case .absent = $0 { true } else { false } },
            "\(store.uri): the delete is seen as absent: \(seen.all)")
    }

    private func storedVersion(_ update: RecordUpdate<PersonV3>) -> Int? {
        if case let .record(record) = update { return record.storedVersion }
        return nil
    }

    @Test("on a defaults suite")
    func defaults() async throws {
        let suite = try Suite()
        try await observe(DefaultsStore(path: suite.path), ["--store", suite.store])
    }

    @Test("on an encrypted file store")
    func files() async throws {
        let directory = try Suite().directory
        let key = directory + "/records.key"
        #expect(try migrate(["init", "--store", "file:\(directory)/records", "--key-file", key]).status == 0)
        let store = try SodiumFileStore(directory: directory + "/records", key: .keyFile(path: key))
        try await observe(store, ["--store", "file:\(directory)/records", "--key-file", key])
    }
}
