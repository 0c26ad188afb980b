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
}
