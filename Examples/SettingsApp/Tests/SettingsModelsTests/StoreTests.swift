import Foundation
import Keepsake
import KeepsakeDefaults
import KeepsakeKeyring
import KeepsakeSodium
import KeepsakeStores
import KeepsakeTestKeyring
import SettingsModels
import Testing

/// What a bare V0 record becomes under ``fixedContext()``.
let migratedV0Envelope = """
    {"data":{"installID":"63B8799E-21DD-8D80-96C2-C5397006E13B","installedAt":"2024-03-01T09:30:00.250Z",\
    "textSize":13,"theme":"dark","window":{"height":600,"width":800}},"schema":"Settings","version":2}
    """

/// Loads a V0 record the store holds under `settings` through a Vault, checks what is written
/// back, loads again, then saves a change and reads it back: the same for every store.
func checkLoadAndSave(_ store: any RecordStore) async throws {
    let vault = Vault(store: store, context: fixedContext())
    let first = try #require(try await vault.load(.settings))
    #expect(first.wasMigrated)
    #expect(first.storedVersion == 0)
    #expect(first.writeBack == .written)
    #expect(first.value == SettingsV2(theme: .dark, textSize: 13, installID: installIDFromID1, installedAt: fixedNow))
    #expect(text(try store.data(forKey: "settings")) == migratedV0Envelope)

    let second = try #require(try await vault.load(.settings))
    #expect(second.wasMigrated == false)
    #expect(second.storedVersion == 2)
    #expect(second.writeBack == .notNeeded)
    #expect(second.value == first.value)
    #expect(text(try store.data(forKey: "settings")) == migratedV0Envelope, "a current record is not rewritten")

    var changed = second.value
    changed.theme = .light
    changed.lastSyncedAt = Date(timeIntervalSince1970: 1_709_290_000)
    try await vault.save(changed, for: .settings)
    #expect(
        text(try store.data(forKey: "settings")) == """
            {"data":{"installID":"63B8799E-21DD-8D80-96C2-C5397006E13B","installedAt":"2024-03-01T09:30:00.250Z",\
            "lastSyncedAt":"2024-03-01T10:46:40.000Z","textSize":13,"theme":"light","window":{"height":600,"width":800}},\
            "schema":"Settings","version":2}
            """)
    #expect(try await vault.value(.settings) == changed)
}

