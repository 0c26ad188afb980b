import Foundation

struct BenchReport: Codable {
    struct Throughput: Codable {
        var messages: Int
        var seconds: Double
        /// Stored (not computed) so that it appears in --json.
        var perSecond: Double
        /// The process's CPU time (user and system, every thread: both nodes, their libzmq
        /// threads and checkpointers, the load generator) over the timed part, per message. It
        /// moves less with the machine's load than the rate does: a change that makes the path
        /// cheaper shows here even in a run whose rate the machine held down.
        var cpuMicrosPerMessage: Double?

        init(messages: Int, seconds: Double, cpuSeconds: Double? = nil) {
            self.messages = messages
            self.seconds = seconds
            perSecond = (Double(messages) / seconds).rounded()
            cpuMicrosPerMessage = cpuSeconds.map { ($0 * 1e6 / Double(messages) * 100).rounded() / 100 }
        }
    }

    struct Latency: Codable {
        /// The store of both replicas ("sqlite" or "memory"); nil for raw libzmq.
        var storage: String?
        var offeredPerSecond: Int?
        var achievedPerSecond: Double
        var samples: Int
        var p50Micros: UInt64
        var p99Micros: UInt64
        var p999Micros: UInt64
        var maxMicros: UInt64
        /// Save until durable on A (its own commit), of the whole path (nil for raw libzmq).
        var durableOnAP50Micros: UInt64?
        var durableOnAP99Micros: UInt64?
    }

    /// A memory store grown from empty, one new key per commit.
    struct Growth: Codable {
        var keys: Int
        var longestCommitMicros: Double
        var seconds: Double
    }

    struct CatchUp: Codable {
        var keys: Int
        var seconds: Double
        var bytes: Int
    }

    struct Memory: Codable {
        var keys: Int
        var payloadBytes: Int
        var residentMegabytes: Double
    }

    /// Client commands, process start included (milliseconds).
    struct ClientCommands: Codable {
        struct Times: Codable {
            var medianMillis: Double
            var p90Millis: Double
        }
        var runs: Int
        /// The Swift runtime and Foundation linked into the binary (the release build of
        /// scripts/install) rather than loaded as shared libraries.
        var staticallyLinked: Bool
        var version: Times
        var get: Times
        var set: Times
    }

    /// `import` into A of a two-node cluster, until B's digest equals A's.
    struct Import: Codable {
        var keys: Int
        var payloadBytes: Int
        /// Until `import` exited (A committed everything).
        var importSeconds: Double
        /// Until B held every key and its digest matched A's.
        var convergedSeconds: Double
        /// Stored (not computed) so that it appears in --json.
        var keysPerSecond: Double

        init(keys: Int, payloadBytes: Int, importSeconds: Double, convergedSeconds: Double) {
            self.keys = keys
            self.payloadBytes = payloadBytes
            self.importSeconds = importSeconds
            self.convergedSeconds = convergedSeconds
            keysPerSecond = (Double(keys) / convergedSeconds).rounded()
        }
    }

    struct FailureDetection: Codable {
        var suspectSeconds: Double
        var downSeconds: Double
    }

    var payloadBytes: Int
    var quick: Bool
    var raw: Throughput?
    var rawCurve: Throughput?
    var store: [String: Throughput] = [:]
    /// The same merge with one entry per transaction.
    var storeSingle: [String: Throughput] = [:]
    var storeGrowth: Growth?
    var replicated: [String: Throughput] = [:]
    /// At each offered rate, open loop: a save on A until applied on B, and one raw libzmq
    /// PUB/SUB hop at the same rate (the floor under it).
    var latency: [Latency] = []
    var rawLatency: [Latency] = []
    var latencySaturated: Latency?
    var catchUp: [CatchUp] = []
    var memory: Memory?
    var failureDetection: FailureDetection?
    var commandLine: ClientCommands?
    var importRate: Import?

