import Dispatch
import Foundation
import Keepsake
import Synchronization

/// The contract every `ObservableStore` keeps, as checks any test framework can run:
/// its hints, and `Vault.updates` over them, see every write by another instance.
///
/// Run each check on a new, empty store of the backend under test, with a second instance on
/// the same storage (another store object, as another process would open it) as the writer:
///
/// ```swift
/// import Testing
/// import KeepsakeTesting
///
/// @Test("MyStore keeps the observable store contract", arguments: ObservableStoreContract.checks)
/// func observable(_ check: ObservableStoreContract.Check) async throws {
///     let store = try MyStore(temporary: true)
///     try await check.run(on: store, writer: MyStore(sameStorageAs: store))
/// }
/// ```
///
/// A check throws ``ContractViolation`` naming what the store did wrong. Each waits up to
/// `within` (10 s by default) for what it expects; a store that polls (OpenBao's watch lists
/// once a second) needs no more. The writes are made off Swift's cooperative pool.
public enum ObservableStoreContract {
    /// One named check of the contract.
    public struct Check: Sendable, CustomStringConvertible {
        /// What the check checks, in a sentence.
        public let name: String
        let body:
            @Sendable (_ store: any ObservableStore, _ writer: any RecordStore, _ bound: Duration) async throws -> Void

        /// Runs the check on `store`, which must be empty, writing through `writer` (another
        /// instance on the same storage; `store` itself when `nil`), waiting up to `bound` for
        /// each thing it expects to see.
        public func run(
            on store: any ObservableStore, writer: (any RecordStore)? = nil, within bound: Duration = .seconds(10)
        ) async throws {
            try await body(store, writer ?? store, bound)
        }

        public var description: String { name }
    }

    /// The record the checks write: a number under a key.
    public struct Tick: ModelVersion, Equatable {
        public static let version = 0
        /// The number.
        public var tick: Int

        /// A tick of `tick`.
        public init(tick: Int) { self.tick = tick }
    }

    /// The chain of ``Tick``, under the default key `tick`.
    public static let tickChain = ModelChain<Tick>(name: "Tick", defaultKeys: ["tick"])

    /// Every check of the contract.
    public static let checks: [Check] = [
        Check(name: "a write by another instance is hinted: the key itself, or any record") { store, writer, bound in
            let hints = UpdateRecorder<StoreChange>()
            let consumer = hints.consume(try store.changes())
            defer { consumer.cancel() }
            try await save(3, as: "tick", to: writer)
            let hinted = await hints.wait(after: 0, within: bound) { hint in
                if case let .key(key) = hint { return key.utf8.elementsEqual("tick".utf8) }
                return hint == .any
            }
            try expect(hinted, "no hint for a write to 'tick' within \(bound); hints: \(hints.all)")
        },
        Check(name: "updates: absent first, then each value written and the removal, in order") {
            store, writer, bound in
            let (seen, consumer) = try await watchAbsent(store, key: "tick", within: bound)
            defer { consumer.cancel() }
            for tick in 1...3 {
                try await save(tick, as: "tick", to: writer)
                try expect(
                    await seen.wait(after: 0, within: bound) { $0.value?.tick == tick },
                    "the write of \(tick) was not seen: \(describe(seen.all))")
            }
            try await offPool { try writer.removeData(forKey: "tick") }
            try expect(
                await seen.wait(after: 4, within: bound, for: isAbsent),
                "the removal was not seen: \(describe(seen.all))")
            try expectEqual(describe(seen.all), "absent 1 2 3 absent", "the updates")
        },
        Check(name: "a burst of 100 writes: the last is seen, and never an older value after a newer") {
            store, writer, bound in
            let (seen, consumer) = try await watchAbsent(store, key: "tick", within: bound)
            defer { consumer.cancel() }
            try await offPool {
                let vault = Vault(store: writer)
                for tick in 1...100 { try vault.save(Tick(tick: tick), for: RecordKey(chain: tickChain)) }
            }
            try expect(
                await seen.wait(after: 0, within: bound) { $0.value?.tick == 100 },
                "the last write was not seen: \(describe(seen.all))")
            let ticks = seen.all.compactMap(\.value?.tick)
            try expect(ticks == ticks.sorted(), "an older value after a newer one: \(ticks)")
            try expect(Set(ticks).count == ticks.count, "a value yielded twice: \(ticks)")
        },
        Check(name: "writes to other keys, and to the same text in other bytes (café decomposed), yield nothing") {
            store, writer, bound in
            let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
            let (seen, consumer) = try await watchAbsent(store, key: composed, within: bound)
            defer { consumer.cancel() }
            try await save(7, as: decomposed, to: writer)
            try await save(8, as: "other", to: writer)
            try await save(9, as: composed, to: writer)
            try expect(
                await seen.wait(after: 0, within: bound) { $0.value?.tick == 9 },
                "the write to the key was not seen: \(describe(seen.all))")
            try expectEqual(describe(seen.all), "absent 9", "the updates of '\(composed)'")
        },
        Check(name: "a pattern: every matching record now, each later change, a removal once, other keys never") {
            store, writer, bound in
            try await save(1, as: "t-a", to: writer)
            let seen = UpdateRecorder<KeyedRecordUpdate<Tick>>()
            let consumer = seen.consume(Vault(store: store).updates(of: tickChain, matching: "t-*"))
            defer { consumer.cancel() }
            func describe(_ updates: [KeyedRecordUpdate<Tick>]) -> String {
                updates.map { "\($0.key)=\(ObservableStoreContract.describe([$0.update]))" }.joined(separator: " ")
            }
            try expect(
                await seen.wait(after: 0, within: bound) { $0.key == "t-a" && $0.update.value?.tick == 1 },
                "the record stored before was not seen: \(describe(seen.all))")
            try await save(2, as: "t-b", to: writer)
            try await save(3, as: "u-x", to: writer)
            try expect(
                await seen.wait(after: 0, within: bound) { $0.key == "t-b" && $0.update.value?.tick == 2 },
                "a new matching record was not seen: \(describe(seen.all))")
            try await offPool { try writer.removeData(forKey: "t-a") }
            try expect(
                await seen.wait(after: 0, within: bound) { $0.key == "t-a" && isAbsent($0.update) },
                "the removal was not seen: \(describe(seen.all))")
            try await save(4, as: "t-b", to: writer)
            try expect(
                await seen.wait(after: 0, within: bound) { $0.key == "t-b" && $0.update.value?.tick == 4 },
                "a change was not seen: \(describe(seen.all))")
            try expectEqual(describe(seen.all), "t-a=1 t-b=2 t-a=absent t-b=4", "the updates of t-*")
        },
        Check(name: "a watch stopped and another started: the new one sees changes, twenty times over") {
            store, writer, bound in
            for round in 1...20 {
                let seen = UpdateRecorder<RecordUpdate<Tick>>()
                let consumer = seen.consume(Vault(store: store).updates(for: RecordKey(chain: tickChain)))
                try expect(
                    await seen.wait(after: 0, within: bound) { _ in true }, "round \(round): nothing yielded first")
                try await save(round, as: "tick", to: writer)
                try expect(
                    await seen.wait(after: 0, within: bound) { $0.value?.tick == round },
                    "round \(round): the write was not seen: \(describe(seen.all))")
                consumer.cancel()
                _ = await consumer.value
            }
        }
    ]

