import Foundation
import ReplicaCore

/// Saves on A that are durably committed on B, per second: A writes batches of distinct keys
/// (several batches in flight), and the clock stops when B has applied every one of them.
enum ReplicatedThroughputBench {
    static func run(saves: Int, payload: Int, storage: String, curve: Bool) async throws -> BenchReport.Throughput {
        let (pair, _, _) = try await BenchPair.make(storage: storage, curve: curve)
        guard let pair else { throw BenchError("no pair") }
        let value = [UInt8](repeating: 0x61, count: payload)
        let batchSize = 1_000
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            let writers = 4
            for writer in 0..<writers {
                group.addTask {
                    var index = writer * batchSize
                    while index < saves {
                        let batch = (index..<min(index + batchSize, saves)).map { Replica.WriteRequest(key: "k\($0)", payload: value) }
                        try await pair.a.write(batch)
                        index += writers * batchSize
                    }
                }
            }
            try await group.waitForAll()
        }
        try await waitFor("B to apply \(saves) saves") { await pair.b.counterSnapshot().updatesApplied >= saves }
        let elapsed = ContinuousClock.now - start
        if ProcessInfo.processInfo.environment["REPLICA_BENCH_VERBOSE"] != nil {
            let status = await pair.b.status()
            FileHandle.standardError.write(Data("B: \(status.counters) peers: \(status.peers)\n".utf8))
            let statusA = await pair.a.status()
            FileHandle.standardError.write(Data("A: \(statusA.counters)\n".utf8))
        }
        await pair.close()
        return BenchReport.Throughput(messages: saves, seconds: elapsed / .seconds(1))
    }
}
