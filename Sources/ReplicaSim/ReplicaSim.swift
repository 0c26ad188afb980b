import ArgumentParser
import Foundation
import ReplicaSimulation
import Synchronization

/// `replica-sim`: runs seeded histories of a simulated cluster (in one process, on a simulated
/// network and clock) with faults, and checks what must hold after each. docs/simulation.md.
@main
struct ReplicaSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica-sim",
        abstract: "Runs seeded histories of a simulated Replica cluster with faults, and checks each.",
        discussion: """
            Every history runs real Replica code on a simulated network and clock: a workload of \
            writes, deletes, increments and log edits from every node, faults drawn from the seed \
            (partitions, crashes, wipes, pauses, clock skew, full disks, loss, delay, duplication, \
            joins, leaves, forgets, a hostile member), then a heal. Then it checks: every node holds \
            the same entries; every report of holding a stream is true; every acknowledged write is \
            there or beaten by a later version; every counter \
            is the sum of its acknowledged increments; every acknowledged log add is there unless \
            removed; the nodes agreed within the bound after the heal; long faults were listed as \
            problems while they lasted. The same seed gives the same history: its trace hash says so.

            Examples:
              replica-sim --seeds 500 --nodes 5
              replica-sim --seed 42 --nodes 5 --json
              replica-sim --seeds 100 --nodes 16 --faults partition,crash,loss
              replica-sim --seeds 100 --faults hostile,partition,crash,loss
            """)

    @Option(help: "How many histories to run, seeds first-seed, first-seed + 1, ...")
    var seeds = 100
    @Option(name: .customLong("first-seed"), help: "The first seed of --seeds.")
    var firstSeed: UInt64 = 1
    @Option(help: "Replay one history (ignores --seeds).")
    var seed: UInt64?
    @Option(help: "Nodes per history (3 to 64).")
    var nodes = 5
    @Option(help: "Fault kinds to draw from, comma-separated (\(FaultKind.allCases.map(\.rawValue).joined(separator: ", "))).")
    var faults: String?
    @Option(name: .customLong("only-faults"), help: "Replay only these faults of the history, by number (a shrunk failure).")
    var onlyFaults: String?
    @Option(help: "Histories run at once (threads).")
    var jobs = ProcessInfo.processInfo.activeProcessorCount
    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard (3...64).contains(nodes) else { throw ValidationError("--nodes must be 3 to 64") }
        guard seeds >= 1 else { throw ValidationError("--seeds must be at least 1") }
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        _ = try faultKinds()
    }

    func faultKinds() throws -> Set<FaultKind> {
        guard let faults else { return Set(FaultKind.allCases) }
        var kinds: Set<FaultKind> = []
        for name in faults.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard let kind = FaultKind(rawValue: name) else {
                throw ValidationError("unknown fault kind \(name); known: \(FaultKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            kinds.insert(kind)
        }
        return kinds
    }

    func options(seed: UInt64) throws -> SimulationOptions {
        var options = SimulationOptions(seed: seed, nodes: nodes)
        options.faults = try faultKinds()
        if let onlyFaults {
            options.onlyFaults = Set(onlyFaults.split(separator: ",").compactMap { Int($0) })
        }
        return options
    }

    func run() throws {
        DeterministicHashing.ensure()
        if let seed {
            let report = Simulation(try options(seed: seed)).run()
            if json {
                print(String(decoding: try JSONEncoder.sorted.encode(report), as: UTF8.self))
            } else {
                print(ReportText.history(report, command: command(seed: seed)))
            }
            if !report.violations.isEmpty { throw ExitCode(1) }
            return
        }
        let started = ContinuousClock.now
        let results = try runMany()
        let failures = results.filter { !$0.violations.isEmpty }
        let elapsed = ContinuousClock.now - started
        var shrunk: [UInt64: String] = [:]
        for failure in failures.prefix(3) {
            shrunk[failure.seed] = try shrink(failure)
        }
        if json {
            let summary = RunSummary(
                histories: results.count, violations: failures.reduce(0) { $0 + $1.violations.count }, failedSeeds: failures.map(\.seed),
                seconds: Double(elapsed / .milliseconds(1)) / 1000,
                failures: failures.map { RunSummary.Failure(seed: $0.seed, violations: $0.violations, replay: command(seed: $0.seed), shrunk: shrunk[$0.seed]) })
            print(String(decoding: try JSONEncoder.sorted.encode(summary), as: UTF8.self))
        } else {
            print(ReportText.summary(results, elapsed: elapsed, nodes: nodes))
            for failure in failures.prefix(10) {
                print("\nseed \(failure.seed): \(failure.violations.count) violation(s)")
                for violation in failure.violations.prefix(5) { print("  - \(violation)") }
                print("  replay: \(command(seed: failure.seed))")
                if let command = shrunk[failure.seed] { print("  shrunk: \(command)") }
            }
        }
        if !failures.isEmpty { throw ExitCode(1) }
    }

    /// The histories of `--seeds`, on `--jobs` threads, with a progress line on standard error.
    func runMany() throws -> [SimulationReport] {
        let seedList = (0..<UInt64(seeds)).map { firstSeed &+ $0 }
        let optionList = try seedList.map { try options(seed: $0) }
        let results = Mutex([SimulationReport?](repeating: nil, count: seedList.count))
        let next = Mutex(0)
        let done = Mutex(0)
        let group = DispatchGroup()
        for _ in 0..<min(jobs, seedList.count) {
            group.enter()
            Thread.detachNewThread {
                while true {
                    let index = next.withLock { value -> Int in
                        defer { value += 1 }
                        return value
                    }
                    guard index < optionList.count else { break }
                    let report = Simulation(optionList[index]).run()
                    results.withLock { $0[index] = report }
                    let finished = done.withLock { value -> Int in
                        value += 1
                        return value
                    }
                    if finished % 25 == 0 || finished == optionList.count {
                        FileHandle.standardError.write(Data("\(finished)/\(optionList.count) histories\n".utf8))
                    }
                }
                group.leave()
            }
        }
        group.wait()
        return results.withLock { $0.compactMap { $0 } }
    }

    /// The smallest set of the failing history's faults that still fails, found by dropping one
    /// fault at a time (the workload stays as it was).
    func shrink(_ failure: SimulationReport) throws -> String? {
        var kept = Set(0..<failure.faults.count)
        var changed = true
        while changed {
            changed = false
            for fault in kept.sorted() {
                var options = try options(seed: failure.seed)
                options.onlyFaults = kept.subtracting([fault])
                if !Simulation(options).run().violations.isEmpty {
                    kept.remove(fault)
                    changed = true
                }
            }
        }
        guard kept.count < failure.faults.count else { return nil }
        return command(seed: failure.seed) + " --only-faults " + (kept.isEmpty ? "none" : kept.sorted().map(String.init).joined(separator: ","))
    }

    func command(seed: UInt64) -> String {
        var words = ["replica-sim", "--seed", "\(seed)", "--nodes", "\(nodes)"]
        if let faults { words += ["--faults", faults] }
        return words.joined(separator: " ")
    }
}

