import Foundation
import Testing

@Suite("migrate usage: suggestions, per-command options, help at 80 columns, one error prefix")
struct UsageCLITests {
    static let commands = [
        ["status"], ["plan"], ["run"], ["show"], ["get"], ["put"], ["delete"], ["models"], ["init"], ["rekey"],
        ["trial"], ["trial", "status"], ["trial", "start"], ["doctor"], []
    ]

    @Test(
        "a mistyped command gets a suggestion, not a complaint about the next option",
        arguments: [
            (["statsu", "--store", "x"], "'statsu' is not a migrate command; did you mean 'status'?"),
            (["rn", "--store", "x"], "did you mean 'run'?"),
            (["dcotor"], "did you mean 'doctor'?"),
            (["trial", "strat", "--store", "x"], "'strat' is not a migrate trial command; did you mean 'start'?"),
            (["frobnicate"], "'frobnicate' is not a migrate command; the commands are status, plan, run")
        ])
    func mistypedCommand(_ arguments: [String], _ message: String) throws {
        let result = try migrate(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("error: '"), "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("Unknown option"))
    }

    @Test(
        "a mistyped option gets ArgumentParser's suggestion and the command's own usage",
        arguments: [
            (
                ["status", "--store", "defaults:/tmp/x.json", "--stor", "x"],
                "error: Unknown option '--stor'. Did you mean '--store'?", "Usage: migrate status "
            ),
            (
                ["run", "--store", "defaults:/tmp/x.json", "--dry-rn"],
                "error: Unknown option '--dry-rn'. Did you mean '--dry-run'?", "Usage: migrate run "
            ),
            (
                ["trial", "status", "--store", "defaults:/tmp/x.json", "--lenght-days", "3"],
                "error: Unknown option '--lenght-days'. Did you mean '--length-days'?", "Usage: migrate trial status "
            ),
            (
                ["doctor", "--keyring-timout", "3"],
                "error: Unknown option '--keyring-timout'. Did you mean '--keyring-timeout'?",
                "Usage: migrate doctor "
            ),
            // A required option missing is said first, with its help.
            (
                ["status", "--stor", "x"],
                "error: Missing expected argument '--store <uri>'\nHelp:  --store <uri>  The store:",
                "Usage: migrate status "
            )
        ])
    func mistypedOption(_ arguments: [String], _ message: String, _ usage: String) throws {
        let result = try migrate(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix(message), "\(result.stderr)")
        #expect(result.stderr.contains("\n" + usage), "\(result.stderr)")
    }

    @Test("get, put, delete and init neither list nor accept options that do not apply to them")
    func perCommandOptions() throws {
        let notFor: [String: [String]] = [
            "get": ["--model", "--device-id", "--app-id", "--dry-run"],
            "put": ["--model", "--device-id", "--app-id"],
            "delete": ["--model", "--device-id", "--app-id"],
            "init": ["--model", "--device-id", "--app-id", "--keyring-timeout"],
            "rekey": ["--model", "--device-id", "--app-id", "--keyring-timeout"],
            "models": ["--store", "--model"],
            "trial status": ["--model"]
        ]
        for (command, options) in notFor {
            let words = command.split(separator: " ").map(String.init)
            // The store a command needs, so that the option is the only thing wrong.
            let store =
                command == "models"
                ? [] : ["--store", ["init", "rekey"].contains(command) ? "file:/tmp/x" : "defaults:/tmp/x.json"]
            let help = try migrate(words + ["--help"])
            #expect(help.status == 0)
            for option in options {
                #expect(!help.stdout.contains(option + " "), "\(command) --help lists \(option)")
                let refused = try migrate(words + store + [option, "x"])
                #expect(refused.status == 64, "\(command) \(option)")
                #expect(refused.stderr.hasPrefix("error: Unknown option '\(option)'"), "\(refused.stderr)")
                #expect(refused.stderr.contains("\nUsage: migrate \(command) "), "\(refused.stderr)")
            }
        }
        let get = try migrate(["get", "--help"]).stdout
        for option in ["--store", "--master-key", "--keyring-timeout", "--json", "--verbose", "--quiet"] {
            #expect(get.contains(option), "get --help lacks \(option)")
        }
        // The older spellings of --master-key still work, out of the help.
        for option in ["--key-file", "--passphrase-file", "--passphrase-env", "--ask-passphrase", "--keyring-key"] {
            #expect(!get.contains(option), "get --help lists \(option)")
        }
    }

    @Test("a single-value option given twice: the last one is used, as ArgumentParser does; --model repeats")
    func repeatedOption() throws {
        let first = try Suite(legacySuite), second = try Suite("{}")
        let result = try migrate(["status", "--store", first.store, "--store=" + second.store, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try decodeJSON(result.stdout) as? [String: Any])
        #expect(object["store"] as? String == second.store)
        #expect(try decodeRecords(result.stdout).isEmpty)
        let doctor = try migrate(["doctor", "--keyring-timeout", "1", "--timeout", "2"])
        #expect(doctor.status == 64)
        #expect(doctor.stderr.contains("--timeout is the old name of --keyring-timeout"), "\(doctor.stderr)")
        // Two master keys, in either spelling, are refused rather than one picked.
        let keys = try migrate([
            "status", "--store", "file:/tmp/x", "--master-key", "keyring", "--key-file", "/tmp/k"
        ])
        #expect(keys.status == 64)
        #expect(keys.stderr.hasPrefix("error: give only one --master-key"), "\(keys.stderr)")
        // --model stays repeatable.
        let models = try first.run("status", ["--model", "a=Person", "--model", "b=Person"])
        #expect(models.status == 0, "\(models.stderr)")
    }

    @Test("doctor takes --keyring-timeout like every other command; --timeout still works, hidden and deprecated")
    func keyringTimeoutName() throws {
        let help = try migrate(["doctor", "--help"])
        #expect(help.stdout.contains("--keyring-timeout <seconds>"))
        #expect(!help.stdout.contains("--timeout"))
        for option in ["--keyring-timeout", "--timeout"] {
            let result = try migrate(["doctor", option, "0", "--json"])
            #expect(result.status == 64, "\(option)")
            #expect(result.stderr.contains("\(option) must be a number of seconds"), "\(result.stderr)")
        }
        let old = try migrate(["doctor", "--timeout", "0.5", "--json"])
        #expect(old.stderr.contains("warning: --timeout is deprecated; use --keyring-timeout"), "\(old.stderr)")
        #expect([0, 69].contains(old.status))
    }

    @Test("every help screen fits in 80 columns", arguments: commands)
    func helpWidth(_ command: [String]) throws {
        let result = try migrate(command + ["--help"])
        #expect(result.status == 0)
        let wide = result.stdout.split(separator: "\n").filter { $0.count > 80 }
        #expect(wide.isEmpty, "\(command): \(wide)")
    }

    @Test("an error found while running shows the failing command's usage, not the top-level one")
    func usageOfTheCommand() throws {
        let directory = try Suite().directory
        let store = "file:\(directory)/records"
        #expect(try migrate(["init", "--store", store, "--key-file", directory + "/k"]).status == 0)
        let result = try migrate(["run", "--backup", "--store", store, "--key-file", directory + "/k"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("plaintext"))
        #expect(result.stderr.contains("\nUsage: migrate run --store <uri>"), "\(result.stderr)")
        #expect(!result.stderr.contains("migrate <subcommand>"))
    }

    @Test(
        "every error line starts with the same lowercase prefix",
        arguments: [
            ["status"], ["statsu"], ["status", "--store", "sqlite:x"],
            ["get", "k", "--store", "defaults:/nonexistent/x.json"],
            ["run", "--store", "defaults:/tmp/x.json", "--dry-run", "--backup"], ["doctor", "--timeout", "nan"],
            ["trial", "status", "--store", "defaults:/tmp/x.json", "--now", "yesterday"]
        ])
    func oneErrorPrefix(_ arguments: [String]) throws {
        let result = try migrate(arguments)
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("error: "), "\(result.stderr)")
        #expect(!result.stderr.contains("Error:"), "\(result.stderr)")
    }
}