    func table() -> String {
        var lines: [String] = []
        func row(_ name: String, _ value: String, _ note: String = "") {
            lines.append(name.padding(toLength: 46, withPad: " ", startingAt: 0) + value.padding(toLength: 24, withPad: " ", startingAt: 0) + note)
        }
        func rate(_ value: Double) -> String { String(format: "%.0f msg/s", value) }
        lines.append("Replica benchmark, \(payloadBytes) B payloads\(quick ? " (quick: smoke sizes, not figures)" : "")")
        lines.append(String(repeating: "-", count: 96))
        if let raw { row("raw libzmq PUB/SUB", rate(raw.perSecond), "the transport limit") }
        if let rawCurve { row("raw libzmq PUB/SUB, CURVE", rate(rawCurve.perSecond), raw.map { String(format: "%.0f%% of raw", 100 * rawCurve.perSecond / $0.perSecond) } ?? "") }
        for (name, result) in store.sorted(by: { $0.key > $1.key }) {
            row("store merge alone (\(name)), batches of 1000", rate(result.perSecond), "no network")
        }
        for (name, result) in storeSingle.sorted(by: { $0.key > $1.key }) {
            row("store merge alone (\(name)), one per commit", String(format: "%.1f us/commit", 1e6 / result.perSecond),
                "the fixed cost a save pays at low load")
        }
        if let storeGrowth {
            row("store growth (memory), to \(storeGrowth.keys) keys", String(format: "longest commit %.0f us", storeGrowth.longestCommitMicros),
                String(format: "one new key a commit, %.1f s in all; what a growing store stops its loop for at once", storeGrowth.seconds))
        }
        for (name, goal) in [("sqlite", 25.0), ("memory", 40.0), ("sqlite+curve", 50.0)] {
            guard let result = replicated[name] else { continue }
            let base = name == "sqlite+curve" ? rawCurve : raw
            let ratio = base.map { 100 * result.perSecond / $0.perSecond }
            var note = ratio.map {
                String(format: "%.1f%% of %@ (goal %.0f%%: %@)", $0, name == "sqlite+curve" ? "raw CURVE" : "raw", goal, $0 >= goal ? "met" : "NOT MET")
            } ?? ""
            if let cpu = result.cpuMicrosPerMessage, cpu > 0 {
                // What the machine's cores could carry at that cost, were they never idle.
                let cores = ProcessInfo.processInfo.activeProcessorCount
                note += String(format: "%@%.1f us CPU a save (%d cores: %.0f k/s at most)", note.isEmpty ? "" : "; ", cpu, cores, Double(cores) * 1e3 / cpu)
            }
            row("replicated, durable on B (\(name))", rate(result.perSecond), note)
        }
        for result in rawLatency {
            row("raw libzmq latency, \(result.offeredPerSecond ?? 0)/s", "p50 \(result.p50Micros) us",
                "p99 \(result.p99Micros) us, p99.9 \(result.p999Micros) us, max \(result.maxMicros) us")
        }
        for result in latency + (latencySaturated.map { [$0] } ?? []) {
            let load = result.storage == "memory" ? "\(result.offeredPerSecond ?? 0)/s, memory"
                : result.offeredPerSecond.map { "\($0)/s offered" } ?? "saturated"
            var note = "p99 \(result.p99Micros) us, p99.9 \(result.p999Micros) us, max \(result.maxMicros) us"
            if let p50 = result.durableOnAP50Micros, let p99 = result.durableOnAP99Micros {
                note += "; durable on A: p50 \(p50) us, p99 \(p99) us"
            }
            if result.storage == "memory" {
                note += "; no disk: what the path costs without the two SQLite commits"
            } else if result.offeredPerSecond == ReplicaBench.latencyGoalRate {
                let met = result.p50Micros <= 150 && result.p99Micros <= 600
                note += "; goal p50 <= 150 us, p99 <= 600 us" + (met ? ": met" : ": NOT MET")
            } else if result.offeredPerSecond == nil {
                note += String(format: "; the saturation point: %.0f saves/s", result.achievedPerSecond)
            }
            row("latency save A -> applied B, \(load)", "p50 \(result.p50Micros) us", note)
        }
        for catchUp in catchUp {
            var note = String(format: "%.1f MB received", Double(catchUp.bytes) / 1e6)
            if catchUp.keys == 100_000 { note += "; goal <= 1.5 s" + (catchUp.seconds <= 1.5 ? ": met" : ": NOT MET") }
            row("catch-up of \(catchUp.keys) keys", String(format: "%.3f s", catchUp.seconds), note)
        }
        if let memory { row("resident size, \(memory.keys) keys of \(memory.payloadBytes) B", String(format: "%.1f MB", memory.residentMegabytes), "goal <= 150 MB at 100,000 keys") }
        if let failureDetection {
            row("SIGSTOP -> suspect / down", String(format: "%.2f s / %.2f s", failureDetection.suspectSeconds, failureDetection.downSeconds), "configured 1.5 s / 5 s, heartbeat 0.5 s")
        }
        if let commandLine {
            let linking = commandLine.staticallyLinked ? "static" : "dynamic runtime"
            for (name, times) in [("--version", commandLine.version), ("get", commandLine.get), ("set", commandLine.set)] {
                row("CLI \(name), \(linking)", String(format: "median %.1f ms", times.medianMillis),
                    String(format: "p90 %.1f ms; goal <= 5 ms median%@", times.p90Millis, name == "get" ? "" : " (for client commands)"))
            }
        }
        if let importRate {
            row("import \(importRate.keys) keys to A, B caught up", String(format: "%.0f keys/s", importRate.keysPerSecond),
                String(format: "goal >= 150000 keys/s; import itself %.2f s, B matched at %.2f s", importRate.importSeconds, importRate.convergedSeconds))
        }
        return lines.joined(separator: "\n")
    }
}
