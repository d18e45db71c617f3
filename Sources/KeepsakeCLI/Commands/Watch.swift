#if CLI
import ArgumentParser
import Dispatch
import Foundation
import Keepsake
import Synchronization

extension Migrate {
    struct Watch: MigratorCommand {
        static var configuration: CommandConfiguration {
            cachedConfiguration {
                CommandConfiguration(
                    abstract: "Print a record now, then each time any writer changes it; nothing is written.",
                    usage: "\(CLI.name) watch <key> --store <uri> [--count <n>] [<options>]",
                    discussion: """
                        Each change by any writer — the app, another process, another instance — is read again and migrated in memory, and printed when it differs from the one before (the same record rewritten is not printed again). A record that cannot be read, a locked keyring and an unreachable store are printed as what they are, and the watch goes on. Stops on Ctrl-C, or after --count changes.

                        A KEY ending in * is a pattern: every record whose key starts with what comes before it is printed now, then each one any writer adds, changes or removes (removed: printed as absent, once).

                        With --json: one JSON object per line: {"store", "key", "state" (absent, current, outdated, newer, newerReadable, unreadable, unmanaged, locked, failed), "schema", "storedVersion", "latestVersion", "record": the record at its latest version or null, "error": an error object or null}.
                        """)
            }
        }

        @OptionGroup var store: StoreLocationOptions<TheStore>
        @OptionGroup var keyring: KeyringTimeoutOptions
        @OptionGroup var models: ModelMappingOptions
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        @Argument(
            help: "The record's key; a key ending in * is a pattern ('tenant-*': every record whose key starts so).",
            completion: Completions.key)
        var key: String

        @Option(
            name: .long,
            help: ArgumentHelp("Stop after printing this many states (the first included).", valueName: "n"))
        var count: Int?

        func validate() throws {
            if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        }

        func run() throws {
            let mapping = try models.mapping()
            let migrator = Migrator(
                store: try store.open(keyringTimeout: keyring.timeout()), chains: CLI.chains,
                context: device.context(), keyModels: mapping.keys, patternModels: mapping.patterns)
            let printer = Printer(json: output.json, store: migrator.store.uri)
            let pattern: KeyPattern?
            do throws(KeepsakeError) {
                pattern = KeyPattern.isPattern(key) ? try KeyPattern(parsing: key) : nil
            } catch {
                throw usageError(error.message)
            }
            let done = DispatchSemaphore(value: 0)
            let limit = count
            let key = key
            let task = Task.detached {
                if let pattern {
                    await Self.watch(migrator, pattern: pattern, limit: limit, printer: printer)
                } else {
                    await Self.watch(migrator, key: key, limit: limit, printer: printer)
                }
                done.signal()
            }
            // Ctrl-C ends the watch cleanly: the stream's consumer stops and its watch is released.
            signal(SIGINT, SIG_IGN)
            let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
            interrupt.setEventHandler { task.cancel() }
            interrupt.resume()
            done.wait()
            interrupt.cancel()
        }

        /// Prints the record now and after each hint that changed it, until `limit` states were
        /// printed or the task is cancelled.
        private static func watch(_ migrator: Migrator, key: String, limit: Int?, printer: Printer) async {
            var printed = 0
            var last: String?
            func refresh() async -> Bool {
                let state = await look(migrator, key: key)
                if Task.isCancelled { return true }
                guard state.fingerprint != last else { return false }
                last = state.fingerprint
                printer.print(state, key: key)
                printed += 1
                return limit.map { printed >= $0 } ?? false
            }
            var changes: StoreChanges?
            if let observable = migrator.store as? any ObservableStore {
                do throws(KeepsakeError) {
                    changes = try observable.changes()
                } catch {
                    printer.print(State(error: error), key: key)
                }
            }
            if await refresh() { return }
            if let changes {
                // Coalesced: a flood of hints costs a read in flight and one after it.
                for await _ in changes.wakeUps(forKey: key) {
                    if await refresh() { return }
                }
            } else {
                while !Task.isCancelled {
                    do { try await Task.sleep(for: Vault.updatesPollInterval) } catch { return }
                    if await refresh() { return }
                }
            }
        }

