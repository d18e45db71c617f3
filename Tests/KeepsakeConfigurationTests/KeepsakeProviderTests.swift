import Configuration
import Foundation
import Keepsake
import KeepsakeConfiguration
import KeepsakeMemory
import Synchronization
import Testing

@Suite("KeepsakeProvider reads fields of migrated records")
struct KeepsakeProviderTests {
    let v0Settings = Data(#"{"width":1024,"height":768,"theme":"dark"}"#.utf8)

    func settingsStore() -> InMemoryStore {
        InMemoryStore(name: "settings", contents: ["settings": v0Settings])
    }

    @Test("a field of an old record is read migrated, and nothing is written back")
    func migratedNotWritten() throws {
        let store = settingsStore()
        let provider = KeepsakeProvider(vault: Vault(store: store), records: [.init(.settings)])
        let config = ConfigReader(provider: provider)
        #expect(config.int(forKey: "settings.window.width") == 1024)
        #expect(config.double(forKey: "settings.window.scale") == 1)
        #expect(config.string(forKey: "settings.theme") == "dark")
        #expect(try store.data(forKey: "settings") == v0Settings, "a read wrote the record back")
    }

    @Test("with writeBack, a read writes the migrated record back")
    func writeBackWhenAsked() throws {
        let store = settingsStore()
        let provider = KeepsakeProvider(
            vault: Vault(store: store), records: [.init(.settings)], options: .init(writeBack: true))
        #expect(ConfigReader(provider: provider).int(forKey: "settings.window.height") == 768)
        let outcome = try Vault(store: store).outcome(of: TestChains.settings, forKey: "settings")
        guard case .current = outcome else {
            Issue.record("the record was not written back at the latest version: \(outcome)")
            return
        }
    }

    @Test("strings, integers, numbers, Booleans, arrays and bytes map to configuration types")
    func valueTypes() throws {
        let settings = SettingsV1(
            window: .init(width: 800, height: 600, scale: 2.5), theme: "light", recentFiles: ["a.txt", "b.txt"],
            pinned: [3, 1], icon: Data([0, 1, 254, 255]))
        let vault = Vault(store: InMemoryStore())
        try vault.save(settings, for: .settings)
        let config = ConfigReader(provider: KeepsakeProvider(vault: vault, records: [.init(.settings)]))
        #expect(config.int(forKey: "settings.window.width") == 800)
        #expect(config.double(forKey: "settings.window.width") == 800)
        #expect(config.double(forKey: "settings.window.scale") == 2.5)
        #expect(config.stringArray(forKey: "settings.recentFiles") == ["a.txt", "b.txt"])
        #expect(config.intArray(forKey: "settings.pinned") == [3, 1])
        #expect(config.doubleArray(forKey: "settings.pinned") == [3, 1])
        #expect(config.bytes(forKey: "settings.icon") == [0, 1, 254, 255])
        #expect(config.bytes(forKey: "settings.pinned") == [3, 1], "an array of small integers is bytes")
    }

    @Test("a missing field, an absent record and a key no record serves are not found")
    func notFound() throws {
        let empty = KeepsakeProvider(vault: Vault(store: InMemoryStore()), records: [.init(.settings)])
        #expect(try empty.value(forKey: AbsoluteConfigKey(["settings", "theme"]), type: .string).value == nil)
        let provider = KeepsakeProvider(vault: Vault(store: settingsStore()), records: [.init(.settings)])
        #expect(try provider.value(forKey: AbsoluteConfigKey(["settings", "missing"]), type: .string).value == nil)
        #expect(try provider.value(forKey: AbsoluteConfigKey(["other", "theme"]), type: .string).value == nil)
        let layered = ConfigReader(providers: [provider, InMemoryProvider(values: ["other.theme": "blue"])])
        #expect(layered.string(forKey: "other.theme") == "blue", "the next provider is asked")
    }

    @Test("a record key's default is served while nothing is stored")
    func defaultValue() throws {
        let key = RecordKey(
            "settings", chain: TestChains.settings,
            default: SettingsV1(window: .init(width: 640, height: 480, scale: 1), theme: "system"))
        let provider = KeepsakeProvider(vault: Vault(store: InMemoryStore()), records: [.init(key)])
        #expect(ConfigReader(provider: provider).int(forKey: "settings.window.width") == 640)
    }

    @Test("a record can be served under another prefix, or at the top level; the longest prefix wins")
    func prefixes() throws {
        let store = settingsStore()
        try store.setData(
            Data(#"{"endpoint":"https://api.example.com","token":"t0k3n","retries":3}"#.utf8), forKey: "api")
        let provider = KeepsakeProvider(
            vault: Vault(store: store),
            records: [.init(.settings, at: ConfigKey([])), .init(.apiClient, at: "app.client")])
        let config = ConfigReader(provider: provider)
        #expect(config.string(forKey: "theme") == "dark")
        #expect(config.int(forKey: "window.width") == 1024)
        #expect(config.int(forKey: "app.client.retries") == 3)
        #expect(config.int(forKey: "app.window.width") == nil, "app. belongs to the settings record at the top")
    }

    @Test("a newer record is a lookup error naming the store and the key, never a default")
    func newerRecord() throws {
        let store = InMemoryStore(
            name: "newer", contents: ["settings": Data(#"{"version":7,"schema":"Settings","data":{}}"#.utf8)])
        let provider = KeepsakeProvider(vault: Vault(store: store), records: [.init(.settings)])
        let error = try #require(throws: KeepsakeError.self) {
            try provider.value(forKey: AbsoluteConfigKey(["settings", "theme"]), type: .string)
        }
        #expect(error.code == .newerVersion)
        #expect(error.store == "memory:newer" && error.key == "settings")
        let config = ConfigReader(provider: provider)
        #expect(throws: KeepsakeError.self) { try config.requiredString(forKey: "settings.theme") }
    }

    @Test("a corrupt record is a lookup error naming the store and the key")
    func corruptRecord() throws {
        let store = InMemoryStore(name: "corrupt", contents: ["settings": Data("{not json".utf8)])
        let provider = KeepsakeProvider(vault: Vault(store: store), records: [.init(.settings)])
        let error = try #require(throws: KeepsakeError.self) {
            try provider.value(forKey: AbsoluteConfigKey(["settings", "theme"]), type: .string)
        }
        #expect(error.code == .corruptRecord)
        #expect(error.store == "memory:corrupt" && error.key == "settings")
    }

    @Test("a locked store is a lookup error naming the store and the key, in value, fetch and snapshot")
    func lockedStore() async throws {
        let store = FailingStore(error: KeepsakeError(.locked, store: "memory:failing", "the collection is locked"))
        let provider = KeepsakeProvider(vault: Vault(store: store), records: [.init(.settings)])
        let key = AbsoluteConfigKey(["settings", "theme"])
        for error in [
            try #require(throws: KeepsakeError.self) { try provider.value(forKey: key, type: .string) },
            try await #require(throws: KeepsakeError.self) {
                try await provider.fetchValue(forKey: key, type: .string)
            },
            try #require(throws: KeepsakeError.self) { try provider.snapshot().value(forKey: key, type: .string) }
        ] {
            #expect(error.code == .locked)
            #expect(error.store == "memory:failing" && error.key == "settings")
        }
    }

    @Test("a field of another type than asked is a lookup error that names the field, not its value")
    func typeMismatch() throws {
        let provider = KeepsakeProvider(vault: Vault(store: settingsStore()), records: [.init(.settings)])
        let error = try #require(throws: KeepsakeError.self) {
            try provider.value(forKey: AbsoluteConfigKey(["settings", "theme"]), type: .int)
        }
        #expect(error.code == .configurationTypeMismatch)
        #expect(error.key == "settings" && error.message.contains("theme"))
        #expect(!error.description.contains("dark"))
    }

    @Test("a snapshot holds one state: a change after it is not seen through it")
    func snapshotIsFixed() throws {
        let store = settingsStore()
        let provider = KeepsakeProvider(vault: Vault(store: store), records: [.init(.settings)])
        let snapshot = ConfigReader(provider: provider).snapshot()
        try store.setData(Data(#"{"width":1,"height":2,"theme":"light"}"#.utf8), forKey: "settings")
        #expect(snapshot.string(forKey: "settings.theme") == "dark")
        #expect(ConfigReader(provider: provider).string(forKey: "settings.theme") == "light")
    }

    @Test("a snapshot of two records read while another writer changes both never mixes two states")
    func snapshotIsConsistent() throws {
        // A writer that moves both records to the next generation right after the first read
        // of `api` in each round: a single round would read settings at n and api at n + 1.
        let base = InMemoryStore(name: "interleaved")
        @Sendable func write(_ generation: Int) {
            let settings = #"{"width":\#(generation),"height":1,"theme":"t"}"#
            let api = #"{"endpoint":"e","token":"x","retries":\#(generation)}"#
            do {
                _ = try base.commit([
                    StoreWrite(key: "settings", value: Data(settings.utf8)),
                    StoreWrite(key: "api", value: Data(api.utf8))
                ])
            } catch {
                Issue.record(error)
            }
        }
        write(0)
        let changes = Mutex(0)
        let store = InterleavingStore(base: base) { key, _ in
            let generation = changes.withLock { count -> Int? in
                guard key == "api", count < 3 else { return nil }
                count += 1
                return count
            }
            if let generation { write(generation) }
        }
        let provider = KeepsakeProvider(vault: Vault(store: store), records: [.init(.settings), .init(.apiClient)])
        let snapshot = provider.snapshot()
        let width = try snapshot.value(forKey: AbsoluteConfigKey(["settings", "window", "width"]), type: .int)
        let retries = try snapshot.value(forKey: AbsoluteConfigKey(["api", "retries"]), type: .int)
        #expect(width.value?.content == retries.value?.content, "two states in one snapshot")
        #expect(width.value?.content == .int(3))
    }

    @Test("a store that never stops changing gives a snapshot whose lookups throw conflict")
    func snapshotGivesUp() throws {
        let base = InMemoryStore(name: "busy")
        let store = InterleavingStore(base: base) { key, read in
            do {
                try base.setData(Data(#"{"endpoint":"e","token":"x","retries":\#(read)}"#.utf8), forKey: "api")
            } catch {
                Issue.record(error)
            }
        }
        let provider = KeepsakeProvider(
            vault: Vault(store: store), records: [.init(.settings), .init(.apiClient)],
            options: .init(snapshotAttempts: 4))
        let error = try #require(throws: KeepsakeError.self) {
            try provider.snapshot().value(forKey: AbsoluteConfigKey(["api", "retries"]), type: .int)
        }
        #expect(error.code == .conflict)
        #expect(store.reads == 8, "4 rounds of 2 reads")
    }
}
