import Foundation
import ReplicaCore

/// The store alone, no network: batches of new entries merged into a SQLite (or memory) store.
/// Separates the cost of durability from the cost of the protocol.
enum StoreBench {
    static func run(entries: Int, payload: Int, storage: String, batchSize: Int = 1_000) throws -> BenchReport.Throughput {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-store-bench-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store: any ReplicaStore = storage == "memory" ? MemoryStore(node: "a") : try SQLiteStore(directory: directory, node: "a")
        let value = [UInt8](repeating: 0x61, count: payload)
        var clock = HybridLogicalClock()
        let start = ContinuousClock.now
        for first in stride(from: 0, to: entries, by: batchSize) {
            let batch = (first..<min(first + batchSize, entries)).map { index in
                Entry(key: "k\(index)", version: Version(timestamp: clock.tick(), node: "b"), payload: value)
            }
            _ = try store.merge(batch)
        }
        return BenchReport.Throughput(messages: entries, seconds: (ContinuousClock.now - start) / .seconds(1))
    }

    /// The longest single commit while a memory store grows from empty to `keys` keys, one new
    /// key per commit: what a growing store costs its loop at once. (Tables that double by
    /// copying every entry stopped it for 224-279 ms at a million keys; they are in shards now,
    /// `ShardedTable`.)
    static func longestCommitWhileGrowing(keys: Int, payload: Int) -> BenchReport.Growth {
        let store = MemoryStore(node: "a")
        let value = [UInt8](repeating: 0x61, count: payload)
        var clock = HybridLogicalClock()
        var longest = Duration.zero
        let start = ContinuousClock.now
        for index in 0..<keys {
            let entry = Entry(key: "k\(index)", version: Version(timestamp: clock.tick(), node: "b"), payload: value)
            let began = ContinuousClock.now
            _ = try? store.merge([entry])
            longest = max(longest, .now - began)
        }
        return BenchReport.Growth(keys: keys, longestCommitMicros: longest / .microseconds(1), seconds: (ContinuousClock.now - start) / .seconds(1))
    }
}
