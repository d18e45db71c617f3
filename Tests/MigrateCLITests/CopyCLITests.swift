import Foundation
import Testing

@Suite("migrate copy between a defaults suite and an encrypted store")
struct CopyCLITests {
    /// A legacy suite and an encrypted store (key file) beside it.
    func setUp(_ function: String = #function) throws -> (suite: Suite, store: String, keyFile: String) {
        let suite = try Suite(legacySuite, function: function)
        let store = "file:" + suite.directory + "/records"
        let keyFile = suite.directory + "/records.key"
        let created = try migrate(["init", "--store", store, "--key-file", keyFile])
        try #require(created.status == 0, "\(created.stderr)")
        return (suite, store, keyFile)
    }

    func copy(_ arguments: [String]) throws -> CommandResult {
        try migrate(["copy", "--device-id", "test-device"] + arguments)
    }

    @Test("--dry-run shows each record and writes nothing; the move then migrates, moves and empties the suite of them")
    func dryRunThenMove() throws {
        let (suite, store, keyFile) = try setUp()
        let before = suite.contents
        let plan = try copy([
            "--from", suite.store, "--to", store, "--to-key-file", keyFile, "--move", "--migrate", "--dry-run"
        ])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("Dry run: move \(suite.store) → \(store) (nothing is written)"))
        #expect(plan.stdout.contains("person     Person     v0    v3  planned"))
        #expect(plan.stdout.contains("2 planned"))
        #expect(suite.contents == before)
        #expect(try migrate(["status", "--store", store, "--key-file", keyFile]).stdout.contains("no records"))

        let moved = try copy(["--from", suite.store, "--to", store, "--to-key-file", keyFile, "--move", "--migrate"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout.contains("person     Person     v0    v3  moved"))
        #expect(moved.stdout.contains("2 moved"))
        let json = try #require(try decodeJSON(suite.contents) as? [String: Any])
        #expect(json.keys.sorted() == ["theme"])
        let person = try migrate(["get", "person", "--store", store, "--key-file", keyFile])
        #expect(person.stdout == #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#)
        let trial = try migrate(["status", "--store", store, "--key-file", keyFile, "--json"])
        let status = try #require(try decodeJSON(trial.stdout) as? [String: Any])
        let states = try #require(status["records"] as? [[String: Any]]).map { $0["state"] as? String }
        #expect(states == ["current", "current"])
    }

