import Foundation
import Histogram
import ReplicaCore
import Synchronization

/// Save on A to committed on B, in microseconds.
///
/// The generator is a thread of its own that submits each save without a task (`submit`) and
/// writes the moment into the payload; B's observer runs on B's loop thread right after B's
/// commit (`observeChanges(handler:)`) and records the difference. Neither side adds a task, a
/// hop to the cooperative pool or a shared table, so the figure is the replica's path: A's loop
/// takes the save, commits and publishes it; B receives, commits it and is done.
///
/// Open loop at `rate` per second: saves are issued on schedule (the generator sleeps at least
/// 0.2 ms, then sends all that are due, each stamped when sent) whether or not earlier ones
/// finished, so queueing shows in the tail.
/// Without a rate, closed loop: as fast as A completes them with at most 5,000 outstanding,
/// which finds the saturation point.
enum LatencyBench {
    static let window = 5_000

    static func run(seconds: Double, rate: Int?, payload: Int, storage: String = "sqlite") async throws -> BenchReport.Latency {
        let (pair, _, _) = try await BenchPair.make(storage: storage)
        guard let pair else { throw BenchError("no pair") }
        let saves = rate.map { Int(Double($0) * seconds) } ?? Int(60_000 * seconds)
        let clockOrigin = ContinuousClock.now
        let histogram = Mutex(Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three))
        // Save until durable on A (the completion runs on A's loop after A's commit): how the
        // total splits between the two sides.
        let local = Mutex(Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three))
        let seen = Atomic(0)
        let allSeen = DispatchSemaphore(value: 0)
        let observer = await pair.b.observeChanges(prefix: "lat") { change in
            guard let bytes = change.entry.payload, bytes.count >= 8 else { return }
            let sentNanos = bytes.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }
            let elapsed = (ContinuousClock.now - clockOrigin) / .nanoseconds(1) - Double(sentNanos)
            _ = histogram.withLock { $0.record(UInt64(max(0, elapsed / 1000))) }
            if seen.add(1, ordering: .relaxed).newValue == saves { allSeen.signal() }
        }

        let replica = pair.a
        let outstanding = Atomic(0)
        let failures = Atomic(0)
        let issuedIn = Mutex<Duration>(.zero)
        let generatorDone = DispatchSemaphore(value: 0)
        let generator = Thread {
            var value = [UInt8](repeating: 0x61, count: max(payload, 8))
            let start = ContinuousClock.now
            let interval = rate.map { Duration.seconds(1) / $0 }
            var index = 0
            while index < saves {
                if let interval {
                    let wait = start + interval * index - ContinuousClock.now
                    if wait > .zero {
                        // Never spin (a spinning generator takes one of two cores from the
                        // replicas it measures): sleep at least 0.2 ms, then send all that is due.
                        usleep(UInt32(max(wait, .microseconds(200)) / .microseconds(1)))
                        continue
                    }
                } else if outstanding.load(ordering: .relaxed) >= window {
                    usleep(50)
                    continue
                }
                let sent = Int64((ContinuousClock.now - clockOrigin) / .nanoseconds(1))
                withUnsafeBytes(of: sent) { stamp in value.withUnsafeMutableBytes { $0.copyMemory(from: stamp) } }
                outstanding.add(1, ordering: .relaxed)
                replica.submit([Replica.WriteRequest(key: "lat\(index)", payload: value)]) { result in
                    let elapsed = (ContinuousClock.now - clockOrigin) / .nanoseconds(1) - Double(sent)
                    _ = local.withLock { $0.record(UInt64(max(0, elapsed / 1000))) }
                    outstanding.subtract(1, ordering: .relaxed)
                    if case .failure = result { failures.add(1, ordering: .relaxed) }
                }
                index += 1
            }
            issuedIn.withLock { $0 = ContinuousClock.now - start }
            generatorDone.signal()
        }
        generator.start()
        await waitOffThePool(for: generatorDone)
        let everything = await waitOffThePool(for: allSeen, timeout: .seconds(60))
        await pair.b.stopObserving(observer)
        await pair.close()
        guard failures.load(ordering: .relaxed) == 0 else { throw BenchError("\(failures.load(ordering: .relaxed)) saves failed") }
        guard everything else { throw BenchError("B applied \(seen.load(ordering: .relaxed)) of \(saves) saves within 60 s") }
        let issued = issuedIn.withLock { $0 }
        let result = histogram.withLock { $0 }
        let onA = local.withLock { $0 }
        return BenchReport.Latency(
            storage: storage, offeredPerSecond: rate, achievedPerSecond: Double(saves) / (issued / .seconds(1)), samples: Int(result.totalCount),
            p50Micros: result.valueAtPercentile(50), p99Micros: result.valueAtPercentile(99),
            p999Micros: result.valueAtPercentile(99.9), maxMicros: result.max,
            durableOnAP50Micros: onA.valueAtPercentile(50), durableOnAP99Micros: onA.valueAtPercentile(99))
    }
}
