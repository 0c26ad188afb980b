import Foundation
import Spawn
import Testing
@testable import ReplicaSimulation

/// The simulator itself: a history runs, checks, and is the same for the same seed.
@Suite struct SimulationTests {
    @Test func aHistoryWithoutFaultsConvergesAndLosesNothing() {
        var options = SimulationOptions(seed: 1, nodes: 3)
        options.faults = []
        let report = Simulation(options).run()
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.acknowledged > 0)
        #expect(report.convergedAfterSeconds != nil)
    }

    /// Byte for byte, in two processes (within one, Swift seeds each dictionary's hashing by
    /// its address, unless deterministic hashing is on: `replica-sim` turns it on). With a
    /// hostile member too, whose forged records carry ids of their own.
    @Test(arguments: [["--seed", "7", "--nodes", "4"], ["--seed", "3315", "--nodes", "3", "--faults", "hostile"]])
    func theSameSeedGivesTheSameHistory(_ history: [String]) throws {
        let hashes = try (0..<2).map { _ in try Self.replicaSim(history + ["--json"])["traceHash"] as? String }
        #expect(hashes[0] != nil && hashes[0] == hashes[1], "\(hashes)")
    }

    /// `replica-sim ARGS`, its JSON output.
    static func replicaSim(_ arguments: [String]) throws -> [String: Any] {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var binary = directory.appendingPathComponent("replica-sim")
        for _ in 0..<4 where !FileManager.default.isExecutableFile(atPath: binary.path) {
            directory.deleteLastPathComponent()
            binary = directory.appendingPathComponent("replica-sim")
        }
        let process = try ChildProcess(binary.path, arguments, output: .pipe, errors: .inherit)
        let data = process.standardOutput!.readDataToEndOfFile()
        process.wait()
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}