    @Test("--json reports the outcome and each record; a named plain value is copied as its exact bytes")
    func json() throws {
        let (suite, store, keyFile) = try setUp()
        let result = try copy([
            "--from", suite.store, "--to", store, "--to-key-file", keyFile, "theme", "person", "--json"
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try decodeJSON(result.stdout) as? [String: Any])
        #expect(object["outcome"] as? String == "completed")
        #expect(object["move"] as? Bool == false)
        #expect(object["dryRun"] as? Bool == false)
        #expect(object["source"] as? String == suite.store)
        #expect(object["exitCode"] as? Int == 0)
        #expect((object["totals"] as? [String: Any])?["copied"] as? Int == 2)
        let records = try #require(object["records"] as? [[String: Any]])
        #expect(records.map { $0["key"] as? String } == ["theme", "person"])
        #expect(records.map { $0["state"] as? String } == ["copied", "copied"])
        #expect(records.map { $0["unmanaged"] as? Bool } == [true, false])
        #expect(records[1]["storedVersion"] as? Int == 0)
        #expect(records[1]["schema"] as? String == "Person")
        #expect(try migrate(["get", "theme", "--store", store, "--key-file", keyFile]).stdout == #""dark""#)
        #expect(
            try migrate(["get", "person", "--store", store, "--key-file", keyFile]).stdout
                == #""{\"name\":\"Ada\",\"age\":\"36\"}""#)
        #expect(suite.contents.contains("theme"), "a copy leaves the source")
    }

    @Test("refusals write nothing and exit with their code: 83 exists, 84 cannot hold, 66 missing key")
    func refusals() throws {
        let (suite, store, keyFile) = try setUp()
        let before = suite.contents
        let put = try migrate(["put", "theme", "--store", store, "--key-file", keyFile], stdin: "not JSON at all")
        try #require(put.status == 0, "\(put.stderr)")

        let exists = try copy([
            "--from", suite.store, "--to", store, "--to-key-file", keyFile, "theme", "person", "--move"
        ])
        #expect(exists.status == 83, "\(exists.stdout)\(exists.stderr)")
        #expect(exists.stdout.contains("exists"))
        #expect(exists.stdout.contains("notCopied"))
        #expect(exists.stdout.contains("Nothing was written."))
        #expect(suite.contents == before)

        // Secure to plain storage is refused before anything is read, naming both stores.
        let exposed = try copy(["--from", store, "--from-key-file", keyFile, "--to", suite.store, "theme", "person"])
        #expect(exposed.status == 64, "\(exposed.stdout)\(exposed.stderr)")
        #expect(exposed.stderr.contains("keeps its records encrypted and \(suite.store) does not"))
        #expect(exposed.stderr.contains("the records 'theme', 'person' would be written there in plain text"))
        #expect(exposed.stderr.contains("--allow-plaintext"))
        #expect(suite.contents == before)

        let cannotHold = try copy([
            "--from", store, "--from-key-file", keyFile, "--to", suite.store, "theme", "--overwrite",
            "--allow-plaintext"
        ])
        #expect(cannotHold.status == 84, "\(cannotHold.stdout)\(cannotHold.stderr)")
        #expect(cannotHold.stdout.contains("a defaults suite holds JSON values"))
        #expect(suite.contents == before)

        let missing = try copy(["--from", suite.store, "--to", store, "--to-key-file", keyFile, "nothere", "--move"])
        #expect(missing.status == 66)
        #expect(missing.stdout.contains("the source holds no record under this key"))

        let overwrite = try copy([
            "--from", suite.store, "--to", store, "--to-key-file", keyFile, "theme", "--overwrite"
        ])
        #expect(overwrite.status == 0, "\(overwrite.stdout)")
        #expect(overwrite.stdout.contains("replaced the destination's value"))
        #expect(try migrate(["get", "theme", "--store", store, "--key-file", keyFile]).stdout == #""dark""#)
    }

    @Test("--overwrite over a newer version: 83 with a note that says why, and --migrate copies it at its latest")
    func overwriteNewer() throws {
        let (suite, store, keyFile) = try setUp()
        let newer = #"{"data":{"alias":"Bea","email":"b@example.com"},"schema":"Person","version":3}"#
        let put = try migrate(["put", "person", "--store", store, "--key-file", keyFile], stdin: newer)
        try #require(put.status == 0, "\(put.stderr)")

        let refused = try copy(["--from", suite.store, "--to", store, "--to-key-file", keyFile, "person", "--overwrite"]
        )
        #expect(refused.status == 83, "\(refused.stdout)\(refused.stderr)")
        #expect(
            refused.stdout.contains("version 3, newer than the one copied (0, stored without a version)"),
            "\(refused.stdout)")
        #expect(refused.stdout.contains("never copied over a newer one, even with --overwrite"))
        #expect(refused.stdout.contains("give --migrate (and --overwrite)"))
        #expect(!refused.stdout.contains("give --overwrite to replace it"))
        #expect(try migrate(["get", "person", "--store", store, "--key-file", keyFile]).stdout == newer)

        let migrated = try copy([
            "--from", suite.store, "--to", store, "--to-key-file", keyFile, "person", "--overwrite", "--migrate"
        ])
        #expect(migrated.status == 0, "\(migrated.stdout)\(migrated.stderr)")
        #expect(
            try migrate(["get", "person", "--store", store, "--key-file", keyFile]).stdout
                == #"{"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3}"#)
    }

    @Test(
        "usage errors: key options for the wrong side, --all with keys, a file: side without its key, one store twice")
    func usage() throws {
        let (suite, store, keyFile) = try setUp()
        #expect(try copy(["--from", suite.store, "--to", store, "--from-key-file", keyFile]).status == 64)
        #expect(
            try copy(["--from", suite.store, "--to", store, "--to-key-file", keyFile, "--all", "theme"]).status == 64)
        let noKey = try copy(["--from", suite.store, "--to", store])
        #expect(noKey.status == 64)
        #expect(
            noKey.stderr.contains(
                "needs its master key: give --to-master-key file:PATH, passphrase-file:PATH, passphrase-env:VAR, ask, transit:URI or keyring"
            ), "\(noKey.stderr)")
        let same = try copy(["--from", suite.store, "--to", suite.store, "theme"])
        #expect(same.status == 64)
        #expect(same.stderr.contains("the same store"))
        #expect(try copy(["--from", "memory:x", "--to", suite.store]).status == 64)
    }

    @Test("a wrong key for the destination exits 71 before anything is read or written")
    func wrongKey() throws {
        let (suite, store, _) = try setUp()
        let other = suite.directory + "/other.key"
        _ = try migrate(["init", "--store", "file:" + suite.directory + "/other", "--key-file", other])
        let before = suite.contents
        let result = try copy(["--from", suite.store, "--to", store, "--to-key-file", other, "--move"])
        #expect(result.status == 71)
        #expect(suite.contents == before)
    }
}
