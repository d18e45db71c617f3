import Foundation
import Keepsake
import Testing

/// Untrusted bytes — a stored record, an argument — give a correct result or a documented exit
/// code, never a crash (a trap ends the process by a signal, which no exit code here matches).
@Suite("migrate CLI: hostile input")
struct HostileInputCLITests {
    @Test(
        "a stored date out of range is exit 65 for status, plan, run and show; the other records still migrate",
        arguments: [
            "1e400", "1e300", "-1e12", #""0000-01-01T00:00:00Z""#, #""9999-12-31T23:59:59.99999999999999999Z""#,
            #""2023-02-30T00:00:00Z""#
        ])
    func storedDateOutOfRange(_ date: String) throws {
        let trial = #"{"version":0,"startDate":\#(date)}"#
        let suite = try Suite(#"{"person": {"name":"Ada","age":"36"}, "trialInfo": \#(trial)}"#)
        for command in ["status", "plan"] {
            let result = try suite.run(command)
            #expect(result.status == 65, "\(command): \(result.stderr)")
            #expect(result.stdout.contains("Invalid date"), "\(command)")
        }
        let show = try suite.run("show", ["trialInfo"])
        #expect(show.status == 65, "\(show.stderr)")
        #expect(show.stderr.contains("at startDate: Invalid date"))
        let run = try suite.run("run", ["--json"])
        #expect(run.status == 65, "\(run.stderr)")
        let records = try decodeRecords(run.stdout)
        #expect(records.map { $0["state"] as? String } == ["migrated", "unreadable"])
        #expect(try errorObject(records[1]["error"])["code"] as? String == "corruptRecord")
        #expect(suite.contents.contains(#""trialInfo": \#(trial)"#), "the bad record's bytes are unchanged")
        #expect(suite.contents.contains(#""schema":"Person","version":3"#))
    }

    @Test(
        "trial status and start on a record with a date out of range are unknown (82), and nothing is written",
        arguments: ["1e400", "-1e12", #""10000-01-01T00:00:00Z""#])
    func trialOnHostileDate(_ date: String) throws {
        let contents = #"{"trialInfo": {"version":0,"startDate":\#(date)}}"#
        let suite = try Suite(contents)
        for command in ["status", "start"] {
            let result = try runBinary(migrateBinary, ["trial", command, "--store", suite.store, "--device-id", "d"])
            #expect(result.status == 82, "trial \(command): \(result.stderr)")
            #expect(result.stderr.contains("error: trial state unknown"))
        }
        #expect(suite.contents == contents)
    }

    @Test(
        "--now outside the years 0001–9999 or an impossible date is a usage error (64), and nothing is written",
        arguments: [
            "0000-01-01T00:00:00Z", "99999-01-01T00:00:00Z", "2023-02-30T00:00:00Z", "2023-01-01T24:00:00Z",
            "2023-01-01T00:00:00+25:00", "tomorrow"
        ])
    func nowOutOfRange(_ now: String) throws {
        let suite = try Suite()
        for command in ["status", "start"] {
            let result = try runBinary(
                migrateBinary,
                [
                    "trial", command, "--store", suite.store, "--device-id", "d",
                    "--now", now
                ])
            #expect(result.status == 64, "\(result.stderr)")
            #expect(result.stderr.contains("--now must be an ISO 8601 time"))
        }
        #expect(suite.contents == "<missing>")
    }

    @Test("--now in range is used exactly as given")
    func nowInRange() throws {
        let suite = try Suite()
        let start = try runBinary(
            migrateBinary,
            [
                "trial", "start", "--store", suite.store, "--device-id", "d",
                "--now", "9999-12-01T00:00:00.5Z", "--json"
            ])
        #expect(start.status == 0, "\(start.stderr)")
        #expect(suite.contents.contains(#""startDate":"9999-12-01T00:00:00.500Z""#))
        #expect(suite.contents.contains(#""trialInfo.lastSeen": "9999-12-01T00:00:00.500Z""#))
    }

    @Test(
        "timeouts and trial lengths that cannot be converted are usage errors (64), never a crash",
        arguments: [
            ["status", "--keyring-timeout", "inf"], ["status", "--keyring-timeout", "nan"],
            ["status", "--keyring-timeout", "1e300"], ["status", "--keyring-timeout", "0"],
            ["status", "--keyring-timeout=-1"], ["trial", "status", "--length-days", "9223372036854775807"],
            ["trial", "status", "--length-days", "0"],
            ["trial", "status", "--tolerance-minutes", "9223372036854775807"],
            ["trial", "status", "--tolerance-minutes=-1"]
        ])
    func unconvertibleOptions(_ arguments: [String]) throws {
        let suite = try Suite()
        let result = try runBinary(migrateBinary, arguments + ["--store", suite.store, "--device-id", "d"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("must be"), "\(result.stderr)")
    }

    @Test("doctor --timeout inf is a usage error (64)", arguments: ["inf", "nan", "0", "1e300"])
    func doctorTimeout(_ value: String) throws {
        let result = try migrate(["doctor", "--timeout", value])
        #expect(result.status == 64, "\(result.stderr)")
    }

    @Test("one corrupt record file in a file: store does not stop status or run: it exits 65, the rest migrate")
    func corruptRecordFile() throws {
        let directory = try Suite().directory
        let store = "file:\(directory)/records"
        let key = ["--key-file", directory + "/records.key"]
        #expect(try migrate(["init", "--store", store] + key).status == 0)
        for (name, value) in [
            ("person", #"{"name":"Ada","age":"36"}"#), ("theme", #""dark""#),
            ("trialInfo", #"{"version":0,"startDate":700000000}"#)
        ] {
            #expect(try migrate(["put", name, "--store", store] + key, stdin: value).status == 0)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory + "/records").filter {
            $0.hasSuffix(".ksr")
        }
        #expect(files.count == 3)
        let victim = directory + "/records/" + files.sorted()[0]
        var bytes = try Data(contentsOf: URL(fileURLWithPath: victim))
        bytes[bytes.count - 1] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: victim))

        let status = try migrate(["status", "--store", store, "--json"] + key)
        #expect(status.status == 65, "\(status.stderr)")
        let listed = try decodeRecords(status.stdout)
        #expect(listed.count == 3)
        #expect(
            listed.filter { $0["state"] as? String == "unreadable" }.map { $0["key"] as? String } == [files.sorted()[0]]
        )
        let run = try migrate(["run", "--store", store, "--device-id", "dev", "--json"] + key)
        #expect(run.status == 65, "\(run.stderr)")
        let reports = try decodeRecords(run.stdout)
        #expect(reports.filter { $0["state"] as? String == "unreadable" }.count == 1)
        #expect(
            reports.filter { $0["state"] as? String == "migrated" }.count
                + reports.filter { $0["state"] as? String == "unmanaged" }.count == 2)
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == bytes, "the corrupt file is left as it is")
    }

    @Test("put of the composed and the decomposed form of café keeps two keys; get reads each one's bytes")
    func exactKeys() throws {
        let suite = try Suite()
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(try suite.run("put", [composed], stdin: "1").status == 0)
        #expect(try suite.run("put", [decomposed], stdin: "2").status == 0)
        #expect(try suite.run("get", [composed]).stdout == "1")
        #expect(try suite.run("get", [decomposed]).stdout == "2")
        let status = try suite.run("status", ["--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let keys = try decodeRecords(status.stdout).compactMap { $0["key"] as? String }
        #expect(keys.map { Array($0.utf8) } == [Array(decomposed.utf8), Array(composed.utf8)])
        #expect(try suite.run("delete", [composed]).status == 0)
        #expect(try suite.run("get", [decomposed]).stdout == "2")
    }

    @Test("a FIFO as the suite, the key file or the passphrase file is refused at once (64), never waited on")
    func fifos() throws {
        let directory = try Suite().directory
        try makeFIFO(directory + "/suite.json")
        let suite = try migrate(["status", "--store", "defaults:\(directory)/suite.json"])
        #expect(suite.status == 64, "\(suite.stderr)")
        #expect(suite.stderr.contains("it is a FIFO, not a regular file"))

        let store = "file:\(directory)/records"
        #expect(try migrate(["init", "--store", store, "--key-file", directory + "/records.key"]).status == 0)
        try makeFIFO(directory + "/fifo.key")
        let key = try migrate(["status", "--store", store, "--key-file", directory + "/fifo.key"])
        #expect(key.status == 64, "\(key.stderr)")
        #expect(key.stderr.contains("it is a FIFO, not a regular file"))

        try makeFIFO(directory + "/passphrase")
        let passphrase = try migrate(["status", "--store", store, "--passphrase-file", directory + "/passphrase"])
        #expect(passphrase.status == 64, "\(passphrase.stderr)")
        #expect(passphrase.stderr.contains("cannot read the passphrase file \(directory)/passphrase: it is a FIFO"))
    }

    /// Keys a hostile store can hold: ESC sequences, a newline that fakes a table row, C1 CSI,
    /// DEL, a bidirectional override.
    static let hostileKeys = [
        "evil\u{1B}[31mred\u{1B}[0m", "fake\nperson  Person  v3  v3  current", "csi\u{9B}2J", "del\u{7F}x",
        "rtl\u{202E}gpj.exe"
    ]

    /// Whether `text` holds a byte or character a terminal acts on.
    func hasTerminalControls(_ text: String, allowingNewlines: Bool = true) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x0A: return !allowingNewlines
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
            default: return false
            }
        }
    }