        /// Prints every record `pattern` matches now, then each one any writer changes (a record
        /// removed as `absent`, once), until `limit` states were printed or the task is cancelled.
        private static func watch(_ migrator: Migrator, pattern: KeyPattern, limit: Int?, printer: Printer) async {
            var printed = 0
            var last: [[UInt8]: String] = [:]  // each key's bytes → the fingerprint printed last
            func show(_ state: State, key: String) -> Bool {
                printer.print(state, key: key)
                printed += 1
                return limit.map { printed >= $0 } ?? false
            }
            /// Looks at `keys` again and prints those that changed; `true` once `limit` is reached.
            func refresh(_ keys: [String]) async -> Bool {
                for key in keys {
                    if Task.isCancelled { return true }
                    let state = await look(migrator, key: key)
                    let bytes = Array(key.utf8)
                    if state.state == "absent" {
                        guard last.removeValue(forKey: bytes) != nil else { continue }  // never seen: nothing to say
                    } else {
                        guard state.fingerprint != last[bytes] else { continue }
                        last[bytes] = state.fingerprint
                    }
                    if show(state, key: key) { return true }
                }
                return false
            }
            /// Lists the keys the pattern matches and looks at them and at those seen before.
            func rescan() async -> Bool {
                let listed = await Blocking.run { () -> Result<[String], KeepsakeError> in
                    do throws(KeepsakeError) {
                        return .success(try migrator.store.keys(matching: pattern))
                    } catch {
                        return .failure(error)
                    }
                }
                switch listed {
                case let .failure(error):
                    return show(State(error: error), key: pattern.description)
                case let .success(keys):
                    let listedBytes = Set(keys.map { Array($0.utf8) })
                    let gone = last.keys.filter { !listedBytes.contains($0) }.map {
                        String(decoding: $0, as: UTF8.self)
                    }
                    return await refresh(keys + gone.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
                }
            }
            var changes: StoreChanges?
            if let observable = migrator.store as? any ObservableStore {
                do throws(KeepsakeError) {
                    changes = try observable.changes()
                } catch {
                    if show(State(error: error), key: pattern.description) { return }
                }
            }
            if await rescan() { return }
            guard let changes else {
                while !Task.isCancelled {
                    do { try await Task.sleep(for: Vault.updatesPollInterval) } catch { return }
                    if await rescan() { return }
                }
                return
            }
            // Coalesced: hints gather while a look is made; more than `PendingKeys.limit` keys,
            // or a hint that names none, is one rescan.
            let pending = PendingKeys()
            let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let pump = Task {
                for await change in changes {
                    if case let .key(key) = change, !pattern.matches(key) { continue }
                    pending.add(change)
                    wake.yield(())
                }
                wake.finish()
            }
            defer { pump.cancel() }
            for await _ in wakeUps {
                let finished: Bool
                if let keys = pending.take() { finished = await refresh(keys) } else { finished = await rescan() }
                if finished { return }
            }
        }

        /// The record under `key` as it is now; a read that timed out says how the call went,
        /// not what the store holds, so it is made again, as `Vault.updates` does, before it counts.
        private static func look(_ migrator: Migrator, key: String) async -> State {
            var state = await Blocking.run { State(migrator: migrator, key: key) }
            var retries = 0
            while state.error?.code == .timeout, retries < Vault.timeoutRereads {
                retries += 1
                do { try await Task.sleep(for: .milliseconds(100 * retries)) } catch { return state }
                state = await Blocking.run { State(migrator: migrator, key: key) }
            }
            return state
        }

        /// The keys hints named since the last look, or "every key" (`nil`).
        final class PendingKeys: Sendable {
            /// More keys than this waiting are one rescan.
            static let limit = 1_024
            private let keys = Mutex<(keys: [String], all: Bool)>(([], false))

            func add(_ change: StoreChange) {
                keys.withLock { pending in
                    guard !pending.all else { return }
                    if case let .key(key) = change, pending.keys.count < Self.limit {
                        if !pending.keys.contains(where: { $0.utf8.elementsEqual(key.utf8) }) {
                            pending.keys.append(key)
                        }
                    } else {
                        pending = ([], true)
                    }
                }
            }

            /// What gathered, emptied: the keys, or `nil` for a rescan.
            func take() -> [String]? {
                keys.withLock { pending in
                    defer { pending = ([], false) }
                    return pending.all ? nil : pending.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                }
            }
        }

        /// What one look at the record found.
        struct State: Sendable {
            var state: String
            var schema: String?
            var storedVersion: Int?
            var latestVersion: Int?
            var record: Data?
            var error: KeepsakeError?

            init(state: String, error: KeepsakeError? = nil) {
                self.state = state
                self.error = error
            }

            init(migrator: Migrator, key: String) {
                let found: (report: RecordReport, latest: Data?)?
                do throws(KeepsakeError) {
                    found = try migrator.preview(key: key)
                } catch {
                    self.init(error: error)
                    return
                }
                guard let (report, latest) = found else {
                    self.init(state: "absent")
                    return
                }
                self.init(state: report.state.rawValue, error: report.error)
                schema = report.schema
                storedVersion = report.storedVersion
                latestVersion = report.latestVersion
                record = latest
            }

            init(error: KeepsakeError) {
                self.init(state: error.code == .locked ? "locked" : "failed", error: error)
            }

            /// Equal for two looks that found the same thing.
            var fingerprint: String {
                [
                    state, schema ?? "", storedVersion.map(String.init) ?? "",
                    record.map { $0.base64EncodedString() } ?? "", error.map { "\($0.code):\($0.message)" } ?? ""
                ].joined(separator: "|")
            }
        }

        /// Prints states as table lines or JSON lines.
        struct Printer: Sendable {
            let json: Bool
            let store: String

            func print(_ state: State, key: String) {
                if json {
                    var record: JSONValue?
                    if let bytes = state.record {
                        do {
                            record = try JSONDecoder().decode(JSONValue.self, from: bytes)
                        } catch {
                            record = .string(String(decoding: bytes, as: UTF8.self))  // shown as text, never dropped
                        }
                    }
                    let line: JSONValue = [
                        "store": .string(store), "key": .string(key), "state": .string(state.state),
                        "schema": JSONValue(state.schema), "storedVersion": JSONValue(state.storedVersion),
                        "latestVersion": JSONValue(state.latestVersion), "record": record ?? .null,
                        "error": state.error?.json ?? .null
                    ]
                    // One compact line per state (JSON Lines), keys sorted.
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    do {
                        writeJSON(try encoder.encode(line))
                    } catch {
                        printError("error: cannot encode the state of \(key) as JSON: \(error)")
                    }
                    return
                }
                var text = "\(key): \(state.state)"
                if let schema = state.schema {
                    text += " \(schema) v\(state.storedVersion.map(String.init) ?? "?")"
                    if let latest = state.latestVersion, latest != state.storedVersion { text += " → v\(latest)" }
                }
                if let error = state.error { text += " — \(error.message)" }
                say(text)
                if let record = state.record { say(String(decoding: record, as: UTF8.self)) }
            }
        }
    }
}
#endif
