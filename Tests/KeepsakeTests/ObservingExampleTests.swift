// swift-format-ignore-file
// (A DocC catalog quotes code of this file verbatim, so its layout is kept as written.)
import Foundation
import Keepsake
import KeepsakeMemory
import Synchronization
import Testing

extension SettingsV1 {
    /// What the Observing changes article's app applies when nothing is stored.
    static let defaults = SettingsV1(id: UUID(), theme: .system)
}

/// The app of the Observing changes article (Keepsake.docc/ObservingChanges.md): its example
/// verbatim, with what it calls.
final class ObservingExample: Sendable {
    let applied = Mutex<[Theme]>([])
    let locked = Mutex(false)
    let reported = Mutex<[KeepsakeError]>([])

    func apply(_ settings: SettingsV1) { applied.withLock { $0.append(settings.theme) } }
    func showLockedBanner() { locked.withLock { $0 = true } }
    func report(_ error: KeepsakeError) { reported.withLock { $0.append(error) } }

    func watch(_ store: some RecordStore) async {
        let vault = Vault(store: store)
        for await update in vault.updates(for: .settings) {
            switch update {
            case let .record(record): apply(record.value)
            case .absent: apply(.defaults)
            case .locked: showLockedBanner()
            case let .unreadable(error), let .failed(error): report(error)
            }
        }
    }
}

/// The article's model with many records: one settings record per tenant, under `tenant-*`.
enum Tenant {
    static let chain = ModelChain<SettingsV1>(name: "TenantSettings", defaultKeys: [], keyPatterns: ["tenant-*"])
}

/// The article's pattern example verbatim, with what it calls: each tenant's theme.
final class TenantExample: Sendable {
    let themes = Mutex<[String: Theme]>([:])

    func apply(_ settings: SettingsV1, to key: String) { themes.withLock { $0[key] = settings.theme } }
    func forget(_ key: String) { themes.withLock { $0[key] = nil } }

    func watch(_ vault: Vault) async {
        for await change in vault.updates(of: Tenant.chain, matching: "tenant-*") {
            if let settings = change.update.value { apply(settings, to: change.key) } else { forget(change.key) }
        }
    }
}

@Suite("The Observing changes example")
struct ObservingExampleTests {
    @Test("the example applies the stored settings, then a change, then the defaults when they are removed")
    func watches() async throws {
        let store = InMemoryStore()
        let vault = Vault(store: store)
        try await vault.save(SettingsV1(id: UUID(), theme: .dark), for: .settings)
        let app = ObservingExample()
        let watching = Task { await app.watch(store) }
        defer { watching.cancel() }
        func waitFor(_ count: Int) async throws {
            // Generous, a bound on failure only: a pass takes milliseconds. (When blocking calls
            // shared one Dispatch queue, a full parallel run once kept the watcher's first read
            // waiting over 120 s behind other tests' calls blocked on locks; see BlockingTests.)
            let deadline = ContinuousClock.now + .seconds(120)
            while app.applied.withLock({ $0.count }) < count {
                guard ContinuousClock.now < deadline else {
                    Issue.record("the watcher applied \(app.applied.withLock { $0 }), not \(count) updates, in 120 s")
                    return
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        try await waitFor(1)
        try await vault.save(SettingsV1(id: UUID(), theme: .light), for: .settings)
        try await waitFor(2)
        try await vault.remove(.settings)
        try await waitFor(3)
        #expect(app.applied.withLock { $0 } == [.dark, .light, .system])
        #expect(!app.locked.withLock { $0 })
        #expect(app.reported.withLock { $0.isEmpty })
    }

    @Test("the pattern example follows each tenant's record: added, changed, removed; other keys never")
    func tenants() async throws {
        let store = InMemoryStore()
        let vault = Vault(store: store)
        try await vault.save(SettingsV1(id: UUID(), theme: .dark), in: Tenant.chain, forKey: "tenant-a")
        let app = TenantExample()
        let watching = Task { await app.watch(vault) }
        defer { watching.cancel() }
        func waitFor(_ expected: [String: Theme]) async throws {
            let deadline = ContinuousClock.now + .seconds(120)  // generous, as above
            while app.themes.withLock({ $0 }) != expected {
                guard ContinuousClock.now < deadline else {
                    Issue.record("the watcher had \(app.themes.withLock { $0 }), not \(expected), after 120 s")
                    return
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        try await waitFor(["tenant-a": .dark])
        try await vault.save(SettingsV1(id: UUID(), theme: .light), in: Tenant.chain, forKey: "tenant-b")
        try await vault.save(SettingsV1(id: UUID(), theme: .light), in: Tenant.chain, forKey: "other")
        try await waitFor(["tenant-a": .dark, "tenant-b": .light])
        try await vault.remove(forKey: "tenant-a")
        try await waitFor(["tenant-b": .light])
        #expect(app.themes.withLock { $0 } == ["tenant-b": .light])
    }
}
