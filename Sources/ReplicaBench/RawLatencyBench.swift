import Foundation
import Histogram
import ReplicaCore

/// The floor under the replicated latency: one libzmq PUB -> SUB hop over TCP loopback at the
/// same offered rate, timestamp in the message, receiver blocked in `zmq_msg_recv` on a thread
/// of its own. It crosses the same threads a replicated save crosses between the two loops
/// (sender, libzmq's I/O thread on each side, receiver), with no store and no Replica code.
enum RawLatencyBench {
    static func run(seconds: Double, rate: Int, payload: Int) throws -> BenchReport.Latency {
        let context = try ZMQContext(ioThreads: 1)
        let (publisher, subscriber) = try RawTransportBench.connectedPair(context, curve: false)
        let messages = Int(Double(rate) * seconds)
        let origin = ContinuousClock.now
        let interval = Duration.seconds(1) / rate
        let sender = Thread {
            var body = [UInt8](repeating: 0x42, count: max(payload, 8))
            let start = ContinuousClock.now
            for index in 0...messages {
                // As the replicated bench's generator: sleep at least 0.2 ms, then send all due.
                let wait = start + interval * index - ContinuousClock.now
                if wait > .zero { usleep(UInt32(max(wait, .microseconds(200)) / .microseconds(1))) }
                let sent = Int64((ContinuousClock.now - origin) / .nanoseconds(1))
                withUnsafeBytes(of: index == messages ? -1 : sent) { stamp in body.withUnsafeMutableBytes { $0.copyMemory(from: stamp) } }
                do {
                    try publisher.send([body], wait: true)
                } catch {
                    fatalError("raw latency bench: send failed: \(error)")
                }
            }
        }
        sender.start()
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        while let message = try subscriber.receive(wait: true), let frame = message.frames.first {
            let sentNanos = frame.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }
            if sentNanos < 0 { break }
            let elapsed = (ContinuousClock.now - origin) / .nanoseconds(1) - Double(sentNanos)
            histogram.record(UInt64(max(0, elapsed / 1000)))
        }
        return BenchReport.Latency(
            offeredPerSecond: rate, achievedPerSecond: Double(rate), samples: Int(histogram.totalCount),
            p50Micros: histogram.valueAtPercentile(50), p99Micros: histogram.valueAtPercentile(99),
            p999Micros: histogram.valueAtPercentile(99.9), maxMicros: histogram.max)
    }
}
