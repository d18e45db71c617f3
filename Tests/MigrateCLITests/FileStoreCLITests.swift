import Foundation
import Testing

@Suite("migrate CLI on an encrypted file: store")
struct FileStoreCLITests {
    /// A new directory for a store and its key.
    func workspace(_ function: String = #function) throws -> String {
        let suite = try Suite(function: function)
        return suite.directory
    }

    @Test("init, put old records, run, get: Person and TrialInfo migrate end to end")
    func endToEnd() throws {
        let directory = try workspace()
        let store = "file:\(directory)/records"
        let key = ["--key-file", directory + "/records.key"]
        let created = try migrate(["init", "--store", store] + key)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.hasPrefix("Created \(store)"))
        let keyAttributes = try FileManager.default.attributesOfItem(atPath: directory + "/records.key")
        #expect(keyAttributes[.size] as? Int == 32)
        #expect(keyAttributes[.posixPermissions] as? Int == 0o600)

        #expect(
            try migrate(["put", "person", "--store", store] + key, stdin: #"{"name":"Ada","age":"36"}"#).status == 0)
        #expect(
            try migrate(
                ["put", "trialInfo", "--store", store] + key,
                stdin: #"{"version":0,"startDate":700000000}"#
            ).status == 0)
        let status = try migrate(["status", "--store", store, "--json"] + key)
        #expect(status.status == 0)
        #expect(status.stdout.contains(#""state" : "outdated""#))

        let run = try migrate(["run", "--store", store, "--device-id", "dev"] + key)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("2 migrated"))
        #expect(
            try migrate(["get", "person", "--store", store] + key).stdout
                == #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#)
        #expect(
            try migrate(["get", "trialInfo", "--store", store] + key).stdout
                == #"{"data":{"deviceId":"dev","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}"#
        )

        // Nothing readable on disk.
        for name in try FileManager.default.contentsOfDirectory(atPath: directory + "/records") {
            let contents = try Data(contentsOf: URL(fileURLWithPath: directory + "/records/" + name))
            #expect(!String(decoding: contents, as: UTF8.self).contains("Ada"), "\(name)")
            #expect(!name.contains("person"))
        }
    }

    @Test("a wrong key exits 71 naming the key source tried; a missing key option is a usage error")
    func wrongKey() throws {
        let directory = try workspace()
        let store = "file:\(directory)/records"
        #expect(try migrate(["init", "--store", store, "--key-file", directory + "/right.key"]).status == 0)
        #expect(
            try migrate(["init", "--store", "file:\(directory)/other", "--key-file", directory + "/wrong.key"]).status
                == 0)
        let wrong = try migrate(["status", "--store", store, "--key-file", directory + "/wrong.key"])
        #expect(wrong.status == 71)
        #expect(wrong.stderr.contains("key file \(directory)/wrong.key"))
        let none = try migrate(["status", "--store", store])
        #expect(none.status == 64)
        #expect(none.stderr.contains("needs its master key"))
    }

    @Test("a passphrase store opens from a file or an environment variable, and rekeys to a new passphrase")
    func passphrase() throws {
        let directory = try workspace()
        let store = "file:\(directory)/records"
        try Data("correct horse\n".utf8).write(to: URL(fileURLWithPath: directory + "/pw"))
        #expect(try migrate(["init", "--store", store, "--passphrase-file", directory + "/pw"]).status == 0)
        #expect(
            try migrate(
                ["put", "person", "--store", store, "--passphrase-file", directory + "/pw"],
                stdin: #"{"name":"Ada","age":"36"}"#
            ).status == 0)
        setenv("KEEPSAKE_TEST_PW", "correct horse", 1)
        setenv("KEEPSAKE_TEST_NEW_PW", "battery staple", 1)
        let viaEnv = try migrate(["get", "person", "--store", store, "--passphrase-env", "KEEPSAKE_TEST_PW"])
        #expect(viaEnv.stdout == #"{"name":"Ada","age":"36"}"#)
        let rekey = try migrate([
            "rekey", "--store", store, "--passphrase-env", "KEEPSAKE_TEST_PW",
            "--new-passphrase-env", "KEEPSAKE_TEST_NEW_PW"
        ])
        #expect(rekey.status == 0, "\(rekey.stderr)")
        let old = try migrate(["get", "person", "--store", store, "--passphrase-env", "KEEPSAKE_TEST_PW"])
        #expect(old.status == 71)
        #expect(old.stderr.contains("environment variable KEEPSAKE_TEST_PW"))
        #expect(
            try migrate(["get", "person", "--store", store, "--passphrase-env", "KEEPSAKE_TEST_NEW_PW"]).stdout
                == #"{"name":"Ada","age":"36"}"#)
    }

    @Test("run --backup on an encrypted store is refused rather than writing plaintext")
    func noPlaintextBackups() throws {
        let directory = try workspace()
        let store = "file:\(directory)/records"
        let key = ["--key-file", directory + "/k"]
        #expect(try migrate(["init", "--store", store] + key).status == 0)
        let result = try migrate(["run", "--backup", "--store", store] + key)
        #expect(result.status == 64)
        #expect(result.stderr.contains("plaintext"))
    }

    @Test("a missing key file is notFound (66), and a directory where a record file belongs is a damaged store (68)")
    func exitCodesSayWhatHappened() throws {
        let directory = try workspace()
        let store = "file:\(directory)/records"
        let key = ["--key-file", directory + "/records.key"]
        #expect(try migrate(["init", "--store", store] + key).status == 0)
        let missing = try migrate(["get", "theme", "--store", store, "--key-file", directory + "/no.key"])
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr.contains("key file \(directory)/no.key does not exist"))

        #expect(try migrate(["put", "theme", "--store", store] + key, stdin: #""dark""#).status == 0)
        let records = try FileManager.default.contentsOfDirectory(atPath: directory + "/records")
        let file = try #require(records.first { $0.hasSuffix(".ksr") })
        try FileManager.default.removeItem(atPath: directory + "/records/" + file)
        try FileManager.default.createDirectory(
            atPath: directory + "/records/" + file, withIntermediateDirectories: false)
        let get = try migrate(["get", "theme", "--store", store] + key)
        #expect(get.status == 68, "\(get.stderr)")
        #expect(get.stderr.contains("the store holds a directory where the record file \(file) belongs"))
        let suite = try Suite(#"{"theme":"light"}"#)
        let copy = try migrate([
            "copy", "--from", suite.store, "--to", store, "--to-key-file", directory + "/records.key", "theme"
        ])
        #expect(copy.status == 68, "\(copy.stdout)\(copy.stderr)")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: directory + "/records/" + file, isDirectory: &isDirectory))
        #expect(isDirectory.boolValue)
    }
}