struct RunSummary: Codable {
    struct Failure: Codable {
        var seed: UInt64
        var violations: [String]
        var replay: String
        var shrunk: String?
    }
    var histories: Int
    var violations: Int
    var failedSeeds: [UInt64]
    var seconds: Double
    var failures: [Failure]
}

enum ReportText {
    static func history(_ report: SimulationReport, command: String) -> String {
        var lines = ["seed \(report.seed), \(report.nodes) nodes: \(report.violations.isEmpty ? "ok" : "\(report.violations.count) violation(s)")",
                     "  trace hash \(report.traceHash)",
                     "  \(report.operations) operations, \(report.acknowledged) acknowledged, \(report.messages) messages, \(String(format: "%.1f", report.virtualSeconds)) s simulated"]
        if let after = report.convergedAfterSeconds { lines.append("  converged \(String(format: "%.2f", after)) s after the heal") }
        lines.append("  faults:")
        lines += report.faults.map { "    \($0)" }
        lines += report.violations.map { "  violation: \($0)" }
        if !report.violations.isEmpty { lines.append("  replay: \(command)") }
        return lines.joined(separator: "\n")
    }

    static func summary(_ reports: [SimulationReport], elapsed: Duration, nodes: Int) -> String {
        let failed = reports.filter { !$0.violations.isEmpty }.count
        let converge = reports.compactMap(\.convergedAfterSeconds).sorted()
        let p99 = converge.isEmpty ? 0 : converge[min(converge.count - 1, converge.count * 99 / 100)]
        return "\(reports.count) histories of \(nodes) nodes in \(String(format: "%.1f", Double(elapsed / .milliseconds(1)) / 1000)) s: "
            + "\(failed) with violations; \(reports.reduce(0) { $0 + $1.acknowledged }) acknowledged writes checked; "
            + "converged after the heal in at most \(String(format: "%.2f", converge.last ?? 0)) s (p99 \(String(format: "%.2f", p99)) s)"
    }
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

/// Swift seeds its hashing per process, and dictionaries iterate in hash order: for the same
/// seed to give the same history in every process, `replica-sim` runs with deterministic
/// hashing, starting itself again with it if it was not set.
enum DeterministicHashing {
    static func ensure() {
        guard ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] == nil else { return }
        setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
        let arguments = CommandLine.arguments
        var cArguments = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", &cArguments)
        // Not reached unless exec failed: run on, reproducible within this process only.
        FileHandle.standardError.write(Data("replica-sim: could not restart with deterministic hashing; traces may differ between runs\n".utf8))
    }
}
