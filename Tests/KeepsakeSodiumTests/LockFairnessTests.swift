import Foundation
import Keepsake
import Synchronization
import Testing

@testable import KeepsakeSodium

@Suite("The writer lock is taken in turn: writers in tight loops do not starve one another")
struct LockFairnessTests {
    @Test(
        "4 instances write in tight loops for 4 s with a 1 s lock timeout: none times out, each writes its share"
    )
    func tightLoops() async throws {
        let writers = 4
        let (counts, timeouts) = try await onThread {
            try withTemporaryDirectory { directory in
                _ = try makeKeyFileStore(in: directory)
                let counts = Mutex([Int](repeating: 0, count: writers))
                let timeouts = Mutex<[String]>([])
                let stop = Atomic(false)
                let group = DispatchGroup()
                for writer in 0..<writers {
                    let store = try SodiumFileStore(
                        directory: directory + "/store", key: .keyFile(path: directory + "/store.key"),
                        lockTimeout: .seconds(1))
                    group.enter()
                    Thread.detachNewThread {
                        defer { group.leave() }
                        var round = 0
                        while !stop.load(ordering: .relaxed) {
                            round += 1
                            do throws(KeepsakeError) {
                                try store.setData(Data("\(round)".utf8), forKey: "w\(writer)")
                                counts.withLock { $0[writer] += 1 }
                            } catch {
                                timeouts.withLock { $0.append("writer \(writer): \(error)") }
                            }
                        }
                    }
                }
                Thread.sleep(forTimeInterval: 4)
                stop.store(true, ordering: .relaxed)
                group.wait()
                return (counts.withLock { $0 }, timeouts.withLock { $0 })
            }
        }
        #expect(timeouts.isEmpty, "\(timeouts.prefix(3))")
        let total = counts.reduce(0, +)
        // Taken in turn, each writer gets about a quarter of the writes; a starved one gets few.
        #expect(counts.allSatisfy { $0 * writers * 4 >= total }, "writes per writer: \(counts)")
        print("lock fairness: writes per writer in 4 s \(counts)")
    }
}
