import Foundation
import Keepsake
import KeepsakeDefaults
import Synchronization

// `held-defaults:PATH`, registered only with CUSTOM_MIGRATE_HOLD_COMMIT=PREFIX: the defaults suite
// at PATH, whose every batch of writes (`RecordStore.commit`) is held back — after `run` has read
// and migrated its records — until the test has written to the suite as another writer would.
// Before batch N it prints `holding commit N` on standard error and waits until a file exists
// at PREFIX.N; then the batch goes to the suite. So a test makes the race of `migrate run` with
// an app instance happen every time, through the binary, with real processes on a real suite.

/// The backend of `held-defaults:` (see above).
struct HeldDefaultsBackend: StoreBackend {
    let scheme: StoreURI.Scheme = "held-defaults"
    let locationName = "PATH"
    let summary = "a defaults suite whose writes wait for a test (custom-migrate only)"
    /// Where the files that let each batch go are made: PREFIX.1, PREFIX.2…
    let resumePrefix: String
    var locationIsPath: Bool { true }

    func open(_ uri: StoreURI, options: StoreOpenOptions) throws(KeepsakeError) -> any RecordStore {
        HeldCommitStore(base: DefaultsStore(path: uri.location), resumePrefix: resumePrefix)
    }
}

/// A defaults suite whose batches wait for the test (see above); it reads as the suite itself.
final class HeldCommitStore: RecordStore {
    let base: DefaultsStore
    let resumePrefix: String
    private let batches = Mutex(0)

    init(base: DefaultsStore, resumePrefix: String) {
        self.base = base
        self.resumePrefix = resumePrefix
    }

    var uri: String { base.uri }
    var capabilities: StoreCapabilities { base.capabilities }
    var identity: String { base.identity }
    var defaultBackupDirectory: String? { base.defaultBackupDirectory }
    func data(forKey key: String) throws(KeepsakeError) -> Data? { try base.data(forKey: key) }
    func keys() throws(KeepsakeError) -> [String] { try base.keys() }
    func allData() throws(KeepsakeError) -> [(key: String, data: Data)] { try base.allData() }
    func allRecords() throws(KeepsakeError) -> [(key: String, result: Result<Data, KeepsakeError>)] {
        try base.allRecords()
    }
    func forEachRecord(
        _ body: (_ count: Int, _ key: String, _ result: Result<Data, KeepsakeError>) -> Void
    ) throws(KeepsakeError) {
        try base.forEachRecord(body)
    }
    func commit(_ writes: [StoreWrite]) throws(KeepsakeError) -> [StoreWriteResult] {
        let batch = batches.withLock {
            $0 += 1
            return $0
        }
        FileHandle.standardError.write(Data("holding commit \(batch)\n".utf8))
        let resume = resumePrefix + ".\(batch)"
        let deadline = ContinuousClock.now + .seconds(300)  // a test that died lets no process hang for ever
        while !FileManager.default.fileExists(atPath: resume) {
            guard ContinuousClock.now < deadline else {
                FileHandle.standardError.write(Data("gave up waiting for \(resume)\n".utf8))
                exit(1)
            }
            usleep(10_000)
        }
        return try base.commit(writes)
    }
}
