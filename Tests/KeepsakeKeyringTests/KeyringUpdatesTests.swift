import Foundation
import Keepsake
import KeepsakeKeyring
import KeepsakeTesting
import Migrations
import Synchronization
import Testing

private typealias TickV0 = ObservableStoreContract.Tick
private let tickChain = ObservableStoreContract.tickChain
/// The updates one consumer has seen so far (KeepsakeTesting's recorder).
private typealias SeenUpdates<Latest: ModelVersion> = UpdateRecorder<RecordUpdate<Latest>>

private func isAbsent<Latest>(_ update: RecordUpdate<Latest>) -> Bool {
    if case .absent = update { return true }
    return false
}

private func isLocked<Latest>(_ update: RecordUpdate<Latest>) -> Bool {
    if case .locked = update { return true }
    return false
}

private func storedVersion<Latest>(_ update: RecordUpdate<Latest>) -> Int? {
    if case let .record(record) = update { return record.storedVersion }
    return nil
}

/// `Ada` at version 0, `Ada` at version 3, `absent`, `locked:locked`: for messages.
private func describe(_ update: RecordUpdate<PersonV3>) -> String {
    switch update {
    case let .record(record): return "\(record.value.alias)@\(record.storedVersion)"
    case .absent: return "absent"
    case let .unreadable(error): return "unreadable:\(error.code)"
    case let .locked(error): return "locked:\(error.code)"
    case let .failed(error): return "failed:\(error.code)"
    }
}

extension KeyringTests {
    /// `Vault.updates(for:)` on a keyring store: the provider's signals and Keepsake's own
    /// announcements are hints, read again before anything is yielded.
    @Suite("updates(for:) on the keyring")
    struct Updates {
        @Test("another process's migrate put, run and delete, and secret-tool's store and clear, are each seen")
        func otherProcesses() async throws {
            let store = try PrivateKeyring.freshStore("updates")
            let arguments = ["--store", store.uri]
            let seen = SeenUpdates<PersonV3>()
            let consumer = seen.consume(Vault(store: store).updates(of: Person.chain, forKey: "person"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0, for: isAbsent), "absent first: \(seen.all.map(describe))")
            #expect(seen.all.first.map(isAbsent) == true)

            var count = seen.all.count
            let put = try Shell.run(
                [migrateExecutable, "put", "person"] + arguments, stdin: Data(#"{"name":"Ada","age":"36"}"#.utf8))
            #expect(put.status == 0, "\(put.stderr)")
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Ada" && storedVersion($0) == 0 },
                "the put is seen as Ada at version 0: \(seen.all.map(describe))")

            count = seen.all.count
            let run = try runMigrate(["run"] + arguments + ["--device-id", "test-device"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Ada" && storedVersion($0) == 3 },
                "the run is seen as Ada at version 3: \(seen.all.map(describe))")

            count = seen.all.count
            let delete = try runMigrate(["delete", "person"] + arguments)
            #expect(delete.status == 0, "\(delete.stderr)")
            #expect(
                await seen.wait(after: count, for: isAbsent), "the delete is seen as absent: \(seen.all.map(describe))")

            count = seen.all.count
            try PrivateKeyring.secretToolStore(
                label: "person", attributes: [("service", store.service), ("username", "person")],
                secret: #"{"name":"Bea","age":"7"}"#)
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Bea" && storedVersion($0) == 0 },
                "secret-tool's new item is seen: \(seen.all.map(describe))")

            if PrivateKeyring.runningProvider != .keePassXC {
                // KeePassXC asks the user before secret-tool stores over an existing item.
                count = seen.all.count
                try PrivateKeyring.secretToolStore(
                    label: "person", attributes: [("service", store.service), ("username", "person")],
                    secret: #"{"name":"Cy","age":"8"}"#)
                #expect(
                    await seen.wait(after: count) { $0.value?.alias == "Cy" },
                    "secret-tool's replace is seen: \(seen.all.map(describe))")
            }

            count = seen.all.count
            let clear = try PrivateKeyring.secretTool(
                ["secret-tool", "clear", "service", store.service, "username", "person"], timeout: .seconds(15))
            #expect(clear.status == 0, "\(clear.stderr)")
            #expect(
                await seen.wait(after: count, for: isAbsent), "secret-tool clear is seen: \(seen.all.map(describe))")
        }

        @Test("locking the collection yields locked, never absent, and unlocking yields the record again")
        func locking() async throws {
            let store = try PrivateKeyring.freshStore("updates-lock")
            try store.setData(Data(#"{"name":"Ada","age":"36"}"#.utf8), forKey: "person")
            let seen = SeenUpdates<PersonV3>()
            let consumer = seen.consume(Vault(store: store).updates(of: Person.chain, forKey: "person"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0) { $0.value?.alias == "Ada" }, "\(seen.all.map(describe))")

            let before = seen.all.count
            try PrivateKeyring.whileLocked {
                #expect(
                    seen.waitBlocking(after: before, for: isLocked),
                    "locking is seen as locked: \(seen.all.map(describe))")
            }
            #expect(
                await seen.wait(after: before) { $0.value?.alias == "Ada" },
                "unlocking is seen as the record again: \(seen.all.map(describe))")
            let afterLock = seen.all.dropFirst(before)
            #expect(
                !afterLock.contains(where: isAbsent), "a lock never looks like a deletion: \(seen.all.map(describe))")
            #expect(afterLock.first.map(isLocked) == true, "\(seen.all.map(describe))")
        }

