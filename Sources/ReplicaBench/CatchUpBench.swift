import Foundation
import ReplicaCore

/// A late joiner: A holds `keys` keys, B starts empty; the time until B's digest equals A's,
/// and the sync bytes B received.
enum CatchUpBench {
    static func run(keys: Int, payload: Int) async throws -> BenchReport.CatchUp {
        let (_, a, makeB) = try await BenchPair.make(storage: "sqlite", startB: false)
        let value = [UInt8](repeating: 0x61, count: payload)
        for start in stride(from: 0, to: keys, by: 5_000) {
            try await a.write((start..<min(start + 5_000, keys)).map { Replica.WriteRequest(key: "key\($0)", payload: value) })
        }
        let target = await a.digestRoot()
        let begin = ContinuousClock.now
        let b = try await makeB()
        try await waitFor("B to catch up \(keys) keys") { await b.digestRoot() == target }
        let elapsed = ContinuousClock.now - begin
        let bytes = await b.counterSnapshot().syncBytesReceived
        await a.shutdown()
        await b.shutdown()
        return BenchReport.CatchUp(keys: keys, seconds: elapsed / .seconds(1), bytes: bytes)
    }
}
