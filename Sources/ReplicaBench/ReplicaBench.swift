import ArgumentParser
import Foundation
import ReplicaCore

/// `replica-bench`: replication throughput, latency, catch-up, memory and failure detection,
/// each next to raw libzmq measured in the same run. See docs/performance.md.
@main
struct ReplicaBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica-bench",
        abstract: "Measure Replica against raw ZeroMQ on this machine, in one run.",
        discussion: """
            Runs on loopback and prints a table (or --json). Build in release for real figures:
              swift run -c release replica-bench
              swift run -c release replica-bench --quick --json
            """)

    @Flag(help: "Small sizes that finish in under a minute (a smoke run, not figures).") var quick = false
    @Flag(help: "Print JSON instead of a table.") var json = false
    @Option(help: "Payload size in bytes.") var payload = 100
    @Option(help: "Only these sections (comma-separated): raw, store, replicated, latency, catchup, memory, failure, cli.")
    var only: String?
    @Option(help: "Latency rows at these offered rates, saves per second (comma-separated; default 1000,10000,50000).")
    var rates: String?
    @Option(help: "Replicated-throughput rows for these stores only (comma-separated): sqlite, memory, sqlite+curve.")
    var stores: String?

    /// The offered rate of the latency goal (p50 <= 150 us, p99 <= 600 us).
    static let latencyGoalRate = 10_000

    func validate() throws {
        if let rates, rates.split(separator: ",").contains(where: { Int($0).map { $0 <= 0 } ?? true }) {
            throw ValidationError("--rates takes positive whole numbers, such as --rates 1000,10000")
        }
        if let stores, let unknown = stores.split(separator: ",").first(where: { !["sqlite", "memory", "sqlite+curve"].contains(String($0)) }) {
            throw ValidationError("unknown store '\(unknown)' in --stores: use sqlite, memory or sqlite+curve")
        }
    }

    func run() async throws {
        var sizes = quick ? BenchSizes.quick : BenchSizes.full
        if let rates { sizes.latencyRates = rates.split(separator: ",").compactMap { Int($0) } }
        let storeRows = stores.map { Set($0.split(separator: ",").map(String.init)) }
        var report = BenchReport(payloadBytes: payload, quick: quick)
        let sections = only.map { Set($0.split(separator: ",").map(String.init)) }
        func wanted(_ name: String) -> Bool { sections?.contains(name) ?? true }
        let progress = Progress(enabled: !json)

        if wanted("raw") {
            progress.say("raw libzmq PUB/SUB ...")
            report.raw = try RawTransportBench.run(messages: sizes.rawMessages, payload: payload, curve: false)
            report.rawCurve = try RawTransportBench.run(messages: sizes.rawMessages / 4, payload: payload, curve: true)
        }
        if wanted("store") {
            for storage in ["sqlite", "memory"] {
                progress.say("store merge (\(storage)) ...")
                report.store[storage] = try StoreBench.run(entries: sizes.replicatedSaves, payload: payload, storage: storage)
                // One entry per transaction: the fixed cost of a commit, which a save at low load pays.
                report.storeSingle[storage] = try StoreBench.run(entries: sizes.replicatedSaves / 25, payload: payload, storage: storage, batchSize: 1)
            }
            progress.say("store growth (memory) to \(sizes.growthKeys) keys ...")
            report.storeGrowth = StoreBench.longestCommitWhileGrowing(keys: sizes.growthKeys, payload: payload)
        }
        if wanted("replicated") {
            for (name, storage, curve) in [("sqlite", "sqlite", false), ("memory", "memory", false), ("sqlite+curve", "sqlite", true)]
                where storeRows?.contains(name) ?? true {
                progress.say("replicated throughput (\(name)) ...")
                report.replicated[name] = try await ReplicatedThroughputBench.run(
                    saves: sizes.replicatedSaves, payload: payload, storage: storage, curve: curve)
            }
        }
        if wanted("latency") {
            for rate in sizes.latencyRates {
                progress.say("raw libzmq latency at \(rate) messages/s ...")
                report.rawLatency.append(try RawLatencyBench.run(seconds: sizes.latencySeconds, rate: rate, payload: payload))
                progress.say("latency at \(rate) saves/s offered ...")
                report.latency.append(try await LatencyBench.run(seconds: sizes.latencySeconds, rate: rate, payload: payload))
            }
            if sizes.latencyRates.contains(Self.latencyGoalRate) {
                // The same row with memory stores on both sides: how much of the goal's figure
                // is the two one-row SQLite commits, and how much the replication path.
                progress.say("latency at \(Self.latencyGoalRate) saves/s offered, memory stores ...")
                report.latency.append(try await LatencyBench.run(
                    seconds: sizes.latencySeconds, rate: Self.latencyGoalRate, payload: payload, storage: "memory"))
            }
            progress.say("latency at saturation ...")
            report.latencySaturated = try await LatencyBench.run(seconds: sizes.latencySeconds, rate: nil, payload: payload)
        }
        if wanted("catchup") {
            for keys in sizes.catchUpKeys {
                progress.say("catch-up of \(keys) keys ...")
                report.catchUp.append(try await CatchUpBench.run(keys: keys, payload: payload))
            }
        }
        if wanted("memory") {
            progress.say("resident memory with \(sizes.memoryKeys) keys ...")
            report.memory = try MemoryBench.run(keys: sizes.memoryKeys, payload: payload)
        }
        if wanted("failure") {
            progress.say("failure detection ...")
            report.failureDetection = try FailureDetectionBench.run()
        }
        if wanted("cli") {
            progress.say("CLI round trips ...")
            report.commandLine = try CLIBench.roundTrip(runs: sizes.commandRuns)
            progress.say("import of \(sizes.importKeys) keys into a two-node cluster ...")
            report.importRate = try CLIBench.importRate(keys: sizes.importKeys, payload: payload)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(report.table())
        }
    }
}

struct BenchSizes {
    var rawMessages: Int
    var replicatedSaves: Int
    var latencySeconds: Double
    var latencyRates: [Int]
    var catchUpKeys: [Int]
    var memoryKeys: Int
    var commandRuns: Int
    var importKeys: Int
    var growthKeys: Int

    static let full = BenchSizes(rawMessages: 2_000_000, replicatedSaves: 500_000, latencySeconds: 5, latencyRates: [1_000, 10_000, 50_000],
                                 catchUpKeys: [10_000, 100_000], memoryKeys: 100_000, commandRuns: 50, importKeys: 100_000, growthKeys: 1_000_000)
    static let quick = BenchSizes(rawMessages: 100_000, replicatedSaves: 20_000, latencySeconds: 0.5, latencyRates: [10_000],
                                  catchUpKeys: [10_000], memoryKeys: 10_000, commandRuns: 10, importKeys: 10_000, growthKeys: 50_000)
}

/// Progress lines on stderr, so long runs show where they are.
struct Progress {
    var enabled: Bool
    func say(_ message: String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }
}
