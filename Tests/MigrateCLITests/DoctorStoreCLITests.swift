import Foundation
import Testing

@Suite("migrate doctor --store")
struct DoctorStoreCLITests {
    @Test("a suite that exists is usable; a missing one is not (69), with its typed code")
    func doctorOpensTheStore() throws {
        let suite = try Suite("{}")
        let usable = try migrate(["doctor", "--store", suite.store, "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(usable.stdout.utf8)) as? [[String: Any]])
        #expect(rows.last?["store"] as? String == suite.store)
        #expect(rows.last?["usable"] as? Bool == true, "\(rows)")

        let missing = try migrate(["doctor", "--store", suite.store + ".none", "--json"])
        #expect(missing.status == 69)
        let last = try #require(
            (try JSONSerialization.jsonObject(with: Data(missing.stdout.utf8)) as? [[String: Any]])?.last)
        #expect(last["usable"] as? Bool == false && last["status"] as? String == "notFound", "\(last)")
        #expect(try migrate(["doctor", "--store", "nothing"]).status == 64)
    }
}