    @Test("keys and schema names with control characters are escaped in status, plan and run tables")
    func escapedTables() throws {
        var members = try Self.hostileKeys.map { key in
            "  " + String(decoding: try JSONEncoder().encode(key), as: UTF8.self) + ": 1"
        }
        members.append(#"  "other": {"schema":"\u001b]0;pwned\u0007","version":1,"data":{}}"#)
        let suite = try Suite("{\n" + members.joined(separator: ",\n") + "\n}\n")
        for command in ["status", "plan", "run"] {
            let result = try suite.run(command)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(!hasTerminalControls(result.stdout), "\(command) printed a control character")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(result.stdout.contains(#"evil\u{1B}[31mred\u{1B}[0m"#), "\(command)")
            #expect(result.stdout.contains(#"fake\u{A}person"#), "\(command)")
            #expect(result.stdout.contains(#"csi\u{9B}2J"#) && result.stdout.contains(#"del\u{7F}x"#))
            #expect(result.stdout.contains(#"rtl\u{202E}gpj.exe"#))
            #expect(!lines.contains { $0.hasPrefix("person") }, "\(command): a key faked a table row")
            if command != "plan" { #expect(result.stdout.contains(#"\u{1B}]0;pwned\u{7}"#), "\(command)") }
            guard command != "plan", let header = lines.firstIndex(where: { $0.hasPrefix("KEY ") }) else { continue }
            // However wide the escaped keys and names are, each row's state sits under STATE: the
            // columns are measured as printed (escaped), without building the rows.
            let headerLine = lines[header]
            let stateColumn = headerLine.range(of: "STATE").map {
                headerLine.distance(from: headerLine.startIndex, to: $0.lowerBound)
            }
            #expect(stateColumn != nil, "\(command): no STATE column")
            let rows = lines[(header + 1)...].prefix(members.count).map { Array($0) }
            #expect(rows.count == members.count, "\(command)")
            let states = ["current", "outdated", "migrated", "unmanaged", "unreadable", "newer"]
            for row in rows {
                let state = String(row.dropFirst(stateColumn ?? 0).prefix { $0 != " " })
                #expect(states.contains(state), "\(command): \(String(row)) has \(state) under STATE")
            }
        }
    }

    @Test("--json keeps keys exact, with every control character as a JSON escape")
    func exactJSON() throws {
        let members = try Self.hostileKeys.map { key in
            "  " + String(decoding: try JSONEncoder().encode(key), as: UTF8.self) + ": 1"
        }
        let suite = try Suite("{\n" + members.joined(separator: ",\n") + "\n}\n")
        let result = try suite.run("status", ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!hasTerminalControls(result.stdout))
        #expect(result.stdout.contains(#"csi\u009b2J"#) && result.stdout.contains(#"rtl\u202egpj.exe"#))
        let keys = try decodeRecords(result.stdout).compactMap { $0["key"] as? String }
        #expect(
            keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
                == Self.hostileKeys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test("errors and messages quoting a key or an argument are escaped on standard error")
    func escapedMessages() throws {
        let suite = try Suite(#"{"x": 1}"#)
        let key = "evil\u{1B}[2J\u{9B}"
        for command in ["show", "get", "delete"] {
            let result = try suite.run(command, [key])
            #expect(result.status == 66)
            #expect(!hasTerminalControls(result.stderr), "\(command)")
            #expect(result.stderr.contains(#"key 'evil\u{1B}[2J\u{9B}'"#), "\(command): \(result.stderr)")
        }
        let put = try suite.run("put", [key], stdin: "1")
        #expect(put.status == 0)
        #expect(!hasTerminalControls(put.stdout))
        let model = try suite.run("status", ["--model", "k\u{1B}[31m=Nobody\u{1B}[0m"])
        #expect(model.status == 64)
        #expect(!hasTerminalControls(model.stderr))
        #expect(model.stderr.contains(#"unknown model 'Nobody\u{1B}[0m'"#))
        let now = try runBinary(migrateBinary, ["trial", "status", "--store", suite.store, "--now", "\u{1B}[31m"])
        #expect(now.status == 64)
        #expect(!hasTerminalControls(now.stderr))
    }

    @Test("two run --backup in a row each keep their own backup folder; a run with nothing to migrate leaves none")
    func backupsNeverCollide() throws {
        let suite = try Suite(legacySuite)
        var backups: [String] = []
        for _ in 0..<2 {
            try Data(legacySuite.utf8).write(to: URL(fileURLWithPath: suite.path))
            let result = try suite.run("run", ["--backup", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let records = try decodeRecords(result.stdout)
            backups.append(try #require(records.first { $0["key"] as? String == "person" }?["backup"] as? String))
        }
        #expect(Set(backups.map { ($0 as NSString).deletingLastPathComponent }).count == 2)
        for path in backups {
            #expect(
                try BackupDirectory.original(forKey: "person", at: path).bytes
                    == Data(#""{\"name\":\"Ada\",\"age\":\"36\"}""#.utf8))
        }
        let folders = try FileManager.default.contentsOfDirectory(atPath: suite.directory + "/suite.backups")
        #expect(try suite.run("run", ["--backup"]).status == 0)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: suite.directory + "/suite.backups").sorted()
                == folders.sorted(), "nothing to back up: no new folder")
    }

    @Test("a key file others may read is refused on open and on init (77), with the chmod that fixes it")
    func looseKeyFile() throws {
        let directory = try Suite().directory
        let store = "file:\(directory)/records"
        let keyPath = directory + "/records.key"
        #expect(try migrate(["init", "--store", store, "--key-file", keyPath]).status == 0)
        #expect(chmod(keyPath, 0o644) == 0)
        let status = try migrate(["status", "--store", store, "--key-file", keyPath])
        #expect(status.status == 77, "\(status.stderr)")
        #expect(status.stderr.contains("chmod 600 \(keyPath)"))
        let other = try migrate(["init", "--store", "file:\(directory)/other", "--key-file", keyPath])
        #expect(other.status == 77, "\(other.stderr)")
        #expect(other.stderr.contains("chmod 600 \(keyPath)"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/other/keepsake.header"))
        #expect(chmod(keyPath, 0o600) == 0)
        #expect(try migrate(["status", "--store", store, "--key-file", keyPath]).status == 0)
    }

    @Test(
        "1,000 --model options are all applied, 8,000 in a --models file too; more --model options are a usage error, and --model elsewhere too"
    )
    func manyModelOptions() throws {
        let suite = try Suite(#"{"k7999":{"name":"Ada","age":"36"},"other":{"name":"Bea","age":"1"}}"#)
        let options = (0..<999).flatMap { ["--model", "k\($0)=Person"] } + ["--model=other=Person"]
        let bounded = try suite.run("status", ["--json"] + options + ["--model", "k1=Person"])
        #expect(bounded.status == 64, "1,001 --model options")
        #expect(
            bounded.stderr.hasPrefix(
                "error: 1001 --model options are more than 1000; map many keys with one pattern (--model 'tenant-*=NAME'), or put them in a file, one KEY=NAME a line, and give --models FILE"
            ), "\(bounded.stderr)")
        let status = try suite.run("status", ["--json"] + options)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(try decodeRecords(status.stdout).map { $0["state"] as? String } == ["unmanaged", "outdated"])

        let file = suite.directory + "/models"
        try Data(((0..<8000).map { "k\($0)=Person" }.joined(separator: "\n") + "\n").utf8)
            .write(to: URL(fileURLWithPath: file))
        let mapped = try suite.run("status", ["--json", "--models", file, "--model=other=Person"])
        #expect(mapped.status == 0, "\(mapped.stderr)")
        let reports = try decodeRecords(mapped.stdout)
        #expect(reports.map { $0["schema"] as? String } == ["Person", "Person"])
        #expect(reports.map { $0["state"] as? String } == ["outdated", "outdated"])
        try Data("k1=Person\nbroken\n".utf8).write(to: URL(fileURLWithPath: file))
        let broken = try suite.run("status", ["--models", file])
        #expect(broken.status == 64)
        #expect(
            broken.stderr.hasPrefix("error: --models \(file) takes KEY=NAME or PATTERN=NAME (got 'broken')"),
            "\(broken.stderr)")

        let models = try migrate(["models", "--model", "a=Person"])
        #expect(models.status == 64, "\(models.stderr)")
        #expect(models.stderr.hasPrefix("error: Unknown option '--model'"))
    }
}
