import FileKit
import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeSodium
import Logging
import Migrations
import Synchronization
import Testing

@testable import KeepsakeCLI

/// Every log line of this test process, rendered in full (level, label, message, metadata).
/// swift-log allows one bootstrap per process; this suite's is the only one in the test bundle.
final class CapturedLog: Sendable {
    static let shared: CapturedLog = {
        let log = CapturedLog()
        LoggingSystem.bootstrap { label in Handler(label: label, sink: log) }
        return log
    }()

    private let lines = Mutex<[String]>([])

    var all: [String] { lines.withLock { $0 } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }

    struct Handler: LogHandler {
        let label: String
        let sink: CapturedLog
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            sink.append(
                CLILogHandler.format(
                    level: event.level, label: label, message: event.message,
                    metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }
}

@Suite("logging: what is migrated, written and waited for; never a secret")
struct LoggingTests {
    /// A value no log line may hold: in records, in a passphrase.
    static let secret = "s3cret-Ada-7f1e9c"
    static let passphrase = "pass-phrase-0c4d2b"

    @Test(
        "a migration, a write-back, a save and a rekey log at their levels, and no line holds a secret, a value or key material"
    )
    func noSecretInLogs() throws {
        let log = CapturedLog.shared
        let directory = try Suite().directory

        // A defaults suite of old records holding the secret, migrated by a run.
        let suitePath = directory + "/suite.json"
        try Data(
            #"{"person": {"name":"\#(Self.secret)","age":"36"}, "friend": {"name":"\#(Self.secret)-2","age":"7"}}"#
                .utf8
        ).write(to: URL(fileURLWithPath: suitePath))
        let defaults = DefaultsStore(path: suitePath)
        let migrator = Migrator(
            store: defaults, chains: SampleModels.all, context: .live(deviceIdentity: "d"),
            keyModels: ["friend": "Person"])
        let reports = try migrator.run()
        #expect(reports.map(\.state) == [.migrated, .migrated])

        // The front door: an old record migrated on read and written back; then a save.
        try defaults.setData(Data(#"{"name":"\#(Self.secret)-3","age":"1"}"#.utf8), forKey: "third")
        let vault = Vault(store: defaults, context: .live(deviceIdentity: "d"))
        let loaded = try #require(try vault.load(Person.chain, forKey: "third"))
        #expect(loaded.value.alias == Self.secret + "-3")
        try vault.save(
            PersonV3(alias: Self.secret + "-4", email: Self.secret + "@example.com"), in: Person.chain,
            forKey: "third")

        // An encrypted store behind a passphrase: records saved, migrated, the passphrase changed.
        let file = try SodiumFileStore.create(
            directory: directory + "/records",
            key: .passphrase(SecureBytes(copying: Array(Self.passphrase.utf8)), origin: "test"),
            passphraseLimits: .interactive)
        try file.setData(Data(#"{"name":"\#(Self.secret)-5","age":"2"}"#.utf8), forKey: "person")
        let keyPath = directory + "/new.key"
        _ = try Migrator(store: file, chains: SampleModels.all, context: .live(deviceIdentity: "d")).run()
        try file.changeMasterKey(to: .keyFile(path: keyPath))
        let keyBytes = try Data(contentsOf: URL(fileURLWithPath: keyPath))

        let lines = log.all
        let mine = lines.filter { $0.contains(directory) }
        // Quiet by default: every one of these routine events is at debug or below, so an app
        // that never sets up logging (swift-log's default handler prints info and above) sees none.
        #expect(
            !mine.contains { line in ["info ", "notice ", "warning ", "error "].contains { line.hasPrefix($0) } },
            "\(mine.filter { !$0.hasPrefix("debug ") && !$0.hasPrefix("trace ") })")
        #expect(
            mine.contains { $0.hasPrefix("debug keepsake.engine: migration run finished: 2 migrated") },
            "\(mine)")
        #expect(
            mine.contains {
                $0.hasPrefix("debug keepsake.engine: record migrated and written back")
                    && $0.contains("key=friend") && $0.contains("from=0") && $0.contains("to=3")
            })
        #expect(
            mine.contains {
                $0.hasPrefix("debug keepsake.engine: migrated record written back") && $0.contains("key=third")
            })
        #expect(mine.contains { $0.hasPrefix("debug keepsake.sodium: encrypted store created") })
        #expect(
            mine.contains {
                $0.hasPrefix("debug keepsake.sodium: master key changed") && $0.contains("keyGeneration=2")
            }
        )

        // Nothing secret anywhere in what the whole process logged.
        let forbidden = [
            Self.secret, Self.passphrase, keyBytes.base64EncodedString(),
            keyBytes.map { String(format: "%02x", $0) }.joined()
        ]
        for line in lines {
            for secret in forbidden {
                #expect(!line.contains(secret), "a log line holds a secret: \(line)")
            }
        }
        // And the stored data does hold the secret, so the check above could fail.
        #expect(try String(contentsOfFile: suitePath, encoding: .utf8).contains(Self.secret))
    }

