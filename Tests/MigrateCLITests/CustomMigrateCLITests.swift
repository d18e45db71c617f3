import Foundation
import Keepsake
import Testing

/// `custom-migrate` (Tests/CustomMigrate) is KeepsakeCLI given one chain of its own, Note
/// (v0 `{text}` → v1 `{text, pinned}`, default key `note`): an app's own `migrate`.
@Suite("KeepsakeCLI with an app's own chains")
struct CustomMigrateCLITests {
    @Test("the custom binary was built and found")
    func binaryExists() {
        #expect(FileManager.default.isExecutableFile(atPath: customMigrateBinary), "looked at \(customMigrateBinary)")
    }

    @Test(
        "an app's migrate without the TrialInfo chain has no trial command, nor its exit codes; the stock one has both")
    func trialOnlyWithTrialChain() throws {
        let help = try customMigrate(["--help"])
        #expect(!help.stdout.contains("trial"), "\(help.stdout)")
        let trial = try customMigrate(["trial", "status", "--store", "memory:x"])
        #expect(trial.status == 64)
        #expect(trial.stderr.contains("'trial' is not a custom-migrate command"))
        let stock = try migrate(["--help"])
        #expect(stock.stdout.contains("\n  trial "))
        #expect(stock.stdout.contains("80  `migrate trial`: the trial expired"))
    }

