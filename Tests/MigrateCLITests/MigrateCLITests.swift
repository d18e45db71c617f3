import Foundation
import Testing

@Suite("migrate CLI")
struct MigrateCLITests {
    @Test("the binary was built and found")
    func binaryExists() {
        #expect(FileManager.default.isExecutableFile(atPath: migrateBinary), "looked at \(migrateBinary)")
    }

    @Test("status lists each key with model, versions and state, and outdated is not an error")
    func status() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("status")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "Store \(suite.store)")
        #expect(
            lines.contains {
                $0.hasPrefix("person") && $0.contains("Person") && $0.contains("v0") && $0.contains("v3")
                    && $0.contains("outdated") && $0.contains("bare, in a JSON string")
            })
        #expect(
            lines.contains {
                $0.hasPrefix("trialInfo") && $0.contains("v0") && $0.contains("v2") && $0.contains("outdated")
            })
        #expect(lines.contains { $0.hasPrefix("theme") && $0.contains("unmanaged") })
        #expect(lines.last == "2 outdated, 1 unmanaged")
        #expect(
            lines.dropLast().last
                == "1 record belongs to no model and is left alone (theme). Map keys to a model with --model KEY=NAME or --models FILE (`migrate models` lists the models).",
            "the line before the summary says what to do about it")
        #expect(suite.contents == legacySuite, "status writes nothing")
    }

    @Test("status, plan and run over records no model claims say how many, the first keys and how to map them")
    func unmanagedRecordsNamed() throws {
        let people = (1...5).map { #""tenant-\#($0)":{"name":"P\#($0)","age":"3\#($0)"}"# }
        let suite = try Suite("{" + people.joined(separator: ",") + "}")
        let hint =
            "5 records belong to no model and are left alone (tenant-1, tenant-2, tenant-3, …). Map keys to a model with --model KEY=NAME or all at once with --model 'tenant-*=NAME' or --models FILE (`migrate models` lists the models)."
        for command in ["status", "plan", "run"] {
            let result = try suite.run(command)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(result.stdout.contains(hint), "\(command): \(result.stdout)")
        }
        let mapped = try suite.run("status", ["--model", "tenant-1=Person", "--model", "tenant-2=Person"])
        #expect(
            mapped.stdout.contains("3 records belong to no model and are left alone (tenant-3, tenant-4, tenant-5)."))
        #expect(mapped.stdout.hasSuffix("2 outdated, 3 unmanaged\n"), "\(mapped.stdout)")
        let quiet = try suite.run(
            "status", ["--model", "tenant-1=Person"] + (2...5).flatMap { ["--model", "tenant-\($0)=Person"] })
        #expect(!quiet.stdout.contains("no model"), "every record mapped: no hint")
        let json = try suite.run("status", ["--json"])
        #expect(!json.stdout.contains("no model"), "--json keeps its shape: totals.unmanaged says it")
    }

    @Test(
        "--model 'tenant-*=NAME' and a pattern line in --models map every matching key; a bad pattern is a usage error")
    func patternsMapManyKeys() throws {
        let people = (1...5).map { #""tenant-\#($0)":{"name":"P\#($0)","age":"3\#($0)"}"# }
        let suite = try Suite("{" + people.joined(separator: ",") + #","tenants":{"name":"X","age":"1"}}"#)
        let status = try suite.run("status", ["--model", "tenant-*=Person"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.hasSuffix("5 outdated, 1 unmanaged\n"), "\(status.stdout)")
        #expect(status.stdout.contains("1 record belongs to no model and is left alone (tenants)."))
        let file = suite.directory + "/models.txt"
        try "tenant-*=Person\ntenants=Person\n".write(toFile: file, atomically: true, encoding: .utf8)
        let run = try suite.run("run", ["--models", file])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasSuffix("6 migrated\n"), "\(run.stdout)")
        #expect(
            suite.contents.contains(#""tenant-3": {"data":{"alias":"P3","email":"---"},"schema":"Person","version":3}"#)
        )
        for bad in ["ten*ant-*=Person", "tenant-*=Nobody"] {
            let refused = try suite.run("status", ["--model", bad])
            #expect(refused.status == 64, "\(bad): \(refused.stdout)")
            #expect(
                refused.stderr.contains(
                    bad.hasSuffix("Nobody")
                        ? "unknown model 'Nobody'"
                        : "'ten*ant-*' is not a key pattern: * may only be its last character"),
                "\(refused.stderr)")
        }
    }

    @Test("copy 'tenant-*' copies exactly the keys the pattern matches, migrated along the mapped model")
    func copyByPattern() throws {
        let people = (1...3).map { #""tenant-\#($0)":{"name":"P\#($0)","age":"3\#($0)"}"# }
        let suite = try Suite("{" + people.joined(separator: ",") + #","tenants":"x","tenant":"y"}"#)
        let target = suite.directory + "/copy.json"
        let copied = try migrate([
            "copy", "--from", suite.store, "--to", "defaults:" + target, "tenant-*", "--migrate",
            "--model", "tenant-*=Person", "--device-id", "test-device"
        ])
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(copied.stdout.hasSuffix("3 copied\n"), "\(copied.stdout)")
        let json = try #require(try decodeJSON(String(contentsOfFile: target, encoding: .utf8)) as? [String: Any])
        #expect(json.keys.sorted() == ["tenant-1", "tenant-2", "tenant-3"])
        #expect((json["tenant-2"] as? [String: Any])?["version"] as? Int == 3)
        let refused = try migrate(["copy", "--from", suite.store, "--to", "defaults:" + target, "te*nant-*"])
        #expect(refused.status == 64, "\(refused.stdout)")
        #expect(refused.stderr.contains("'te*nant-*' is not a key pattern"), "\(refused.stderr)")
    }

    @Test("status --json prints the fields scripts rely on")
    func statusJSON() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("status", ["--json"])
        #expect(result.status == 0)
        let records = try decodeRecords(result.stdout)
        #expect(records.map { $0["key"] as? String } == ["person", "theme", "trialInfo"])
        let person = records[0]
        #expect(person["schema"] as? String == "Person")
        #expect(person["storedVersion"] as? Int == 0)
        #expect(person["latestVersion"] as? Int == 3)
        #expect(person["state"] as? String == "outdated")
        #expect(person["form"] as? String == "bare")
        #expect(person["stringWrapped"] as? Bool == true)
        #expect(person["error"] is NSNull)
        #expect(person["backup"] is NSNull)
        #expect(person["note"] is NSNull)
        #expect(person["steps"] as? [Int] == [1, 2, 3])
        #expect(records[1]["state"] as? String == "unmanaged")
        #expect(records[1]["schema"] is NSNull)
    }

    @Test("plan shows each record's path of versions and writes nothing")
    func plan() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("plan")
        #expect(result.status == 0)
        #expect(result.stdout.contains("person     Person v0 → v1 → v2 → v3  (bare, in a JSON string)"))
        #expect(result.stdout.contains("trialInfo  TrialInfo v0 → v1 → v2  (inline version)"))
        #expect(result.stdout.contains("theme      unmanaged; left alone"))
        #expect(suite.contents == legacySuite)
    }

    @Test("run migrates the legacy suite, and a second run changes nothing")
    func runTwice() throws {
        let suite = try Suite(legacySuite)
        let first = try suite.run("run")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("2 migrated, 1 unmanaged"))
        #expect(
            suite.contents == #"""
                {
                  "person": {"data":{"alias":"Ada","email":"---"},"schema":"Person","version":3},
                  "theme": "dark",
                  "trialInfo": {"data":{"deviceId":"test-device","startDate":"2023-03-08T20:26:40.000Z","version":2},"schema":"TrialInfo","version":2}
                }

                """#)
        let migrated = suite.contents
        let second = try suite.run("run", ["--json"])
        #expect(second.status == 0)
        let states = try decodeRecords(second.stdout).map { $0["state"] as? String }
        #expect(states == ["current", "unmanaged", "current"])
        #expect(suite.contents == migrated)
    }

    @Test("run --dry-run reports the plan and writes nothing")
    func dryRun() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("run", ["--dry-run"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("Dry run on \(suite.store): nothing is written"))
        #expect(suite.contents == legacySuite)
    }

    @Test("run --backup keeps the original bytes, and put restores them")
    func backupAndRestore() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("run", ["--backup", "--json"])
        #expect(result.status == 0)
        let records = try decodeRecords(result.stdout)
        let backupPath = try #require(records.first { $0["key"] as? String == "person" }?["backup"] as? String)
        #expect(backupPath.hasPrefix(suite.directory + "/suite.backups/"))
        #expect(backupPath.hasSuffix("/records.jsonl"))
        let original = #""{\"name\":\"Ada\",\"age\":\"36\"}""#

        let restore = try suite.run("put", ["person", "--from-backup", backupPath])
        #expect(restore.status == 0)
        let get = try suite.run("get", ["person"])
        #expect(get.stdout == original)
        #expect(try suite.run("status", ["--json"]).stdout.contains(#""storedVersion" : 0"#))
    }

    @Test("run --backup counts what it migrated in its summary line, as the rows and --json do")
    func backupSummary() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("run", ["--backup"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.contains("migrated") && !$0.hasPrefix("theme") }.count == 3, "\(result.stdout)")
        #expect(lines.dropLast().last == "2 migrated, 1 unmanaged", "\(result.stdout)")
        #expect(lines.last?.hasPrefix("Backups in ") == true)
        #expect(!result.stdout.contains("outdated"))
    }
    @Test("a newer record is reported with its own exit code and left untouched while the rest migrate")
    func newerRecord() throws {
        let newer = #"{"schema":"Person","version":7,"data":{"alias":"x"}}"#
        let suite = try Suite(
            #"{"person": \#(newer), "trialInfo": {"version":1,"startDate":0,"deviceId":"d","userId":"u"}}"#)
        let status = try suite.run("status")
        #expect(status.status == 67)
        let run = try suite.run("run")
        #expect(run.status == 67)
        #expect(run.stdout.contains("newer than this release knows"))
        #expect(suite.contents.contains(#""person": \#(newer)"#))
        #expect(suite.contents.contains(#""schema":"TrialInfo","version":2"#))
    }

    @Test("an unreadable record exits 65 and wins over a newer one")
    func unreadableRecord() throws {
        let suite = try Suite(#"{"person": {"name":"Ada"}, "trialInfo": {"version":9,"startDate":0}}"#)
        let result = try suite.run("run", ["--json"])
        #expect(result.status == 65)
        let records = try decodeRecords(result.stdout)
        #expect(records[0]["state"] as? String == "unreadable")
        let error = try errorObject(records[0]["error"])
        #expect(error["code"] as? String == "unrecognisedRecord")
        #expect(error["exitCode"] as? Int == 65)
        #expect(error["key"] as? String == "person")
        #expect(error["store"] as? String == suite.store)
        #expect(error["mayHaveBeenApplied"] as? Bool == false)  // a read: nothing was sent
        #expect(records[1]["state"] as? String == "newer")
    }

    @Test("show prints the latest record migrated in memory and writes nothing")
    func show() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("show", ["trialInfo"])
        #expect(result.status == 0)
        let record = try #require(try decodeJSON(result.stdout) as? [String: Any])
        #expect(record["schema"] as? String == "TrialInfo")
        #expect(record["version"] as? Int == 2)
        let data = try #require(record["data"] as? [String: Any])
        #expect(data["startDate"] as? String == "2023-03-08T20:26:40.000Z")
        #expect(data["deviceId"] as? String == "test-device")
        #expect(
            result.stderr.contains("trialInfo: TrialInfo v0 (inline version) → v2, migrated in memory; nothing written")
        )
        #expect(suite.contents == legacySuite)
    }

    @Test("show, get and delete of a missing key exit 66 naming the store and key")
    func missingKey() throws {
        let suite = try Suite(legacySuite)
        for command in ["show", "get", "delete"] {
            let result = try suite.run(command, ["nobody"])
            #expect(result.status == 66, "\(command)")
            #expect(result.stderr.contains("\(suite.store), key 'nobody': no record under this key"), "\(command)")
        }
    }

    @Test("get prints the stored bytes exactly, without migrating")
    func get() throws {
        let suite = try Suite(legacySuite)
        let result = try suite.run("get", ["trialInfo"])
        #expect(result.stdout == #"{"version":0,"startDate":700000000}"#)
    }

    @Test("put stores standard input as given, or as a JSON string with --string; delete removes it")
    func putAndDelete() throws {
        let suite = try Suite()
        // A defaults suite keeps the JSON value only: a trailing newline is refused, not dropped.
        let newline = try suite.run("put", ["person"], stdin: #"{"name":"Grace","age":"85"}"# + "\n")
        #expect(newline.status == 84)
        #expect(newline.stderr.contains("whitespace around it (a trailing newline?)"))
        #expect(try suite.run("get", ["person"]).status == 66)
        #expect(
            try suite.run("put", ["person", "--strip-newline"], stdin: #"{"name":"Grace","age":"85"}"# + "\n").status
                == 0)
        #expect(try suite.run("put", ["legacy", "--string"], stdin: #"{"name":"Ada","age":"36"}"#).status == 0)
        #expect(try suite.run("get", ["person"]).stdout == #"{"name":"Grace","age":"85"}"#)
        #expect(try suite.run("get", ["legacy"]).stdout == #""{\"name\":\"Ada\",\"age\":\"36\"}""#)
        let refused = try suite.run("put", ["bad"], stdin: "not json")
        #expect(refused.status == 84)
        #expect(refused.stderr.contains("not one JSON value"))
        #expect(try suite.run("delete", ["person"]).status == 0)
        #expect(try suite.run("get", ["person"]).status == 66)
    }

    @Test(
        "put stores exactly the bytes it reads; --strip-newline removes one trailing newline, --string keeps it in the text"
    )
    func putIsByteExact() throws {
        let directory = try Suite(function: #function).directory
        let store = "file:\(directory)/records"
        let key = ["--key-file", directory + "/records.key"]
        #expect(try migrate(["init", "--store", store] + key).status == 0)
        let put = try migrate(["put", "k", "--store", store, "--json"] + key, stdin: "abc\n")
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.stdout.contains(#""bytes" : 4"#))
        #expect(try migrate(["get", "k", "--store", store] + key).stdout == "abc\n")
        #expect(try migrate(["put", "k", "--store", store, "--strip-newline"] + key, stdin: "abc\n\n").status == 0)
        #expect(try migrate(["get", "k", "--store", store] + key).stdout == "abc\n")
        #expect(try migrate(["put", "s", "--store", store, "--string"] + key, stdin: "line\n").status == 0)
        #expect(try migrate(["get", "s", "--store", store] + key).stdout == #""line\n""#)
        let combined = try migrate(
            ["put", "k", "--store", store, "--strip-newline", "--from-backup", directory] + key, stdin: "")
        #expect(combined.status == 64)
    }

    @Test("put --from-backup restores a record's exact original bytes from a run's backup or an older per-record one")
    func restoreFromBackup() throws {
        let suite = try Suite(legacySuite)
        let run = try suite.run("run", ["--backup", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let folder = try #require(
            (try decodeJSON(run.stdout) as? [String: Any])?["backupDirectory"] as? String)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["records.jsonl"])
        #expect(try suite.run("get", ["person"]).stdout.contains(#""version":3"#))
        for key in ["person", "trialInfo"] {
            let restored = try suite.run("put", [key, "--from-backup", folder])
            #expect(restored.status == 0, "\(restored.stderr)")
        }
        #expect(try suite.run("get", ["person"]).stdout == #""{\"name\":\"Ada\",\"age\":\"36\"}""#)
        #expect(try suite.run("get", ["trialInfo"]).stdout == #"{"version":0,"startDate":700000000}"#)
        let missing = try suite.run("put", ["theme", "--from-backup", folder])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("holds no original"))
        #expect(try suite.run("get", ["theme"]).stdout == #""dark""#, "a failed restore writes nothing")

        // A folder an earlier release wrote: one <key>.json per record.
        let old = suite.directory + "/old-backup"
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: true)
        try Data(#"{"name":"Grace","age":"85"}"#.utf8).write(to: URL(fileURLWithPath: old + "/a%2Fb.json"))
        #expect(try suite.run("put", ["a/b", "--from-backup", old]).status == 0)
        #expect(try suite.run("get", ["a/b"]).stdout == #"{"name":"Grace","age":"85"}"#)
        #expect(try suite.run("put", ["x", "--string", "--from-backup", old]).status == 64)
    }

    @Test("--model maps a key to a model")
    func modelOption() throws {
        let suite = try Suite(#"{"friend": {"alias":"x","age":"3","email":"e"}}"#)
        let unmapped = try suite.run("status", ["--json"])
        #expect(unmapped.stdout.contains(#""state" : "unmanaged""#))
        let mapped = try suite.run("run", ["--model", "friend=Person", "--json"])
        #expect(mapped.status == 0)
        #expect(mapped.stdout.contains(#""state" : "migrated""#))
        #expect(mapped.stdout.contains(#""storedVersion" : 2"#))
    }

    @Test("a corrupt suite file exits 68 and is left as it is")
    func corruptSuite() throws {
        let suite = try Suite("{ this is not json")
        let result = try suite.run("run")
        #expect(result.status == 68)
        #expect(result.stderr.contains("left as it is"))
        #expect(result.stderr.contains("hint:"))
        #expect(suite.contents == "{ this is not json")
    }

    @Test(
        "usage errors exit 64 with a helpful message",
        arguments: [
            (["status"], "--store"),
            (["status", "--store", "sqlite:x"], "unknown store kind 'sqlite'"),
            (["status", "--store", "nocolon"], "defaults:PATH"),
            (
                ["status", "--store", "defaults:/tmp/x.json", "--model", "person=Nobody"],
                "known models: Person, TrialInfo"
            ),
            (["run", "--store", "defaults:/tmp/x.json", "--dry-run", "--backup"], "--dry-run writes nothing")
        ])
    func usageErrors(_ arguments: [String], _ message: String) throws {
        let result = try migrate(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test("models lists both chains with their versions and keys")
    func models() throws {
        let result = try migrate(["models"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Person — latest v3, default keys: person"))
        #expect(result.stdout.contains("v2       PersonV2  {age, alias, email}"))
        let json = try #require(try decodeJSON(try migrate(["models", "--json"]).stdout) as? [[String: Any]])
        #expect(json.map { $0["name"] as? String } == ["Person", "TrialInfo"])
        #expect(json.map { $0["latestVersion"] as? Int } == [3, 2])
    }

    @Test("--help documents every command and the exit codes")
    func help() throws {
        let result = try migrate(["--help"])
        #expect(result.status == 0)
        for command in ["status", "plan", "run", "show", "get", "put", "delete", "models"] {
            #expect(result.stdout.contains("  \(command) "), "\(command)")
        }
        #expect(result.stdout.contains("EXIT CODES"))
        #expect(result.stdout.contains("67  a managed record was written by a newer release"))
    }

    @Test("the default device identity is derived from the machine id, not the machine id itself")
    func defaultDeviceIdentity() throws {
        let suite = try Suite(legacySuite)
        let result = try migrate(["run", "--store", suite.store, "--app-id", "com.example.test"])
        guard
            let machineID = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines), !machineID.isEmpty
        else {
            // A machine without a machine id: the CLI must say so and point at --device-id.
            #expect(result.status == 69)
            #expect(result.stderr.contains("machine id"))
            #expect(suite.contents == legacySuite)
            return
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!suite.contents.contains("test-device"))
        #expect(!suite.contents.contains(machineID))
        #expect(suite.contents.range(of: #""deviceId":"[0-9a-f]{32}""#, options: .regularExpression) != nil)
    }
}
