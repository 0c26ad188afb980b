import Foundation
import ReplicaCore
import Synchronization

/// Saves on A that are durably committed on B, per second.
///
/// A writes batches of distinct keys, but never more than `window` saves ahead of what B has
/// applied: PUB/SUB has no flow control, and a sender that outruns its receiver only measures
/// how fast drops are repaired. The window keeps the pipe full without overflowing it, so the
/// figure is the sustained rate of the whole path: commit on A, publish, receive, commit on B.
enum ReplicatedThroughputBench {
    static let window = 16_000

    static func run(saves: Int, payload: Int, storage: String, curve: Bool) async throws -> BenchReport.Throughput {
        let (pair, _, _) = try await BenchPair.make(storage: storage, curve: curve)
        guard let pair else { throw BenchError("no pair") }
        let value = [UInt8](repeating: 0x61, count: payload)
        let batchSize = 1_000
        let applied = Mutex(0)
        let watcher = Task {
            while !Task.isCancelled {
                let count = await pair.b.counterSnapshot().updatesApplied
                applied.withLock { $0 = count }
                if count >= saves { break }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        let start = ContinuousClock.now
        var issued = 0
        while issued < saves {
            while issued - applied.withLock({ $0 }) > window - batchSize { try await Task.sleep(for: .microseconds(200)) }
            let batch = (issued..<min(issued + batchSize, saves)).map { index in
                var payload = value
                payload[0] = UInt8(truncatingIfNeeded: index)
                return Replica.WriteRequest(key: "k\(index)", payload: payload)
            }
            try await pair.a.write(batch)
            issued += batch.count
        }
        await watcher.value
        let elapsed = ContinuousClock.now - start
        if ProcessInfo.processInfo.environment["REPLICA_BENCH_VERBOSE"] != nil {
            let status = await pair.b.status()
            FileHandle.standardError.write(Data("B: \(status.counters)\n".utf8))
        }
        await pair.close()
        return BenchReport.Throughput(messages: saves, seconds: elapsed / .seconds(1))
    }
}
