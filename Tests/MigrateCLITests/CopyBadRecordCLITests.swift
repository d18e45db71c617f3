import Foundation
import Testing

@Suite("migrate copy goes past a record that cannot be read")
struct CopyBadRecordCLITests {
    @Test(
        "copy --all from a file store with one tampered record copies the rest, exits 65, and --move leaves the bad one"
    )
    func tamperedRecord() throws {
        for move in [false, true] {
            let directory = try Suite().directory
            let store = "file:\(directory)/records"
            let key = ["--key-file", directory + "/records.key"]
            #expect(try migrate(["init", "--store", store] + key).status == 0)
            for name in ["a", "b", "c"] {
                #expect(try migrate(["put", name, "--store", store] + key, stdin: #""\#(name)""#).status == 0)
            }
            // Tamper with one record file: it no longer opens.
            let files = try FileManager.default.contentsOfDirectory(atPath: directory + "/records")
                .filter { $0.count > 20 }.sorted()
            let victim = try #require(files.first)
            var bytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/records/" + victim))
            bytes[bytes.count - 1] ^= 0x01
            try bytes.write(to: URL(fileURLWithPath: directory + "/records/" + victim))

            let suite = "defaults:\(directory)/copy.json"
            let copy = try migrate(
                ["copy", "--from", store, "--to", suite, "--all", "--json", "--allow-plaintext"]
                    + (move ? ["--move"] : [])
                    + key.map { $0 == "--key-file" ? "--from-key-file" : $0 })
            #expect(copy.status == 65, "\(copy.stdout)\(copy.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(copy.stdout.utf8)) as? [String: Any])
            #expect(report["outcome"] as? String == "partial")
            let states = (report["records"] as? [[String: Any]] ?? []).compactMap { $0["state"] as? String }
            #expect(states.sorted() == ["failed", move ? "moved" : "copied", move ? "moved" : "copied"].sorted())
            let copied = try migrate(["get", "a", "--store", suite]).status == 0 ? 1 : 0
            let copiedB = try migrate(["get", "b", "--store", suite]).status == 0 ? 1 : 0
            let copiedC = try migrate(["get", "c", "--store", suite]).status == 0 ? 1 : 0
            #expect(copied + copiedB + copiedC == 2, "the two good records are in the destination")
            let left = try FileManager.default.contentsOfDirectory(atPath: directory + "/records")
                .filter { $0.count > 20 }
            #expect(left.contains(victim), "the bad record stays in the source")
            #expect(left.count == (move ? 1 : 3))
        }
    }
}