@Suite("Loading and saving Settings through a Vault")
struct StoreTests {
    @Test("defaults suite: a bare V0 record is migrated, written back as the exact envelope, then current")
    func defaultsStore() async throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("settings.json").path
        try Data(#"{"other": "kept", "settings": {"darkMode":true,"fontSize":13}}"#.utf8).write(
            to: URL(fileURLWithPath: path))
        let store = DefaultsStore(path: path)
        try await checkLoadAndSave(store)
        #expect(text(try store.data(forKey: "other")) == #""kept""#, "a plain value beside the record keeps its bytes")
        #expect(try await Vault(store: store).keys() == ["other", "settings"])
    }

    @Test("defaults suite: nothing stored gives the key's defaults and writes nothing; remove deletes the record")
    func defaultsWhenAbsent() async throws {
        let directory = try temporaryDirectory()
        let store = try DefaultsStore(
            suite: "settings", app: Settings.appID,
            environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(store.path == directory.path + "/com.example.settings/settings.json")
        let vault = Vault(store: store, context: fixedContext())
        #expect(try await vault.load(.settings) == nil)
        let value = try await vault.value(.settings)
        #expect(value == RecordKeys.settings.defaultValue)
        #expect(try await vault.keys() == [])
        #expect(!FileManager.default.fileExists(atPath: store.path), "reading the default creates no file")

        try await vault.save(value, for: .settings)
        #expect(try await vault.load(.settings)?.value == value)
        try await vault.remove(.settings)
        #expect(try await vault.keys() == [])
    }

    @Test("encrypted file store: an inline V1 record is migrated and written back encrypted; reopened, it is current")
    func sodiumFileStore() async throws {
        let directory = try temporaryDirectory()
        let storeDirectory = directory.appendingPathComponent("records").path
        let key = MasterKeySource.keyFile(path: directory.appendingPathComponent("records.key").path)
        let created = try SodiumFileStore.create(directory: storeDirectory, key: key)
        try created.setData(Data(try fixtureText("v1-inline").utf8), forKey: "settings")

        // Opened the way the app opens it: from its URI and key file.
        let store = try StoreURI(parsing: "file:" + storeDirectory).open(options: StoreOpenOptions(masterKey: key))
        let vault = Vault(store: store, context: fixedContext())
        let loaded = try #require(try await vault.load(.settings))
        #expect(loaded.wasMigrated)
        #expect(loaded.storedVersion == 1)
        #expect(loaded.writeBack == .written)
        let expected = """
            {"data":{"installID":"0F8C1D52-3B1E-4F0A-9D8E-6A2B7C4E5F10","installedAt":"2023-11-14T22:13:20.000Z",\
            "textSize":15,"theme":"system","window":{"height":600,"width":800}},"schema":"Settings","version":2}
            """
        #expect(text(try store.data(forKey: "settings")) == expected)

        // On disk: one record file, sealed — neither the record nor its key in the clear.
        let files = try FileManager.default.contentsOfDirectory(atPath: storeDirectory).filter { $0.hasSuffix(".ksr") }
        #expect(files.count == 1)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: storeDirectory + "/" + files[0]))
        for plain in ["Settings", "installID", "settings", "0F8C1D52"] {
            #expect(sealed.range(of: Data(plain.utf8)) == nil, "\(plain) is not stored in the clear")
        }

        let reopened = Vault(store: try SodiumFileStore(directory: storeDirectory, key: key), context: fixedContext())
        let again = try #require(try await reopened.load(.settings))
        #expect(again.wasMigrated == false)
        #expect(again.writeBack == .notNeeded)
        #expect(again.value == loaded.value)
        #expect(again.value.installID == UUID(uuidString: "0F8C1D52-3B1E-4F0A-9D8E-6A2B7C4E5F10"))
    }

    @Test("encrypted file store: a V0 record, migrated, saved and read back")
    func sodiumFileStoreV0() async throws {
        let directory = try temporaryDirectory()
        let store = try SodiumFileStore.create(
            directory: directory.appendingPathComponent("records").path,
            key: .keyFile(path: directory.appendingPathComponent("key").path))
        try store.setData(Data(#"{"darkMode":true,"fontSize":13}"#.utf8), forKey: "settings")
        try await checkLoadAndSave(store)
    }
}

/// Every test of the app that talks to the keyring: a private, throwaway one
/// (`TestKeyring.shared()`), never the user's. Serialized, nested suites included, because the
/// trial tests lock the keyring and restart its daemon. Skipped, saying why, where no private
/// keyring can run (gnome-keyring or dbus missing, or a desktop session's bus reachable: then run
/// the tests under `keepsake-test-keyring --keep-home -- swift test`).
@Suite(
    "On a private keyring",
    .serialized,
    .enabled(if: TestKeyring.unavailableReason() == nil, Comment(rawValue: TestKeyring.unavailableReason() ?? ""))
)
struct OnPrivateKeyring {}

extension OnPrivateKeyring {
    @Suite("Loading and saving Settings in the keyring")
    struct KeyringStoreTests {
        @Test("keyring: a bare V0 record is migrated, written back as the exact envelope, then current")
        func keyringStore() async throws {
            _ = try TestKeyring.shared()  // before the first libsecret call of this process
            let service = "\(Settings.appID).test.\(UUID().uuidString.prefix(8))"
            let store = try KeyringStore.open(service: service, timeout: .seconds(10))
            #expect(try store.keys() == [])
            try store.setData(Data(#"{"darkMode":true,"fontSize":13}"#.utf8), forKey: "settings")
            // Also the way the app opens it.
            let opened = try StoreURI(parsing: "keyring:" + service).open()
            #expect(opened.uri == "keyring:" + service)
            try await checkLoadAndSave(opened)
            #expect(try store.keys() == ["settings"])
            try await Vault(store: store).remove(.settings)
            #expect(try store.keys() == [])
        }
    }
}