    /// `absent 1 2 3`, `unreadable:corruptRecord`: updates as a line, for messages and comparisons.
    static func describe(_ updates: [RecordUpdate<Tick>]) -> String {
        updates.map { update in
            switch update {
            case let .record(record): "\(record.value.tick)"
            case .absent: "absent"
            case let .unreadable(error): "unreadable:\(error.code)"
            case let .locked(error): "locked:\(error.code)"
            case let .failed(error): "failed:\(error.code)"
            }
        }.joined(separator: " ")
    }

    /// Starts recording `Vault.updates` of the ``Tick`` under `key`, and checks that the first
    /// update says nothing is stored.
    static func watchAbsent(
        _ store: any ObservableStore, key: String, within bound: Duration
    ) async throws -> (UpdateRecorder<RecordUpdate<Tick>>, Task<Void, Never>) {
        let seen = UpdateRecorder<RecordUpdate<Tick>>()
        let consumer = seen.consume(Vault(store: store).updates(of: tickChain, forKey: key))
        guard await seen.wait(after: 0, within: bound, for: isAbsent) else {
            consumer.cancel()
            throw ContractViolation("not absent first: \(describe(seen.all))")
        }
        return (seen, consumer)
    }

    static func isAbsent(_ update: RecordUpdate<Tick>) -> Bool {
        if case .absent = update { return true }
        return false
    }

    static func save(_ tick: Int, as key: String, to writer: any RecordStore) async throws {
        try await offPool { try Vault(store: writer).save(Tick(tick: tick), in: tickChain, forKey: key) }
    }

    /// Runs `work` on a thread of its own (`Blocking`), so that a store's blocking call never
    /// holds Swift's cooperative pool (which the watch under test needs).
    static func offPool(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Blocking.start { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// What a consumer of an asynchronous sequence has seen so far: for tests that wait for an
/// update, a hint or a line to arrive.
///
/// ```swift
/// let seen = UpdateRecorder<RecordUpdate<Settings>>()
/// let consumer = seen.consume(vault.updates(for: .settings))
/// defer { consumer.cancel() }
/// #expect(await seen.wait(after: 0) { $0.value?.theme == .dark })
/// ```
public final class UpdateRecorder<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])

    /// An empty recorder.
    public init() {}

    /// Every element seen so far, in order.
    public var all: [Element] { elements.withLock { $0 } }

    /// Records what `sequence` yields, on a task of its own, until the sequence ends or the
    /// task is cancelled.
    public func consume<S: AsyncSequence & Sendable>(_ sequence: S) -> Task<Void, Never> where S.Element == Element {
        Task {
            do {
                for try await element in sequence { elements.withLock { $0.append(element) } }
            } catch {
                // A throwing sequence ended with an error: what it yielded before is recorded.
            }
        }
    }

    /// Waits up to `bound` for an element `matches` accepts among those after the first
    /// `after`; whether one came.
    public func wait(
        after: Int, within bound: Duration = .seconds(5), for matches: (Element) -> Bool
    ) async -> Bool {
        let deadline = ContinuousClock.now + bound
        while true {
            if all.dropFirst(after).contains(where: matches) { return true }
            if ContinuousClock.now >= deadline { return false }
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                return all.dropFirst(after).contains(where: matches)  // cancelled: one last look
            }
        }
    }

    /// Like ``wait(after:within:for:)``, blocking the calling thread (for synchronous code).
    public func waitBlocking(
        after: Int, within bound: Duration = .seconds(5), for matches: (Element) -> Bool
    ) -> Bool {
        let deadline = ContinuousClock.now + bound
        while true {
            if all.dropFirst(after).contains(where: matches) { return true }
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
