import Foundation
import Logging
import ReplicaCore
import Synchronization

/// Two in-process replicas on loopback for the throughput, latency and catch-up rows.
struct BenchPair {
    let a: Replica
    let b: Replica
    let directory: URL

    private static let loopback = LoopbackPorts(range: 30_000..<32_700)

    /// Two fresh loopback port pairs (each node uses PORT and PORT + 1).
    static func ports() -> (UInt16, UInt16) { (loopback.pair(), loopback.pair()) }

    /// Starts A and, unless `startB` is false, B; waits until each sees the other alive. With
    /// `startB` false, the returned closure starts B and does not wait: a catch-up is timed from
    /// B's start, and B's clock check (a few heartbeats) is no part of it.
    static func make(storage: String, curve: Bool = false, startB: Bool = true) async throws -> (BenchPair?, Replica, () async throws -> Replica) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-bench-\(UUID().uuidString.prefix(8))")
        let (portA, portB) = ports()
        let endpointA = Endpoint(host: "127.0.0.1", port: portA), endpointB = Endpoint(host: "127.0.0.1", port: portB)
        let keysA = try CurveKeyPair.generate(), keysB = try CurveKeyPair.generate()
        func configuration(_ node: NodeID, _ listen: Endpoint, _ peer: Endpoint, _ keys: CurveKeyPair, _ peerKeys: CurveKeyPair) -> ReplicaConfiguration {
            var configuration = ReplicaConfiguration(
                node: node, listen: listen, peers: [peer],
                storage: storage == "memory" ? .memory : .directory(directory.appendingPathComponent(node.rawValue)))
            if curve {
                configuration.security = .curve(CurveSecurity(keys: keys, trusted: [peerKeys.publicKey], peerKeys: [peer: peerKeys.publicKey]))
            }
            return configuration
        }
        var logger = Logger(label: "replica-bench")
        logger.logLevel = ProcessInfo.processInfo.environment["REPLICA_BENCH_VERBOSE"] == nil ? .warning : .info
        let a = try Replica(configuration("a", endpointA, endpointB, keysA, keysB), logger: logger)
        let makeB = { try Replica(configuration("b", endpointB, endpointA, keysB, keysA), logger: logger) }
        guard startB else { return (nil, a, makeB) }
        let b = try makeB()
        try await waitUntilAlive(a, b)
        return (BenchPair(a: a, b: b, directory: directory), a, makeB)
    }

    static func waitUntilAlive(_ replicas: Replica...) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            var alive = true
            // Alive, and the clocks compared: until then a node holds its writes (up to 3 s), which
            // would be measured as latency.
            for replica in replicas {
                let status = await replica.status()
                if status.peers.contains(where: { $0.state != .alive }) || status.clock.verdict != "agrees" { alive = false }
            }
            if alive { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw BenchError("replicas did not connect within 20 s")
    }

    func close() async {
        await a.shutdown()
        await b.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Waits until `condition` holds, checking every millisecond, or throws after `timeout`.
func waitFor(_ what: String, timeout: Duration = .seconds(120), _ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !(await condition()) {
        guard ContinuousClock.now < deadline else { throw BenchError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// Waits on a semaphore off the cooperative pool (a blocked pool thread would starve it);
/// returns whether it was signalled before `timeout` (nil: waits for good).
@discardableResult
func waitOffThePool(for semaphore: DispatchSemaphore, timeout: Duration? = nil) async -> Bool {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
            guard let timeout else {
                semaphore.wait()
                return continuation.resume(returning: true)
            }
            let result = semaphore.wait(timeout: .now() + .milliseconds(Int(timeout / .milliseconds(1))))
            continuation.resume(returning: result == .success)
        }
    }
}
