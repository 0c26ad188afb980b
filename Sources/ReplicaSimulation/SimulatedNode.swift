import Foundation
import Logging
@_spi(Simulation) import ReplicaCore

/// One node of a simulation: its host on the simulated network, its store (which outlives a
/// crash, unless wiped), and the replica of its current life, run by a `SimulatedLoop`.
final class SimulatedNode: @unchecked Sendable {
    /// The log the workload writes to.
    struct LogElement: Codable, Sendable, Equatable {
        var id: String
    }
    static let log = LogFamily<LogElement>("sim", id: \.id, orderedBy: \.id)

    let index: Int
    let id: NodeID
    let host: String
    let address: Endpoint
    unowned let simulation: Simulation
    var store: MemoryStore
    private(set) var loop = SimulatedLoop()
    private(set) var replica: Replica?
    var paused = false
    /// Left the cluster (it shut itself down): no longer a member to check.
    private(set) var hasLeft = false
    var skewMillis: Int64 = 0
    var nextWake: MonotonicInstant?
    private var lives = 0
    /// Per key, the version this node held when the workload last wrote it.
    private var seenBeforeWrite: [String: Version] = [:]
    /// Started at least once (a node that joins late is not, until it joins).
    var started: Bool { lives > 0 }
    private var random: SimulationRandom

    init(index: Int, simulation: Simulation) {
        self.index = index
        id = NodeID(rawValue: "n\(index + 1)")!
        host = "10.0.0.\(index + 1)"
        address = Endpoint(host: host, port: 7000)
        self.simulation = simulation
        random = SimulationRandom(seed: simulation.options.seed &+ UInt64(index) &* 0x9e37_79b9)
        store = MemoryStore(node: id, incarnation: random.uuid())
    }

    var isRunning: Bool { replica != nil && !paused }
    var isMember: Bool { !hasLeft }

    // MARK: Lives

    func start(seeds: [Endpoint]) {
        lives += 1
        loop = SimulatedLoop()
        var configuration = ReplicaConfiguration(node: id, listen: address, peers: seeds, storage: .memory)
        let time = simulation.time
        configuration.wallClock = { [unowned self] in UInt64(max(0, Int64(time.wallMillis) + skewMillis)) }
        // Writes wait for a clock compared with a member's (docs/simulation.md: with it off, a
        // node cut off from every member stamps by a clock nothing checked, as documented).
        configuration.requireClockCheck = true
        configuration.runtime = ReplicaRuntime(sockets: simulation.network.host(host), loop: loop, now: { time.now }, store: store)
        do {
            replica = try Replica(configuration, logger: SimulationLog.logger(for: id.rawValue, time: time))
        } catch {
            fatalError("simulated node \(id) failed to start: \(error)")
        }
        nextWake = time.now
    }

    /// The process is gone: its sockets end at once, its queued work with it. What it
    /// committed stays in the store.
    func crash() {
        guard replica != nil else { return }
        simulation.network.crash(host: host)
        replica = nil
        loop.ownerReleased()
        paused = false
    }

    /// A new life on the kept store (a start after a crash: new counter slots, as a store that
    /// was not stopped cleanly gives), or on an empty one with a new incarnation (a wiped disk).
    func restart(wiped: Bool, seeds: [Endpoint]) {
        guard replica == nil, !hasLeft else { return }
        if wiped {
            store = MemoryStore(node: id, incarnation: random.uuid())
        } else {
            store.reopenAfterCrash(slotOwner: random.uuid())
        }
        start(seeds: seeds)
    }

    /// Shuts the replica down cleanly at the end of a simulation.
    func stop() {
        guard let replica else { return }
        loop.inTurn { replica.assumeIsolated { $0.shutdown() } }
        self.replica = nil
        loop.ownerReleased()
    }

    /// One turn of the replica's loop; notices a departure that shut it down.
    func turn() -> Duration? {
        let timeout = loop.runTurn()
        if let replica, loop.inTurn({ replica.assumeIsolated { $0.isShutDown } }) {
            hasLeft = true
            self.replica = nil
            simulation.network.crash(host: host)
            loop.ownerReleased()
        }
        return timeout
    }