        @Test("the provider restarted while a record is watched comes back, and the watch yields the record again")
        func providerRestart() async throws {
            let store = try PrivateKeyring.freshStore("updates-restart")
            try store.setData(Data(#"{"name":"Ada","age":"36"}"#.utf8), forKey: "person")
            let seen = SeenUpdates<PersonV3>()
            let consumer = seen.consume(Vault(store: store).updates(of: Person.chain, forKey: "person"))
            defer { consumer.cancel() }
            #expect(await seen.wait(after: 0) { $0.value?.alias == "Ada" }, "\(seen.all.map(describe))")

            // KeePassXC is locked before it is stopped (seen as locked), KWallet closed; a
            // gnome-keyring that goes away may be seen as nothing at all. Either way, once the
            // new provider is there the record is read again, and is the latest update.
            try PrivateKeyring.restartDaemon()
            let provider = try Self.providerProcess()
            #expect(
                await seen.wait(after: 0, within: .seconds(15)) { _ in seen.all.last?.value?.alias == "Ada" },
                "after the restart the record is seen again: \(seen.all.map(describe))")
            // The watch's reads after the new provider's arrival do not bring it down (KeePassXC
            // 2.7.4 crashed on them at start-up): the same process still serves the keyring a
            // while later, and the watch sees a write to it.
            try await Task.sleep(for: .seconds(3))
            #expect(try Self.providerProcess() == provider, "the restarted provider (\(provider)) still runs")
            let count = seen.all.count
            try store.setData(Data(#"{"name":"Bea","age":"7"}"#.utf8), forKey: "person")
            #expect(
                await seen.wait(after: count) { $0.value?.alias == "Bea" },
                "a write after the restart is seen: \(seen.all.map(describe))")
        }

        @Test("when the consumer stops, the watch and its D-Bus match rules are released")
        func release() async throws {
            try await Self.settle { try Self.matchRules() == 0 }
            let before = WatchCount.open
            #expect(try Self.matchRules() == 0, "no earlier watch left a match rule")

            let store = try PrivateKeyring.freshStore("updates-release")
            let seen = SeenUpdates<PersonV3>()
            let consumer = seen.consume(Vault(store: store).updates(of: Person.chain, forKey: "person"))
            #expect(await seen.wait(after: 0, for: isAbsent))
            #expect(WatchCount.open == before + 1, "a watch is open while observed")
            #expect(try Self.matchRules() > 0, "the watch's match rules are on the bus")

            consumer.cancel()
            _ = await consumer.value
            try await Self.settle { WatchCount.open == before }
            #expect(WatchCount.open == before, "the watch's thread ended")
            try await Self.settle { try Self.matchRules() == 0 }
            #expect(try Self.matchRules() == 0, "the bus holds none of the watch's match rules")
        }

        /// The process that owns `org.freedesktop.secrets` (`uint32 1234`), or what the bus
        /// said when nobody does.
        static func providerProcess() throws -> String {
            let owner = try Shell.run([
                "gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                "org.freedesktop.secrets"
            ])
            return owner.status == 0 ? owner.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : owner.stderr
        }

        /// Waits up to 2 s for `done`.
        static func settle(_ done: () throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(2)
            while try !done(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        }

        /// The match rules of this process's bus connections that only a keyring watch adds
        /// (`org.keepsake.Keyring` signals), as the bus daemon lists them
        /// (`org.freedesktop.DBus.Debug.Stats.GetAllMatchRules`).
        static func matchRules() throws -> Int {
            let listed = try Shell.run([
                "gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                "/org/freedesktop/DBus",
                "--method", "org.freedesktop.DBus.Debug.Stats.GetAllMatchRules"
            ])
            try #require(listed.status == 0, "the bus lists its match rules: \(listed.stderr)")
            var count = 0
            // `{':1.7': ['type=…', …], …}`: each connection with its rules.
            let entry = /'(:[0-9.]+)': \[([^\]]*)\]/
            for match in listed.stdout.matches(of: entry) {
                let rules = match.output.2.components(separatedBy: "org.keepsake.Keyring").count - 1
                guard rules > 0 else { continue }
                let owner = try Shell.run([
                    "gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                    "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                    String(match.output.1)
                ])
                if owner.stdout.contains("(uint32 \(getpid()),)") { count += rules }
            }
            return count
        }
    }
}
