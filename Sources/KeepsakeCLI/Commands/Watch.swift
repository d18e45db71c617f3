#if CLI
import ArgumentParser
import Dispatch
import Foundation
import Keepsake

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
            let observation = Observation(
                store: migrator.store, look: { key in await Blocking.run { State(migrator: migrator, key: key) } },
                failure: State.init(error:))
            let done = DispatchSemaphore(value: 0)
            let limit = count ?? Int.max
            let key = key
            let task = Task.detached {
                // The library's observation loop, as Vault.updates runs it: this prints what it yields.
                var printed = 0
                func show(_ state: State, key: String) -> Bool {
                    printer.print(state, key: key)
                    printed += 1
                    return printed >= limit
                }
                if let pattern {
                    for await (key, state) in observation.pattern(pattern, element: { (key: $0, state: $1) }) {
                        if show(state, key: key) { break }
                    }
                } else {
                    for await state in observation.key(key) {
                        if show(state, key: key) { break }
                    }
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

        /// What one look at the record found.
        struct State: ObservedLook {
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
            var fingerprint: [UInt8] {
                var fingerprint = Fingerprint()
                fingerprint.add(state)
                fingerprint.add(schema ?? "")
                fingerprint.add(storedVersion.map(String.init) ?? "")
                fingerprint.add(record ?? Data())
                fingerprint.add(error.map { "\($0.code):\($0.message)" } ?? "")
                return fingerprint.bytes
            }

            var observedKind: ObservedKind {
                if error?.code == .timeout { return .timedOut }
                switch state {
                case "absent": return .absent
                case "locked": return .locked
                default: return .other
                }
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
                            record = try JSONParser.parse(bytes)
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