    // MARK: Reading its state

    var digest: UInt64? { store.digest.root }

    func allEntries() -> [Entry] { store.entries(prefix: "") }

    func entry(_ key: String) -> Entry? { store.entry(for: key) }

    /// A line about it, for `SIMULATION_TRACE`.
    func debugStatus() -> String {
        guard let replica else { return "down" }
        return loop.inTurn { replica.assumeIsolated { replica in
            let counters = replica.counterSnapshot()
            return "published \(counters.updatesPublished), applied \(counters.updatesApplied), problems \(replica.health().problems.map(\.kind.rawValue))"
        } }
    }

    func problems() -> [String] {
        guard let replica else { return [] }
        return loop.inTurn { replica.assumeIsolated { $0.health().problems.map(\.kind.rawValue) } }
    }

    // MARK: The workload, through the API a program uses

    func setRegister(_ key: String, to value: String?, operation: Int) {
        guard let replica else { return }
        seenBeforeWrite[key] = store.entry(for: key)?.version
        let payload = value.map { Array("\"\($0)\"".utf8) }
        replica.submit([Replica.WriteRequest(key: key, payload: payload)]) { [self] result in
            guard case .success(let entries) = result, let entry = entries.first else { return }
            // What this node held for the key when the write was stamped (just before its
            // commit, in the same turn): the write must win over it.
            if let seen = seenBeforeWrite[key], !(entry.version > seen) {
                simulation.causalityViolated("\(id)'s write of \(key) at \(entry.version) does not win over \(seen), which it held when it wrote")
            }
            simulation.ledger.registerWrites.append(Ledger.RegisterWrite(operation: operation, node: id, entry: entry))
            simulation.ledger.acknowledged += 1
            simulation.acknowledged("set", node: self, operation: operation)
        }
    }

    func increment(_ name: String, by delta: Int, operation: Int) {
        guard let replica else { return }
        replica.submitIncrement(name, delta: delta) { [self] result in
            guard case .success(let entry) = result, let total = try? CounterFamily.total(of: entry) else { return }
            simulation.ledger.slotTotals[entry.key] = max(simulation.ledger.slotTotals[entry.key] ?? 0, total)
            simulation.ledger.slotNodes[entry.key] = id
            simulation.ledger.acknowledged += 1
            simulation.acknowledged("incr", node: self, operation: operation)
        }
    }

    func addToLog(_ element: String, operation: Int) {
        guard let replica, let request = try? Self.log.put(LogElement(id: element)) else { return }
        replica.submit([request]) { [self] result in
            guard case .success(let entries) = result, let entry = entries.first else { return }
            simulation.ledger.logAdds[element] = Ledger.LogAdd(operation: operation, node: id, id: element, version: entry.version)
            simulation.ledger.acknowledged += 1
            simulation.acknowledged("add", node: self, operation: operation)
        }
    }

    func removeFromLog(_ element: String, operation: Int) {
        guard let replica else { return }
        replica.submit([Self.log.removal(ofID: element)]) { [self] result in
            guard case .success(let entries) = result, let entry = entries.first else { return }
            let earlier = simulation.ledger.logRemovals[element].map { $0.version > entry.version } ?? false
            if !earlier { simulation.ledger.logRemovals[element] = entry }
            simulation.ledger.acknowledged += 1
            simulation.acknowledged("remove", node: self, operation: operation)
        }
    }

    /// `leave`, as an operator runs it: the replica hands its writes over and shuts down (or
    /// stays, if no member confirms holding them).
    func leave() {
        guard let replica else { return }
        Task(executorPreference: loop) { _ = await replica.leave() }
    }

    /// `forget`, as an operator runs it on this node for a member that is down.
    func forget(_ node: NodeID) {
        guard let replica else { return }
        loop.inTurn { replica.assumeIsolated { try? $0.forget(node) } }
    }
}

extension SimulationRandom {
    /// A UUID from this generator: a simulation's incarnations and slot owners, repeatable.
    mutating func uuid() -> UUID {
        let (a, b) = (next(), next())
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(i)))
        }
        bytes[6] = (bytes[6] & 0x0f) | 0x40
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
