import Foundation
import Testing

/// `status`, `plan` and `run --json`, decoded with typed fields: a number printed as a string,
/// or a missing member, fails the decoding.
private struct ReportOutput: Decodable {
    struct Record: Decodable {
        let key: String
        let schema: String?
        let storedVersion: Int?
        let latestVersion: Int?
        let state: String
        let form: String?
        let stringWrapped: Bool
        let steps: [Int]
        let error: ErrorOutput?
        let backup: String?
        let note: String?
    }
    let store: String
    let records: [Record]
    let totals: [String: Int]
    let exitCode: Int
}

/// The error object of a failure and of a record.
private struct ErrorOutput: Decodable, Equatable {
    let code: String
    let exitCode: Int
    let message: String
    let store: String?
    let key: String?
    let cause: String?
    let hint: String?
}

private struct FailureOutput: Decodable {
    let error: ErrorOutput
}

/// Decodes `text` as exactly one `T`: JSONDecoder refuses trailing text.
private func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
    try JSONDecoder().decode(type, from: Data(text.utf8))
}

/// Every key of a JSON object, to check that a shape has exactly the documented members.
private func memberNames(_ text: String) throws -> [String] {
    try #require(try decodeJSON(text) as? [String: Any]).keys.sorted()
}

@Suite("migrate --json: one typed object, failures included")
struct JSONOutputCLITests {
    static let states = [
        "current", "migrated", "newer", "newerReadable", "outdated", "removed", "unmanaged", "unreadable"
    ]

