import Foundation
import ReplicaCore
import Synchronization

/// Saves on A that are durably committed on B, per second.
///
/// A writes batches of distinct keys, but never more than `window` saves ahead of what B has
/// applied: PUB/SUB has no flow control, and a sender that outruns its receiver only measures
/// how fast drops are repaired. The window keeps the pipe full without overflowing it, so the
/// figure is the sustained rate of the whole path: commit on A, publish, receive, commit on B.
///
/// The generator is a thread of its own that submits each batch without awaiting it (as
/// `LatencyBench` does), so that it makes the next batch while A commits the last one. (It
/// awaited each batch before: A's loop sat idle while the generator woke and built the next,
/// and the memory row reached about 80% of what its CPU cost per save allowed on two cores.)
/// Each save carries bytes of its own, as an encoded value does: one array shared by every save
/// measured its reference count moving between the generator's core and A's loop.
enum ReplicatedThroughputBench {
    static let window = 16_000

    static func run(saves: Int, payload: Int, storage: String, curve: Bool) async throws -> BenchReport.Throughput {
        let (pair, _, _) = try await BenchPair.make(storage: storage, curve: curve)
        guard let pair else { throw BenchError("no pair") }
        let batchSize = 1_000
        let applied = Atomic(0)
        let failures = Atomic(0)
        let watcher = Task {
            while !Task.isCancelled {
                let count = await pair.b.counterSnapshot().updatesApplied
                applied.store(count, ordering: .relaxed)
                // A refused batch never reaches B: stop, and fail below instead of waiting.
                if count >= saves || failures.load(ordering: .relaxed) > 0 { break }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        let start = ContinuousClock.now
        let cpuAtStart = processCPUSeconds()
        let generatorDone = DispatchSemaphore(value: 0)
        let replica = pair.a
        let generator = Thread {
            let value = [UInt8](repeating: 0x61, count: payload)
            var issued = 0
            while issued < saves {
                if issued - applied.load(ordering: .relaxed) > window - batchSize {
                    usleep(200)
                    continue
                }
                let batch = (issued..<min(issued + batchSize, saves)).map { index in
                    var bytes = value
                    if !bytes.isEmpty { bytes[0] = UInt8(truncatingIfNeeded: index) }
                    return Replica.WriteRequest(key: "k\(index)", payload: bytes)
                }
                replica.submit(batch) { result in
                    if case .failure = result { failures.add(1, ordering: .relaxed) }
                }
                issued += batch.count
            }
            generatorDone.signal()
        }
        generator.start()
        await waitOffThePool(for: generatorDone)
        await watcher.value
        let elapsed = ContinuousClock.now - start
        let cpu = processCPUSeconds() - cpuAtStart
        if ProcessInfo.processInfo.environment["REPLICA_BENCH_VERBOSE"] != nil {
            let status = await pair.b.status()
            FileHandle.standardError.write(Data("B: \(status.counters)\n".utf8))
        }
        await pair.close()
        guard failures.load(ordering: .relaxed) == 0 else { throw BenchError("\(failures.load(ordering: .relaxed)) batches failed") }
        return BenchReport.Throughput(messages: saves, seconds: elapsed / .seconds(1), cpuSeconds: cpu)
    }
}

/// User and system CPU time of this process so far, every thread.
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)  // Glibc imports the enum, not its Int32
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