    @Test("models lists the app's Note chain and not the sample chains")
    func models() throws {
        let result = try customMigrate(["models"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == """
                Note — latest v1, default keys: note
                VERSION  TYPE    STORED KEYS
                v0       NoteV0  {text}
                v1       NoteV1  {pinned, text}

                """)
        let json = try #require(try decodeJSON(try customMigrate(["models", "--json"]).stdout) as? [[String: Any]])
        #expect(json.map { $0["name"] as? String } == ["Note"])
        #expect(json.first?["defaultKeys"] as? [String] == ["note"])
        #expect(json.first?["latestVersion"] as? Int == 1)
        #expect(!result.stdout.contains("Person"))
        #expect(!result.stdout.contains("TrialInfo"))
    }

    @Test("status reports a bare Note as outdated and a Person record as unmanaged; run migrates the Note")
    func statusAndRun() throws {
        let original = #"{"note": {"text":"hi"}, "person": {"name":"Ada","age":"36"}}"#
        let suite = try Suite(original)
        let status = try suite.run("status", ["--json"], binary: customMigrateBinary)
        #expect(status.status == 0, "\(status.stderr)")
        let records = try decodeRecords(status.stdout)
        #expect(records.map { $0["key"] as? String } == ["note", "person"])
        #expect(records[0]["schema"] as? String == "Note")
        #expect(records[0]["storedVersion"] as? Int == 0)
        #expect(records[0]["latestVersion"] as? Int == 1)
        #expect(records[0]["state"] as? String == "outdated")
        #expect(records[0]["form"] as? String == "bare")
        #expect(records[1]["state"] as? String == "unmanaged")
        #expect(records[1]["schema"] is NSNull)
        #expect(suite.contents == original, "status writes nothing")

        let run = try suite.run("run", binary: customMigrateBinary)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("Run on \(suite.store)\n"))
        #expect(run.stdout.contains("1 migrated, 1 unmanaged"))
        #expect(
            suite.contents == """
                {
                  "note": {"data":{"pinned":false,"text":"hi"},"schema":"Note","version":1},
                  "person": {"name":"Ada","age":"36"}
                }

                """)
        let get = try suite.run("get", ["note"], binary: customMigrateBinary)
        #expect(get.stdout == #"{"data":{"pinned":false,"text":"hi"},"schema":"Note","version":1}"#)
        let again = try suite.run("status", ["--json"], binary: customMigrateBinary)
        let states = try decodeRecords(again.stdout).map { $0["state"] as? String }
        #expect(states == ["current", "unmanaged"])
    }

    @Test("the stock migrate reads the same suite with its own chains: Note is unmanaged there")
    func stockDoesNotKnowNote() throws {
        let suite = try Suite(#"{"note": {"text":"hi"}}"#)
        let status = try suite.run("status", ["--json"])
        let records = try decodeRecords(status.stdout)
        #expect(records.map { $0["state"] as? String } == ["unmanaged"])
    }

    @Test("--model accepts the app's model names and refuses the sample ones with exit 64, listing the known models")
    func modelOption() throws {
        let suite = try Suite(#"{"memo": {"text":"remember"}}"#)
        let refused = try suite.run("run", ["--model", "memo=Person"], binary: customMigrateBinary)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("unknown model 'Person' in --model; known models: Note"), "\(refused.stderr)")
        #expect(refused.stderr.contains("Usage: custom-migrate run "), "the usage line names the app's command")
        #expect(suite.contents == #"{"memo": {"text":"remember"}}"#)

        let mapped = try suite.run("run", ["--model", "memo=Note", "--json"], binary: customMigrateBinary)
        #expect(mapped.status == 0, "\(mapped.stderr)")
        let records = try decodeRecords(mapped.stdout)
        #expect(records.count == 1)
        #expect(records[0]["key"] as? String == "memo")
        #expect(records[0]["schema"] as? String == "Note")
        #expect(records[0]["state"] as? String == "migrated")
        #expect(records[0]["steps"] as? [Int] == [1])
        #expect(
            try suite.run("get", ["memo"], binary: customMigrateBinary).stdout
                == #"{"data":{"pinned":false,"text":"remember"},"schema":"Note","version":1}"#)
    }

    @Test("--help and hints name the app's command, not migrate")
    func help() throws {
        let result = try customMigrate(["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: custom-migrate <subcommand>"))
        #expect(result.stdout.contains("`custom-migrate models`"))
        #expect(!result.stdout.contains("`migrate "))
        for command in [
            "status", "plan", "run", "show", "get", "put", "delete", "models", "init", "rekey", "copy", "watch",
            "doctor"
        ] {
            #expect(result.stdout.contains("  \(command) "), "\(command)")
        }
        #expect(result.stdout.contains("67  a managed record was written by a newer release"))

        let put = try customMigrate(["put", "--help"])
        #expect(put.stdout.contains("USAGE: custom-migrate put <key> --store <uri>"))

        let suite = try Suite(#"{"other": {"text":"x"}}"#)
        let show = try suite.run("show", ["other"], binary: customMigrateBinary)
        #expect(show.status == 64)
        #expect(
            show.stderr.contains("(see `custom-migrate models`), or use `custom-migrate get other` for the raw value"),
            "\(show.stderr)")
    }

    @Test("--version exists only when a version is given: the stock migrate has one, the custom one not")
    func version() throws {
        let stock = try migrate(["--version"])
        #expect(stock.status == 0)
        #expect(stock.stdout == KeepsakePackage.version + "\n")
        let custom = try customMigrate(["--version"])
        #expect(custom.status == 64)
        #expect(custom.stderr.contains("Unknown option '--version'"))
    }

    @Test("two chains with the same name are refused before anything runs, with exit 1 and the reason")
    func duplicateChains() throws {
        let suite = try Suite(#"{"note": {"text":"hi"}}"#)
        let result = try customMigrate(
            ["run", "--store", suite.store, "--device-id", "d"],
            environment: ["CUSTOM_MIGRATE_DUPLICATE_CHAIN": "1"])
        #expect(result.status == 1)
        #expect(
            result.stderr == """
                error: custom-migrate was given two model chains named 'Note'; each chain needs its own name, \
                since records are matched to chains by name

                """)
        #expect(result.stdout == "")
        #expect(suite.contents == #"{"note": {"text":"hi"}}"#)
    }

    @Test(
        "a master key source of the app's own (hexenv:VAR) opens a file: store; its help lists it; a taken scheme is refused at start"
    )
    func keySourceOfItsOwn() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/keepsake-hexenv-" + UUID().uuidString.prefix(8)
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }  // cleanup only
        let store = "file:" + directory + "/notes"
        let key = String(repeating: "ab", count: 32)
        let environment = ["NOTES_KEY": key, "OTHER_KEY": String(repeating: "cd", count: 32)]
        let created = try customMigrate(
            ["init", "--store", store, "--master-key", "hexenv:NOTES_KEY"], environment: environment)
        #expect(created.status == 0, "\(created.stderr)")
        let put = try customMigrate(
            ["put", "note", "--store", store, "--master-key", "hexenv:NOTES_KEY"], stdin: #"{"text":"hi"}"#,
            environment: environment)
        #expect(put.status == 0, "\(put.stderr)")
        let get = try customMigrate(
            ["get", "note", "--store", store, "--master-key", "hexenv:NOTES_KEY"], environment: environment)
        #expect(get.status == 0 && get.stdout.contains("hi"), "\(get.stdout)\(get.stderr)")
        let wrong = try customMigrate(
            ["get", "note", "--store", store, "--master-key", "hexenv:OTHER_KEY"], environment: environment)
        #expect(wrong.status == 71, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("hex key in environment variable OTHER_KEY"), "\(wrong.stderr)")

        let help = try customMigrate(["status", "--help"])
        #expect(help.stdout.contains("hexenv:VAR"), "\(help.stdout)")
        #expect(!help.stdout.contains("transit:"), "the stock migrate's own source is not the app's")
        let taken = try customMigrate(
            ["status", "--store", store], environment: ["CUSTOM_MIGRATE_TAKEN_KEY_SOURCE": "1"])
        #expect(taken.status == 1)
        #expect(taken.stderr.contains("'file:'") && taken.stderr.contains("taken"), "\(taken.stderr)")
    }
}
