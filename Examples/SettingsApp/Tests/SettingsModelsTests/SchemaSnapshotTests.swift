import Foundation
import Keepsake
import KeepsakeTesting
import SettingsModels
import Testing

/// The committed snapshot of the Settings chain: `Schemas/Settings.json` at the package root.
let settingsSchemaFile = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Schemas").appendingPathComponent("Settings.json")

/// A released version is frozen: its records are on users' disks. This fails when one changes;
/// a new version is written into the snapshot, to be committed with it.
@Suite("The Settings schema snapshot")
struct SchemaSnapshotTests {
    @Test("no released Settings version has changed its stored shape")
    func releasedVersionsAreFrozen() throws {
        let report = try SchemaSnapshot.check(Settings.chain, file: settingsSchemaFile)
        #expect(!report.createdFile, "Schemas/Settings.json was missing; it has been written, commit it")
        #expect(report.checked.first == 0)
        #expect(Set(report.checked + report.recorded) == Set(0...Settings.chain.latestVersion))
    }

    @Test(
        "the snapshot holds V2 as stored: a nested window, a UUID, dates, a theme enum (its cases not declared), an optional sync date"
    )
    func v2Shape() throws {
        let snapshot = try JSONDecoder().decode(SchemaSnapshot.self, from: Data(contentsOf: settingsSchemaFile))
        #expect(snapshot.chain == "Settings")
        let v2 = try #require(snapshot.versions.first { $0.version == 2 })
        #expect(v2.type == "SettingsV2")
        #expect(v2.keys == ["installID", "installedAt", "textSize", "theme", "window"])
        #expect(v2.optionalKeys == ["lastSyncedAt"])
        #expect(
            v2.shape
                == RecordShape(fields: [
                    "theme": .required(.rawEnum(.string, values: nil)),
                    "textSize": .required(.integer),
                    "installID": .required(.uuid),
                    "installedAt": .required(.date),
                    "window": .required(
                        .object(RecordShape(fields: ["width": .required(.integer), "height": .required(.integer)]))),
                    "lastSyncedAt": .optional(.date)
                ]))
        #expect(
            snapshot.versions.first { $0.version == 0 }?.shape
                == RecordShape(fields: ["darkMode": .required(.bool), "fontSize": .required(.integer)]))
    }
}