    @Test("a record changed between read and write-back logs a conflict, naming the key only")
    func conflictIsLogged() throws {
        let log = CapturedLog.shared
        let suite = try Suite(#"{"person": {"name":"\#(Self.secret)","age":"36"}}"#)
        let store = DefaultsStore(path: suite.path)
        // The store's copy changes after the migrator read it: a store wrapper that rewrites the
        // record just before the batch is committed.
        let racing = RacingStore(base: store) {
            try store.setData(Data(#"{"name":"\#(Self.secret)-x","age":"1"}"#.utf8), forKey: "person")
        }
        let reports = try Migrator(store: racing, chains: SampleModels.all, context: .live(deviceIdentity: "d")).run()
        // Still outdated as the other writer left it: migrated again from its bytes.
        #expect(reports.first?.state == .migrated)
        #expect(reports.first?.error == nil)
        let lines = log.all.filter { $0.contains(suite.path) }
        let logged = "record changed while it was being migrated; migrated again from the other writer's version"
        #expect(
            lines.contains { $0.hasPrefix("debug keepsake.engine: " + logged) && $0.contains("key=person") },
            "\(lines)")
        #expect(!lines.contains { $0.contains(Self.secret) })
    }

    @Test("waiting for a store's lock is logged, and giving up on it too (at debug: the caller throws lockTimeout)")
    func lockWait() throws {
        let log = CapturedLog.shared
        let suite = try Suite("{}")
        let held = try #require(try StoreLock.acquire(suite.path + ".lock", timeout: .zero))
        defer { held.unlock() }
        let store = DefaultsStore(path: suite.path, lockTimeout: .milliseconds(50))
        #expect(throws: KeepsakeError.self) { try store.setData(Data("1".utf8), forKey: "k") }
        let lines = log.all.filter { $0.contains(suite.path + ".lock") }
        #expect(lines.contains { $0.hasPrefix("debug keepsake.engine: waiting for a store's lock") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("debug keepsake.engine: gave up waiting for a store's lock after") })
    }

    @Test("the CLI logs with --verbose, not by default, and never a secret even at trace")
    func cliLevels() throws {
        let suite = try Suite(#"{"person": {"name":"\#(Self.secret)","age":"36"}}"#)
        let quiet = try suite.run("status")
        #expect(!quiet.stderr.contains("keepsake."), "\(quiet.stderr)")
        let verbose = try suite.run("run", ["--verbose"])
        #expect(verbose.status == 0)
        #expect(
            verbose.stderr.contains("debug keepsake.engine: migration run finished: 1 migrated [store=\(suite.store)]"),
            "\(verbose.stderr)")
        #expect(
            verbose.stderr.contains("debug keepsake.engine: record migrated and written back [from=0 key=person"),
            "\(verbose.stderr)")
        try Data(#"{"person": {"name":"\#(Self.secret)","age":"36"}}"#.utf8).write(to: URL(fileURLWithPath: suite.path))
        let trace = try runBinary(
            migrateBinary, ["run", "--store", suite.store, "--device-id", "d"],
            environment: ["KEEPSAKE_LOG_LEVEL": "trace"])
        #expect(trace.stderr.contains("debug keepsake.engine: record migrated and written back"), "\(trace.stderr)")
        #expect(!trace.stderr.contains(Self.secret))
        #expect(!trace.stdout.contains(Self.secret))
        let both = try suite.run("status", ["--verbose", "--quiet"])
        #expect(both.status == 64)
    }

    @Test("an app that bootstraps swift-log itself keeps its own handler (MigrateCommand does not bootstrap again)")
    func appsOwnLogging() throws {
        let suite = try Suite(#"{"note": {"text":"\#(Self.secret)"}}"#)
        let result = try runBinary(
            customMigrateBinary, ["run", "--store", suite.store, "--device-id", "d"],
            environment: ["CUSTOM_MIGRATE_OWN_LOGGING": "1"])
        #expect(result.status == 0, "\(result.stderr)")
        // swift-log's own stream handler, not the CLI's format.
        #expect(
            result.stderr.contains(
                "debug keepsake.engine: store=\(suite.store) [Keepsake] migration run finished: 1 migrated"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("debug keepsake.engine: migration run finished"), "the CLI's handler was used")
        #expect(!result.stderr.contains(Self.secret))
    }

    @Test("the level follows --verbose, --quiet and KEEPSAKE_LOG_LEVEL")
    func levels() {
        #expect(CLILogHandler.level(verbose: false, quiet: false, environment: [:]) == .error)
        #expect(CLILogHandler.level(verbose: true, quiet: false, environment: [:]) == .debug)
        #expect(CLILogHandler.level(verbose: false, quiet: true, environment: [:]) == .critical)
        #expect(
            CLILogHandler.level(verbose: false, quiet: true, environment: ["KEEPSAKE_LOG_LEVEL": "DEBUG"]) == .debug)
        #expect(CLILogHandler.level(verbose: true, quiet: false, environment: ["KEEPSAKE_LOG_LEVEL": "loud"]) == .debug)
    }
}

/// A store that runs `interfere` once, just before its first batch of writes: how a test makes
/// a record change between a migrator's read and its write. `@unchecked Sendable`: its one
/// mutable property is read and cleared by `commit`, which the single migrator that uses it
/// calls once, from one thread.
private final class RacingStore: RecordStore, @unchecked Sendable {
    let base: any RecordStore
    private var interfere: (() throws -> Void)?

    init(base: any RecordStore, interfere: @escaping () throws -> Void) {
        self.base = base
        self.interfere = interfere
    }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func allData() throws(KeepsakeError) -> [(key: String, data: Data)] { try base.allData() }
    func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        try base.allRecords()
    }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        if let interfere {
            self.interfere = nil
            do { try interfere() } catch { Issue.record("interfering write failed: \(error)") }
        }
        return try base.commit(writes)
    }
}
