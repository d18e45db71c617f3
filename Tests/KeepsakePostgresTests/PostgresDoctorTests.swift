import Foundation
import Testing

extension PostgresServerTests {
    @Suite("migrate doctor on a PostgreSQL store")
    struct PostgresDoctorTests {
        @Test("doctor --store names the server's version; an unreachable server is not usable (69)")
        func doctorReportsServer() throws {
            let store = storeURI(table: newTable("doctor"))
            #expect(try migrateBinary.run(["put", "k", "--store", store], stdin: "1").status == 0)
            let doctor = try migrateBinary.run(["doctor", "--store", store, "--json"])
            let rows = try #require(
                try JSONSerialization.jsonObject(with: Data(doctor.stdout.utf8)) as? [[String: Any]], "\(doctor.stdout)"
            )
            let row = try #require(rows.last)
            #expect(row["usable"] as? Bool == true, "\(row)")
            #expect((row["detail"] as? String)?.hasPrefix("PostgreSQL 15") == true, "\(row)")

            // A port nobody listens on: refused at once, reported with its typed code.
            let nowhere = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2&timeout=3"
            let refused = try migrateBinary.run(["doctor", "--store", nowhere, "--json"])
            #expect(refused.status == 69, "\(refused.stdout)\(refused.stderr)")
            let last = try #require(
                (try JSONSerialization.jsonObject(with: Data(refused.stdout.utf8)) as? [[String: Any]])?.last)
            #expect(last["usable"] as? Bool == false && (last["status"] as? String)?.isEmpty == false, "\(last)")
        }
    }
}