    @Test("status --json is one object: the store, every record with typed fields, and every state's total")
    func statusObject() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("status", ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try memberNames(result.stdout) == ["exitCode", "records", "store", "totals"])
        let output = try decode(ReportOutput.self, result.stdout)
        #expect(output.store == suite.store)
        #expect(output.exitCode == 0)
        #expect(output.records.map(\.key) == ["person", "theme", "trialInfo"])
        #expect(output.records[0].storedVersion == 0 && output.records[0].latestVersion == 3)
        #expect(output.records[0].stringWrapped == true)
        #expect(output.records[0].steps == [1, 2, 3])
        #expect(output.records[1].schema == nil && output.records[1].form == nil && output.records[1].error == nil)
        var expected = Dictionary(uniqueKeysWithValues: Self.states.map { ($0, 0) })
        expected["outdated"] = 2
        expected["unmanaged"] = 1
        expected["records"] = 3
        #expect(output.totals == expected)
        // Every record lists every member, null when there is nothing.
        let records = try decodeRecords(result.stdout)
        for record in records {
            #expect(
                record.keys.sorted() == [
                    "backup", "error", "form", "key", "latestVersion", "note", "schema", "state",
                    "steps", "storedVersion", "stringWrapped"
                ])
        }
    }

    @Test("an empty store prints \"records\" : [] and zero totals, never [ and ] on their own lines")
    func emptyStore() throws {
        let suite = try Suite("{}")
        for command in ["status", "plan", "run"] {
            let result = try suite.run(command, ["--json"])
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(result.stdout.contains(#""records" : [],"#), "\(command): \(result.stdout)")
            #expect(!result.stdout.contains("[\n\n"), "\(command)")
            let output = try decode(ReportOutput.self, result.stdout)
            #expect(output.records.isEmpty)
            #expect(output.totals["records"] == 0)
            #expect(output.totals.values.allSatisfy { $0 == 0 })
        }
        let models = try customMigrate(["models", "--json"], environment: ["CUSTOM_MIGRATE_NO_CHAINS": "1"])
        #expect(models.status == 0)
        #expect(models.stdout == "[]\n")
    }

    @Test(
        "run --json says whether it was a dry run and where the backups went, with an unreadable record's error object")
    func runObject() throws {
        let suite = try Suite(#"{"person": {"name":"Ada","age":"36"}, "trialInfo": {"version":0,"startDate":"x"}}"#)
        let dry = try suite.run("run", ["--json", "--dry-run"])
        #expect(dry.status == 65)
        let dryObject = try #require(try decodeJSON(dry.stdout) as? [String: Any])
        #expect(dryObject["dryRun"] as? Bool == true)
        #expect(dryObject["backupDirectory"] is NSNull)

        let run = try suite.run("run", ["--json", "--backup"])
        #expect(run.status == 65, "\(run.stderr)")
        let object = try #require(try decodeJSON(run.stdout) as? [String: Any])
        #expect(object["dryRun"] as? Bool == false)
        let backups = try #require(object["backupDirectory"] as? String)
        #expect(backups.hasPrefix(suite.directory + "/suite.backups/"))
        let output = try decode(ReportOutput.self, run.stdout)
        #expect(output.exitCode == 65)
        #expect(output.totals["migrated"] == 1 && output.totals["unreadable"] == 1)
        #expect(output.records[0].backup?.hasPrefix(backups) == true)
        let error = try #require(output.records[1].error)
        #expect(error.code == "corruptRecord")
        #expect(error.exitCode == 65)
        #expect(error.store == suite.store)
        #expect(error.key == "trialInfo")
    }

    @Test("put, get and delete --json print numbers and booleans as JSON numbers and booleans")
    func typedValues() throws {
        struct Put: Decodable {
            let store: String
            let key: String
            let bytes: Int
        }
        struct Get: Decodable {
            let store: String
            let key: String
            let bytes: Int
            let value: String?
            let base64: String?
        }
        struct Delete: Decodable {
            let store: String
            let key: String
            let deleted: Bool
        }
        let suite = try Suite()
        let put = try decode(Put.self, try suite.run("put", ["note", "--json"], stdin: #"{"text":"hi"}"#).stdout)
        #expect(put.bytes == 13)
        #expect(put.store == suite.store && put.key == "note")
        let get = try decode(Get.self, try suite.run("get", ["note", "--json"]).stdout)
        #expect(get.bytes == 13 && get.value == #"{"text":"hi"}"# && get.base64 == nil)
        let delete = try decode(Delete.self, try suite.run("delete", ["note", "--json"]).stdout)
        #expect(delete.deleted == true)
    }

    @Test("a failure with --json prints one error object on stdout: code, exit code, message, store and key")
    func failures() throws {
        let suite = try Suite(legacySuite)
        let missing = try suite.run("get", ["nobody", "--json"])
        #expect(missing.status == 66)
        #expect(try memberNames(missing.stdout) == ["error"])
        let error = try decode(FailureOutput.self, missing.stdout).error
        #expect(
            error
                == ErrorOutput(
                    code: "notFound", exitCode: 66, message: "no record under this key",
                    store: suite.store, key: "nobody", cause: nil, hint: nil))
        #expect(missing.stderr.hasPrefix("error: "))

        let corrupt = try Suite("{ not json")
        let corruptRun = try corrupt.run("run", ["--json"])
        #expect(corruptRun.status == 68)
        let corruptError = try decode(FailureOutput.self, corruptRun.stdout).error
        #expect(corruptError.code == "corruptStore" && corruptError.exitCode == 68)
        #expect(corruptError.store == corrupt.store && corruptError.key == nil)
        #expect(corruptError.cause?.contains("JSON syntax error") == true)
        #expect(corruptError.hint?.contains("not changed") == true)

        let usage = try migrate(["status", "--json", "--store", suite.store, "--stor", "x"])
        #expect(usage.status == 64)
        let usageError = try decode(FailureOutput.self, usage.stdout).error
        #expect(usageError.code == "usage" && usageError.exitCode == 64)
        #expect(usageError.message == "Unknown option '--stor'. Did you mean '--store'?")
        #expect(usageError.hint == "see 'migrate status --help'")
        #expect(usageError.store == suite.store)

        let parse = try migrate(["run", "--json", "--store", suite.store, "--backup-dir", "/tmp"])
        #expect(parse.status == 64)
        #expect(try decode(FailureOutput.self, parse.stdout).error.message == "--backup-dir needs --backup")
    }

    @Test(
        "a defaults suite file that does not exist is said not to exist (66) by status, plan, run, show, get and delete; nothing is created"
    )
    func missingSuite() throws {
        let directory = try Suite().directory
        let store = "defaults:\(directory)/nothing-here.json"
        for command in [
            ["status"], ["plan"], ["run"], ["run", "--dry-run"], ["show", "person"], ["get", "person"],
            ["delete", "person"]
        ] {
            let result = try migrate(command + ["--store", store, "--json"])
            #expect(result.status == 66, "\(command): \(result.stderr)")
            let error = try decode(FailureOutput.self, result.stdout).error
            #expect(error.code == "notFound")
            #expect(error.store == store)
            #expect(error.message.hasPrefix("the suite file does not exist"), "\(command)")
            #expect(result.stderr.contains("\(store): the suite file does not exist"))
        }
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/nothing-here.json"))
        // put creates it.
        #expect(try migrate(["put", "k", "--store", store], stdin: "1").status == 0)
        #expect(try migrate(["status", "--store", store]).status == 0)
    }

    @Test("~/ in a store path is the home directory")
    func tildeExpansion() throws {
        let home = try Suite().directory
        let environment = ["HOME": home]
        let put = try runBinary(
            migrateBinary, ["put", "k", "--store", "defaults:~/suite.json", "--json"], stdin: "1",
            environment: environment)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(try decode(ReportStore.self, put.stdout).store == "defaults:\(home)/suite.json")
        #expect(FileManager.default.fileExists(atPath: home + "/suite.json"))
        let status = try runBinary(
            migrateBinary, ["status", "--store", "defaults:~/suite.json"], environment: environment)
        #expect(status.stdout.hasPrefix("Store defaults:\(home)/suite.json\n"))
    }

    @Test("init and rekey --json: the key generation is a number")
    func initAndRekey() throws {
        struct Created: Decodable {
            let store: String
            let id: String
            let masterKey: String
        }
        struct Rekeyed: Decodable {
            let store: String
            let masterKey: String
            let keyGeneration: Int
        }
        let directory = try Suite().directory
        let store = "file:\(directory)/records"
        let created = try decode(
            Created.self,
            try migrate([
                "init", "--store", store, "--key-file", directory + "/a.key",
                "--json"
            ]).stdout)
        #expect(created.store == store && created.id.count == 32)
        #expect(created.masterKey.contains(directory + "/a.key"))
        let rekeyed = try decode(
            Rekeyed.self,
            try migrate([
                "rekey", "--store", store, "--key-file", directory + "/a.key",
                "--new-key-file", directory + "/b.key", "--json"
            ]).stdout)
        #expect(rekeyed.keyGeneration == 2)
    }
}

private struct ReportStore: Decodable {
    let store: String
}
