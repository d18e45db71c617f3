import Configuration
import Foundation
import Keepsake
import KeepsakeConfiguration
import KeepsakeDefaults
import Synchronization
import Testing

/// What a watch has seen so far, collected by the task that runs it.
final class Seen<Value: Sendable>: Sendable {
    let values = Mutex<[Value]>([])
    var all: [Value] { values.withLock { $0 } }

    func append(_ value: Value) { values.withLock { $0.append(value) } }

    /// Waits up to `bound` for a value `matches` accepts; how long that took, or `nil`.
    func wait(within bound: Duration = .seconds(5), for matches: (Value) -> Bool) async throws -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < bound {
            if all.contains(where: matches) { return clock.now - start }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

@Suite("Watches see another process's writes")
struct WatchTests {
    let v0Settings = #"{"width":1024,"height":768,"theme":"dark"}"#

    /// A defaults suite holding V0 settings, and a provider over it.
    func suite() throws -> (TemporaryDirectory, String, KeepsakeProvider) {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/suite.json"
        let store = DefaultsStore(path: path)
        try store.setData(Data(v0Settings.utf8), forKey: "settings")
        try store.setData(Data(#"{"endpoint":"https://a.example.com","token":"t","retries":1}"#.utf8), forKey: "api")
        let provider = KeepsakeProvider(vault: Vault(store: store), records: [.init(.settings), .init(.apiClient)])
        return (directory, path, provider)
    }

    /// `migrate put KEY --store defaults:PATH` with `value` on standard input.
    func put(_ key: String, _ value: String, path: String) throws {
        let result = try migrate.run(["put", key, "--store", "defaults:" + path], stdin: value)
        #expect(result.status == 0, "migrate put failed: \(result.stderr)")
    }

    @Test("watchValue sees another process's migrate put within 5 s")
    func watchValue() async throws {
        let (directory, path, provider) = try suite()
        defer { directory.remove() }
        let config = ConfigReader(provider: provider)
        let seen = Seen<Int?>()
        let watch = Task {
            try await config.watchInt(forKey: "settings.window.width") { updates in
                for await width in updates { seen.append(width) }
            }
        }
        defer { watch.cancel() }
        #expect(try await seen.wait { $0 == 1024 } != nil, "the current value first: \(seen.all)")

        try put("settings", #"{"width":1280,"height":800,"theme":"dark"}"#, path: path)
        let latency = try await seen.wait { $0 == 1280 }
        #expect(latency != nil, "\(directory.path): the put was not seen within 5 s: \(seen.all)")
        print("watchValue saw another process's migrate put after \(latency ?? .zero) (bound 5 s)")

        // A change to another field of the record is no change of this value.
        let count = seen.all.count
        try put("settings", #"{"width":1280,"height":900,"theme":"light"}"#, path: path)
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.all.count == count, "an unchanged value was emitted again: \(seen.all)")
    }

    @Test("watchValue reports an unrecognised put as an error naming the store and key, then the repair")
    func watchValueErrors() async throws {
        let (directory, path, provider) = try suite()
        defer { directory.remove() }
        let seen = Seen<Result<LookupResult, KeepsakeError>>()
        let key = AbsoluteConfigKey(["settings", "theme"])
        let watch = Task {
            try await provider.watchValue(forKey: key, type: .string) { updates in
                for await update in updates {
                    seen.append(
                        update.mapError { error in
                            error as? KeepsakeError ?? KeepsakeError(.io, "not a KeepsakeError: \(error)")
                        })
                }
            }
        }
        defer { watch.cancel() }
        #expect(try await seen.wait { content($0) == .string("dark") } != nil, "\(seen.all)")

        try put("settings", #"{"colour":"red"}"#, path: path)
        let failed = try await seen.wait {
            if case let .failure(error) = $0 {
                error.code == .unrecognisedRecord && error.key == "settings"
            } else {
                false
            }
        }
        #expect(failed != nil, "the unrecognised record was not reported: \(seen.all)")

        try put("settings", #"{"width":1,"height":2,"theme":"light"}"#, path: path)
        #expect(try await seen.wait { content($0) == .string("light") } != nil)
    }

    /// The content a successful lookup found.
    func content(_ update: Result<LookupResult, KeepsakeError>) -> ConfigContent? {
        if case let .success(result) = update { return result.value?.content }
        return nil
    }

    @Test("watchSnapshot emits a new consistent snapshot after another process's put")
    func watchSnapshot() async throws {
        let (directory, path, provider) = try suite()
        defer { directory.remove() }
        let config = ConfigReader(provider: provider)
        let seen = Seen<[Int?]>()
        let watch = Task {
            try await config.watchSnapshot { snapshots in
                for await snapshot in snapshots {
                    seen.append([snapshot.int(forKey: "settings.window.width"), snapshot.int(forKey: "api.retries")])
                }
            }
        }
        defer { watch.cancel() }
        #expect(try await seen.wait { $0 == [1024, 1] } != nil, "the current snapshot first: \(seen.all)")

        try put("api", #"{"endpoint":"https://a.example.com","token":"t","retries":5}"#, path: path)
        let latency = try await seen.wait { $0 == [1024, 5] }
        #expect(latency != nil, "\(directory.path): the put was not seen within 5 s: \(seen.all)")
        print("watchSnapshot saw another process's migrate put after \(latency ?? .zero) (bound 5 s)")
    }

    @Test("a watch reads without writing: the stored V0 record stays as it was")
    func watchNeverWrites() async throws {
        let (directory, path, provider) = try suite()
        defer { directory.remove() }
        let seen = Seen<Int?>()
        let watch = Task {
            try await ConfigReader(provider: provider).watchInt(forKey: "settings.window.height") { updates in
                for await height in updates { seen.append(height) }
            }
        }
        #expect(try await seen.wait { $0 == 768 } != nil)
        watch.cancel()
        let stored = try DefaultsStore(path: path).data(forKey: "settings")
        #expect(stored == Data(v0Settings.utf8), "\(directory.path): the watch wrote the record back")
    }
}
