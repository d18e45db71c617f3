import Foundation
import Keepsake
import KeepsakePostgres
import Metrics
import MetricsTestKit
import Migrations
import Testing

/// The metrics backend of this test process: bootstrapped once (swift-metrics allows one per
/// process); only this suite reads it.
let testMetrics: TestMetrics = {
    let metrics = TestMetrics()
    MetricsSystem.bootstrap(metrics)
    return metrics
}()

extension PostgresServerTests {
    @Suite("Metrics of the PostgreSQL store")
    struct MetricsTests {
        func total(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
            testMetrics.counters.filter { counter in
                counter.label == label && counter.dimensions.count == dimensions.count
                    && zip(counter.dimensions, dimensions).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
            }.map(\.totalValue).reduce(0, +)
        }

        @Test("each call is counted and timed by scheme, operation and outcome; no key or value in a label")
        func callsCounted() async throws {
            _ = testMetrics
            let store = try TestServer.store(prefix: "metrics")
            let vault = Vault(store: store)
            let read = [("scheme", "postgresql"), ("operation", "read"), ("outcome", "ok")]
            let update = [("scheme", "postgresql"), ("operation", "update"), ("outcome", "ok")]
            let readsBefore = total("keepsake_store_calls_total", read)
            let updatesBefore = total("keepsake_store_calls_total", update)
            try await vault.update(tallyChain, forKey: "secret-key-name") { TallyV0(count: ($0?.count ?? 0) + 1) }
            try await vault.update(tallyChain, forKey: "secret-key-name") { TallyV0(count: ($0?.count ?? 0) + 1) }
            #expect(try await vault.load(tallyChain, forKey: "secret-key-name")?.value.count == 2)
            #expect(total("keepsake_store_calls_total", read) == readsBefore + 1)
            #expect(total("keepsake_store_calls_total", update) == updatesBefore + 2)
            let timer = try testMetrics.expectTimer("keepsake_store_call_duration_seconds", read)
            #expect(!timer.values.isEmpty)
            #expect(
                !(try testMetrics.expectTimer("keepsake_store_lock_wait_seconds", [("scheme", "postgresql")])).values
                    .isEmpty)
            // A failed call is counted under its code.
            var configuration = store.configuration
            configuration.endpoint = .tcp(host: "127.0.0.1", port: 9)
            configuration.connectTimeout = .seconds(1)
            let unreachable = try PostgresStore(configuration: configuration)
            let failedBefore = total(
                "keepsake_store_calls_total",
                [("scheme", "postgresql"), ("operation", "read"), ("outcome", "unavailable")])
            #expect(throws: KeepsakeError.self) { try readSynchronously(unreachable, "k") }
            #expect(
                total(
                    "keepsake_store_calls_total",
                    [("scheme", "postgresql"), ("operation", "read"), ("outcome", "unavailable")])
                    == failedBefore + 1)
            // A load that migrates counts the migration and its write-back.
            let migrations = total("keepsake_migrations_total", [("scheme", "postgresql")])
            let writeBacks = total("keepsake_write_backs_total", [("scheme", "postgresql"), ("outcome", "ok")])
            try store.setData(Data(#"{"name":"Ann","age":"30"}"#.utf8), forKey: "person")
            #expect(try await vault.load(Person.chain, forKey: "person")?.writeBack == .written)
            #expect(total("keepsake_migrations_total", [("scheme", "postgresql")]) == migrations + 1)
            #expect(
                total("keepsake_write_backs_total", [("scheme", "postgresql"), ("outcome", "ok")]) == writeBacks + 1)
            let labels =
                testMetrics.counters.flatMap { $0.dimensions.map(\.1) }
                + testMetrics.timers.flatMap { $0.dimensions.map(\.1) }
            #expect(!labels.contains { $0.contains("secret-key-name") || $0.contains("count") })
        }
    }
}
