import Foundation
import Histogram
import ReplicaCore
import Synchronization

/// Save on A to applied on B, in microseconds. Open loop: saves are issued on schedule
/// (`rate` per second) whether or not earlier ones finished, so queueing shows in the tail;
/// with no rate, as fast as A accepts them with at most 5,000 outstanding.
enum LatencyBench {
    static func run(saves: Int, rate: Int?, payload: Int) async throws -> BenchReport.Latency {
        let (pair, _, _) = try await BenchPair.make(storage: "sqlite")
        guard let pair else { throw BenchError("no pair") }
        let value = [UInt8](repeating: 0x61, count: payload)
        let sentAt = Mutex([ContinuousClock.Instant?](repeating: nil, count: saves))
        let changes = await pair.b.changes(prefix: "lat")
        let outstanding = Mutex(0)

        let receiver = Task { () -> Histogram<UInt64> in
            var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
            var seen = 0
            for await change in changes {
                let now = ContinuousClock.now
                guard let index = Int(change.entry.key.dropFirst(3)), let sent = sentAt.withLock({ $0[index] }) else { continue }
                histogram.record(UInt64(max(0, (now - sent) / .microseconds(1))))
                outstanding.withLock { $0 -= 1 }
                seen += 1
                if seen == saves { break }
            }
            return histogram
        }

        // The schedule runs on a thread of its own: spinning or sleeping on the cooperative pool
        // would starve the tasks being measured on a 2-core machine.
        let replica = pair.a
        let issuedIn = Mutex<Duration>(.zero)
        let done = DispatchSemaphore(value: 0)
        let scheduler = Thread {
            let start = ContinuousClock.now
            let interval = rate.map { Duration.seconds(1) / $0 }
            for index in 0..<saves {
                if let interval {
                    let due = start + interval * index
                    let wait = due - ContinuousClock.now
                    if wait > .microseconds(50) { usleep(UInt32(wait / .microseconds(1))) }
                } else {
                    while outstanding.withLock({ $0 }) >= 5_000 { usleep(50) }
                }
                outstanding.withLock { $0 += 1 }
                sentAt.withLock { $0[index] = .now }
                Task { try await replica.write("lat\(index)", payload: value) }
            }
            issuedIn.withLock { $0 = ContinuousClock.now - start }
            done.signal()
        }
        scheduler.start()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { done.wait(); continuation.resume() }
        }
        let issued = issuedIn.withLock { $0 }
        let timeout = Task {
            try await Task.sleep(for: .seconds(60))
            receiver.cancel()
        }
        let histogram = await receiver.value
        timeout.cancel()
        await pair.close()
        return BenchReport.Latency(
            offeredPerSecond: rate, achievedPerSecond: Double(saves) / (issued / .seconds(1)), samples: Int(histogram.totalCount),
            p50Micros: histogram.valueAtPercentile(50), p99Micros: histogram.valueAtPercentile(99),
            p999Micros: histogram.valueAtPercentile(99.9), maxMicros: histogram.max)
    }
}
