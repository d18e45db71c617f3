/// A store under `kill -9`, in the crash loop's scratch directory (or a keyring service of its
/// own): seeded with old records, reseeded before each kill, read back after it.
struct RecordStore {
    enum Kind: String, Sendable {
        case defaults, file, keyring
    }

    let kind: Kind
    let records: [SeedRecord]
    let migrate: Migrate
    let scratch: String
    /// Its `--store` URI.
    let uri: String
    /// The directory whose modification time moves at the first write; nil for the keyring.
    let directory: String?
    /// A file store's record file for each key, to spot untouched records without decrypting.
    private var recordFiles: [String: String] = [:]

    init(kind: Kind, records: [SeedRecord], migrate: Migrate, scratch: String, service: String) {
        self.kind = kind
        self.records = records
        self.migrate = migrate
        self.scratch = scratch
        switch kind {
        case .defaults:
            (uri, directory) = ("defaults:\(scratch)/suite/suite.json", "\(scratch)/suite")
        case .file:
            (uri, directory) = ("file:\(scratch)/store", "\(scratch)/store")
        case .keyring:
            (uri, directory) = ("keyring:\(service)", nil)
        }
    }

    var keys: [String] { records.map(\.key) }

    /// `--store URI`, and the key file of a file store.
    var storeArguments: [String] {
        kind == .file ? ["--store", uri, "--key-file", "\(scratch)/key"] : ["--store", uri]
    }

    /// `--model KEY=Person` for every record.
    var modelArguments: [String] { records.flatMap { ["--model", "\($0.key)=Person"] } }

    /// `migrate run` over every record.
    var runArguments: [String] { ["run"] + storeArguments + modelArguments }

    private var suite: String { "\(scratch)/suite/suite.json" }
    private var suiteTemplate: String { "\(scratch)/template.json" }
    private var template: String { "\(scratch)/template" }

    /// Seeds every old record with `migrate put`, from nothing (the keyring: over what is there).
    mutating func seed() throws {
        switch kind {
        case .defaults:
            Files.remove(directory!)
            try Files.makeDirectory(directory!)
        case .file:
            Files.remove(directory!)
            try migrate.must(["init"] + storeArguments)
        case .keyring:
            break
        }
        for record in records {
            let before = kind == .file ? Set(Files.visibleNames(in: directory!)) : []
            try migrate.must(["put", record.key] + storeArguments, stdin: .file(record.fixture))
            if kind == .file {
                let added = Files.visibleNames(in: directory!).filter { !before.contains($0) }
                guard added.count == 1 else { throw Abort(message: "cannot tell \(record.key)'s record file") }
                recordFiles[record.key] = added[0]
            }
        }
    }

    /// Keeps the seeded store as the template `reseed()` copies from.
    func saveTemplate() throws {
        switch kind {
        case .defaults:
            try Files.copyFile(suite, to: suiteTemplate)
        case .file:
            Files.remove(template)
            try Files.makeDirectory(template)
            for name in Files.regularFiles(in: directory!) {
                try Files.copyFile(directory! + "/" + name, to: template + "/" + name, preserving: true)
            }
        case .keyring:
            break
        }
    }

    /// Puts every record back to its old bytes, quickly: the suite and the file store's files
    /// are copied from the template (temporary files beside them are kept, for the next open
    /// to clean); keyring records are put again.
    mutating func reseed() throws {
        switch kind {
        case .defaults:
            try Files.copyFile(suiteTemplate, to: suite)
        case .file:
            for name in Files.regularFiles(in: directory!) where !name.hasPrefix(".tmp-") {
                Files.remove(directory! + "/" + name)
            }
            try Files.copyTree(template, to: directory!)
        case .keyring:
            try seed()
        }
    }

    /// Each record's bytes as stored now; a record that cannot be read is missing. A file
    /// store's record file identical to the seeded one holds the old bytes; any other is
    /// decrypted and read by `migrate get`.
    /// - Throws: `SuiteValues.Malformed` if the defaults suite is not a JSON object.
    func read() throws -> [String: [UInt8]] {
        if kind == .defaults { return try SuiteValues.read(suite, wanted: Set(keys)) }
        var values: [String: [UInt8]] = [:]
        let value = "\(scratch)/value"
        for record in records {
            if let file = recordFiles[record.key], let now = Files.bytes(directory! + "/" + file),
                now == Files.bytes(template + "/" + file)
            {
                values[record.key] = record.bytes
            } else if try migrate.succeeds(["get", record.key] + storeArguments, stdout: .file(value)) {
                values[record.key] = Files.bytes(value)
            }
        }
        return values
    }

    /// `migrate run` to its end.
    func runToEnd() throws { try migrate.must(runArguments) }

    /// Whether every record is migrated: exact bytes for the defaults suite (one read); for the
    /// other stores, `migrate status` must call every record current.
    func isAllMigrated(reference: [String: [UInt8]]) throws -> Bool {
        if kind == .defaults {
            guard let now = try? read() else { return false }
            return keys.allSatisfy { now[$0] != nil && now[$0] == reference[$0] }
        }
        let output = "\(scratch)/status"
        let status = migrate.command(["status", "--json"] + storeArguments + modelArguments)
        _ = try Child.run(status, stdout: .file(output))
        let lines = String(decoding: Files.bytes(output) ?? [], as: UTF8.self).split(separator: "\n")
        return lines.filter { $0.contains(#""state" : "current""#) }.count == records.count
    }

    /// The temporary files beside the records or the suite.
    func leftovers() -> Int {
        switch kind {
        case .defaults: Files.count(in: directory!) { $0.hasPrefix(".suite.json.tmp-") }
        case .file: Files.count(in: directory!) { $0.hasPrefix(".tmp-") }
        case .keyring: 0
        }
    }

    /// One write: a put and a delete of a probe key.
    func probeWrite() throws {
        let probe = "\(scratch)/probe"
        try Files.create(probe, holding: Array("\"probe\"".utf8))
        try migrate.must(["put", "crash-loop-probe"] + storeArguments, stdin: .file(probe))
        try migrate.must(["delete", "crash-loop-probe"] + storeArguments)
    }
}
