import Foundation
import Keepsake
import KeepsakePostgres
import KeepsakeTesting
import Migrations
import Testing

/// Person's versions as a model of many records under `tenant-` keys.
enum Tenant {
    static let chain = ModelChain<PersonV3>(name: "Tenant", defaultKeys: [], keyPatterns: ["tenant-*"])
}

extension PostgresServerTests {
    @Suite("Many records of one model on PostgreSQL")
    struct ManyRecordsTests {
        static let context = MigrationContext.fixed(
            now: Date(timeIntervalSince1970: 0), deviceIdentity: "dev", identifierPrefix: "u")

        /// Keys on both sides of every edge of the `tenant-` range, by bytes.
        static let edgeKeys = [
            "tenant", "tenant-", "tenant-1", "tenant-10", "tenant-2", "tenant-\u{E9}", "tenant-\u{10FFFF}",
            "tenant-\u{10FFFF}\u{10FFFF}z", "tenant.", "tenant.0", "tenanT-1", "tenant_1", "tenant,", "Tenant-1",
            "tenant-a/b", "tenant-%", "tenant-_"
        ]

        @Test("a pattern reads exactly the keys that start with its prefix, in byte order, page by page")
        func prefixScanIsExact() throws {
            let store = try TestServer.store(prefix: "scan")
            _ = try store.commit(Self.edgeKeys.map { StoreWrite(key: $0, value: Data(#"{"k":1}"#.utf8)) })
            for prefix in ["tenant-", "tenant", "tenant-\u{10FFFF}", "", "t", "zzz", "tenant-%"] {
                let pattern = KeyPattern(prefix: prefix)
                let expected = Self.edgeKeys.filter { $0.utf8.starts(with: prefix.utf8) }
                    .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                #expect(try store.keys(matching: pattern) == expected, "prefix '\(prefix)'")
                for limit in [1, 2, 5, 100] {
                    var walked: [String] = []
                    var after: String?
                    while true {
                        let page = try store.records(matching: pattern, after: after, limit: limit)
                        walked += page.map(\.key)
                        #expect(page.allSatisfy { (try? $0.result.get()) == Data(#"{"k":1}"#.utf8) })
                        guard page.count == limit, let last = page.last else { break }
                        after = last.key
                    }
                    #expect(walked == expected, "prefix '\(prefix)', pages of \(limit)")
                }
            }
        }

        @Test("a table Keepsake creates has the key index, and a pattern's range is read through it")
        func patternUsesIndex() throws {
            let table = newTable("index")
            let store = try PostgresStore(configuration: try PostgresConfiguration(parsing: storeURI(table: table)))
            try store.setData(Data("1".utf8), forKey: "tenant-1")
            let plan = try SQL.run(
                """
                SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN SELECT key FROM \(table) WHERE key COLLATE "C" >= 'tenant-' \
                AND key COLLATE "C" < 'tenant.' ORDER BY key COLLATE "C" LIMIT 256
                """)
            #expect(plan.contains("Scan using keepsake_keys_"), "\(plan)")
            #expect(!plan.contains("Sort"), "the index gives the order: \(plan)")
            #expect(try store.diagnosis().hasPrefix("PostgreSQL ") && !(try store.diagnosis().contains("no key index")))
        }

        @Test(
            "a table an older release made, without the key index, is still read whole and in order; doctor names the fix"
        )
        func tableWithoutIndex() throws {
            let table = newTable("noindex")
            try SQL.seedOldPeople(table: table, count: 3 * 2_048 + 5)
            let store = try PostgresStore(configuration: try PostgresConfiguration(parsing: storeURI(table: table)))
            var keys: [String] = []
            try store.forEachRecord { count, key, _ in
                #expect(count == 3 * 2_048 + 5)
                keys.append(key)
            }
            #expect(keys.count == 3 * 2_048 + 5)
            #expect(keys == keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            let diagnosis = try store.diagnosis()
            #expect(diagnosis.contains("the table has no key index"), "\(diagnosis)")
            #expect(diagnosis.contains(#"CREATE INDEX CONCURRENTLY IF NOT EXISTS keepsake_keys_"#), "\(diagnosis)")
            // The statement doctor gives creates it, and reads are paged from then on.
            let statement = try #require(diagnosis.components(separatedBy: "sort it): ").last)
            try SQL.run(statement)
            #expect(!(try store.diagnosis().contains("no key index")))
            var paged: [String] = []
            try store.forEachRecord { _, key, _ in paged.append(key) }
            #expect(paged == keys)
        }

        @Test(
            "100,000 bare V0 records written by psql: the vault streams them, and migrate status and run --model 'tenant-*=Person' migrate them all"
        )
        func hundredThousandTenants() async throws {
            let count = 100_000
            let table = newTable("tenants")
            let store = try PostgresStore(configuration: try PostgresConfiguration(parsing: storeURI(table: table)))
            // The first record makes the table as Keepsake makes it; psql adds the others.
            try store.setData(Data(#"{"name":"first","age":"1"}"#.utf8), forKey: "tenant-000000")
            try SQL.run(
                """
                INSERT INTO \(table) (key, record, version)
                SELECT 'tenant-' || lpad(i::text, 6, '0'),
                    convert_to(format('{"name":"T%s","age":"%s"}', i, i % 90), 'UTF8'), 1
                FROM generate_series(1, \(count - 1)) AS i
                """)
            let dataSize = try #require(
                Int(try SQL.run("SELECT sum(octet_length(key) + octet_length(record)) FROM \(table)")))

            // The library: every record, migrated in memory, a page at a time; nothing written.
            let vault = Vault(store: store, context: Self.context)
            var walked = 0
            var sample: PersonV3?
            for try await record in vault.records(of: Tenant.chain, pageSize: 1_000) {
                let decoded = try record.result.get()
                #expect(decoded.storedVersion == 0)
                if record.key == "tenant-054321" { sample = decoded.value }
                walked += 1
            }
            #expect(walked == count)
            #expect(sample?.alias == "T54321")
            #expect(try await vault.keys(of: Tenant.chain).count == count)
            #expect(try SQL.countMigrated(table: table).migrated == 0)

            let uri = storeURI(table: table)
            let small = storeURI(table: newTable("base"))
            #expect(
                try migrateBinary.run(["put", "tenant-1", "--store", small], stdin: #"{"name":"A","age":"1"}"#).status
                    == 0)
            let base = try migrateBinary.runMeasuringPeakMemory(
                ["status", "--store", small, "--device-id", "dev", "--model", "tenant-*=Person"])
            #expect(base.result.status == 0, "\(base.result.stderr)")
            let status = try migrateBinary.runMeasuringPeakMemory(
                ["status", "--store", uri, "--device-id", "dev", "--model", "tenant-*=Person"])
            #expect(status.result.status == 0, "\(status.result.stderr)")
            #expect(status.result.stdout.hasSuffix("\(count) outdated\n"), "\(status.result.stdout.suffix(300))")
            let run = try migrateBinary.runMeasuringPeakMemory(
                ["run", "--store", uri, "--device-id", "dev", "--model", "tenant-*=Person"])
            #expect(run.result.status == 0, "\(run.result.stderr)")
            #expect(run.result.stdout.hasSuffix("\(count) migrated\n"), "\(run.result.stdout.suffix(300))")
            #expect(try SQL.countMigrated(table: table) == (count, count))
            let migratedSize = try #require(
                Int(try SQL.run("SELECT sum(octet_length(key) + octet_length(record)) FROM \(table)")))

            let mib = { (kib: Int) in String(format: "%.1f MiB", Double(kib) / 1024) }
            print(
                """
                PostgreSQL: \(count) records, \(mib(dataSize / 1024)) stored (\(mib(migratedSize / 1024)) migrated); \
                migrate's base \(mib(base.peakKiB)); status peak \(mib(status.peakKiB)) \
                (\(mib(status.peakKiB - base.peakKiB)) above base), run peak \(mib(run.peakKiB)) \
                (\(mib(run.peakKiB - base.peakKiB)) above base)
                """)
            #expect(status.peakKiB - base.peakKiB <= 3 * dataSize / 1024, "status held more than 3× the records")
            #expect(
                run.peakKiB - base.peakKiB <= 3 * (dataSize + migratedSize) / 1024,
                "run held more than 3× the records read and written")
        }
    }
}
