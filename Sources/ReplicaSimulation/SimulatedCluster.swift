import Foundation
import Logging
@_spi(Simulation) import ReplicaCore
import Synchronization

/// A cluster of your app's replicas in one process, on a simulated network and clock: for
/// tests, with no sockets and no sleeps.
///
/// Each node is a real ``Replica`` (memory storage), with its sockets, loop and clock replaced by
/// the simulation's. A thread of the cluster's own runs them: whatever is due now happens at
/// once (a write commits, its update reaches the others), but time moves on only when you say
/// so (``run(for:)``, ``settle(within:)``), or while a replica waits on it (a write held for the
/// first comparison of clocks, a departure), so a test decides when heartbeats, timeouts and
/// syncs happen. Partitions, crashes, paused nodes, clock offsets and full disks are one call
/// each.
///
/// ```swift
/// @Test func writesMeetAfterAPartition() async throws {
///     let cluster = try SimulatedCluster(nodes: 3)
///     #expect(await cluster.settle())
///     cluster.partition([0])
///     try await cluster.replica(0).write("k", payload: Array("1".utf8))
///     try await cluster.replica(1).write("k", payload: Array("2".utf8))
///     cluster.heal()
///     #expect(await cluster.settle())
/// }
/// ```
public final class SimulatedCluster: @unchecked Sendable {
    private let lock = NSLock()
    /// Signalled when something arrives for the cluster's thread (without the lock: a replica
    /// may enqueue work while the lock is held, inside a turn).
    private let wakeUp = DispatchSemaphore(value: 0)
    private let time = SimulatedTime()
    private let network: SimulatedNetwork
    private var members: [Member] = []
    private var random: SimulationRandom
    /// Time may move on to here (the present, unless a test runs the cluster).
    private var runUntil: MonotonicInstant
    private var stopped = false
    private var driver: Thread?

    private final class Member: @unchecked Sendable {
        let index: Int
        let host: String
        let configuration: ReplicaConfiguration
        var store: MemoryStore
        var loop = SimulatedLoop()
        var replica: Replica?
        var paused = false
        var skewMillis: Int64 = 0
        var nextWake: MonotonicInstant?

        init(index: Int, host: String, configuration: ReplicaConfiguration, store: MemoryStore) {
            self.index = index
            self.host = host
            self.configuration = configuration
            self.store = store
        }
    }

    /// `nodes` replicas named `n1`, `n2`, ..., each seeded with the others; `configure` sets
    /// anything else of a node's configuration (its storage stays in memory).
    public init(nodes count: Int = 3, seed: UInt64 = 1, configure: (Int, inout ReplicaConfiguration) -> Void = { _, _ in }) throws {
        random = SimulationRandom(seed: seed)
        network = SimulatedNetwork(time: time, seed: random.next())
        runUntil = time.now
        let listens = (0..<count).map { Endpoint(host: "10.0.0.\($0 + 1)", port: 7000) }
        for index in 0..<count {
            var configuration = ReplicaConfiguration(
                node: NodeID(rawValue: "n\(index + 1)")!, listen: listens[index], peers: listens.filter { $0 != listens[index] }, storage: .memory)
            configure(index, &configuration)
            configuration.storage = .memory
            let member = Member(index: index, host: listens[index].host, configuration: configuration,
                                store: MemoryStore(node: configuration.node, incarnation: random.uuid()))
            members.append(member)
        }
        lock.lock()
        defer { lock.unlock() }
        for member in members { try start(member) }
        lastActive = time.now
        let thread = Thread { [weak self] in
            while self?.driveOnce() ?? false {}
        }
        thread.name = "simulated-cluster"
        driver = thread
        thread.start()
    }

    deinit {
        stopped = true
        wakeUp.signal()
    }

    /// Stops every replica and the cluster's thread.
    public func shutdown() {
        lock.lock()
        defer { lock.unlock() }
        for member in members { stop(member) }
        stopped = true
        wakeUp.signal()
    }

    // MARK: Nodes

    /// Node `index`'s replica in its current life (a restart makes a new one).
    public func replica(_ index: Int) -> Replica {
        lock.lock()
        defer { lock.unlock() }
        guard let replica = members[index].replica else { preconditionFailure("node \(index) is down") }
        return replica
    }

    public var count: Int { members.count }

    /// The process of node `index` is gone (its connections end at once); what it committed
    /// stays for its restart.
    public func crash(_ index: Int) {
        withLock {
            let member = members[index]
            guard member.replica != nil else { return }
            network.crash(host: member.host)
            member.replica = nil
            member.loop.ownerReleased()
        }
    }

    /// Starts node `index` again: on its data, or on an empty store (`wiped`, a new incarnation).
    public func restart(_ index: Int, wiped: Bool = false) throws {
        try withLock {
            let member = members[index]
            guard member.replica == nil else { return }
            if wiped {
                member.store = MemoryStore(node: member.configuration.node, incarnation: random.uuid())
            } else {
                member.store.reopenAfterCrash(slotOwner: random.uuid())
            }
            try start(member)
        }
    }

    /// Node `index` runs nothing until resumed (SIGSTOP); its connections stay.
    public func pause(_ index: Int) { withLock { members[index].paused = true } }
    public func resume(_ index: Int) { withLock { members[index].paused = false } }

    /// Node `index`'s wall clock is `offset` off the cluster's.
    public func setClockOffset(_ index: Int, _ offset: Duration) {
        withLock { members[index].skewMillis = Int64(offset / .milliseconds(1)) }
    }

    /// Every commit of node `index` fails while `full` (a full disk).
    public func setDiskFull(_ index: Int, _ full: Bool) {
        withLock { members[index].store.failingCommits = full }
    }

    // MARK: The network

    /// Nodes `group` on one side, the rest on the other: nothing passes between the two.
    public func partition(_ group: Set<Int>) {
        withLock {
            for a in members where group.contains(a.index) {
                for b in members where !group.contains(b.index) {
                    block(a, b)
                    block(b, a)
                }
            }
        }
    }

    /// Nothing passes from node `from` to node `to` (the other way still does).
    public func cut(from: Int, to: Int) {
        withLock { block(members[from], members[to]) }
    }

    /// Every link back to normal: what connections held during the partition goes through.
    public func heal() {
        withLock { network.healAll() }
    }

    /// Every link's conditions from now on (loss, duplication, delay).
    public func setLinks(_ condition: LinkCondition) {
        withLock { network.standard = condition }
    }

    // MARK: Time

    /// The cluster's simulated time since it started.
    public var elapsed: Duration { withLock { time.elapsed } }

    /// Runs the cluster for `duration` of simulated time.
    public func run(for duration: Duration) async {
        let until = withLock {
            runUntil = max(runUntil, time.now + duration)
            return runUntil
        }
        poke()
        await waitFor { self.time.now >= until }
    }

    /// Runs until every running node holds the same entries, hears every other and has compared
    /// its clock with theirs (writes then go through at once), or `limit` of simulated time
    /// passes. Returns whether they agree.
    @discardableResult
    public func settle(within limit: Duration = .seconds(60)) async -> Bool {
        let deadline = withLock { time.now + limit }
        var agreed = false
        while !agreed {
            agreed = withLock { agree() }
            if agreed { break }
            let reached = withLock { time.now >= deadline }
            if reached { break }
            await run(for: .milliseconds(100))
        }
        return agreed
    }

    private func agree() -> Bool {
        let running = members.filter { $0.replica != nil && !$0.paused }
        guard let first = running.first else { return true }
        let root = first.store.digest.root
        guard running.allSatisfy({ $0.store.digest.root == root }) else { return false }
        return running.allSatisfy { member in
            guard let replica = member.replica else { return false }
            return member.loop.inTurn {
                replica.assumeIsolated { replica in
                    let status = replica.statusNow()
                    let hearsAll = running.allSatisfy { other in
                        other.index == member.index || status.peers.contains { $0.id == other.configuration.node.rawValue && $0.state == .alive }
                    }
                    // Writes go through at once: the clock was compared (with members to compare with).
                    return hearsAll && (running.count == 1 || status.clock.verdict == "agrees")
                }
            }
        }
    }

    // MARK: Driving

    /// Runs `body` with the simulation to itself; the cluster's thread then looks again.
    private func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer {
            lock.unlock()
            poke()
        }
        return try body()
    }

    private func waitFor(_ condition: @escaping @Sendable () -> Bool) async {
        while !withLock({ condition() || stopped }) {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { continuation.resume() }
            }
        }
    }

    private func start(_ member: Member) throws {
        member.loop = SimulatedLoop()
        member.loop.wake = { [weak self] in self?.poke() }
        var configuration = member.configuration
        configuration.wallClock = { [time, member] in UInt64(max(0, Int64(time.wallMillis) + member.skewMillis)) }
        configuration.runtime = ReplicaRuntime(sockets: network.host(member.host), loop: member.loop, now: { [time] in time.now }, store: member.store)
        member.replica = try Replica(configuration, logger: Logger(label: "sim.\(configuration.node)") { _ in SwiftLogNoOpLogHandler() })
        member.nextWake = time.now
    }

    private func stop(_ member: Member) {
        guard let replica = member.replica else { return }
        member.loop.inTurn { replica.assumeIsolated { $0.shutdown() } }
        member.replica = nil
        member.loop.ownerReleased()
    }

    private func block(_ from: Member, _ to: Member) {
        var condition = network.condition(from: from.host, to: to.host)
        condition.blocked = true
        network.setCondition(condition, from: from.host, to: to.host)
    }

    private func poke() {
        wakeUp.signal()
    }

    /// What is due within this much of the present happens without being asked for (a write's
    /// commit, its updates reaching the others), so that an `await` on a replica completes.
    static let present: Duration = .milliseconds(10)

    /// One pass of the cluster's thread: what is due runs; time moves on as far as allowed.
    /// False once stopped. (One pass at a time, so that the thread holds the cluster only while
    /// it works: a cluster nobody holds is freed, and its thread ends.)
    private func driveOnce() -> Bool {
        lock.lock()
        guard !stopped else {
            lock.unlock()
            return false
        }
        let now = time.now
        network.deliverDue()
        var ran = false
        for member in members where member.replica != nil && !member.paused {
            let due = member.loop.hasWork || network.hasInput(host: member.host) || member.nextWake.map { $0 <= now } ?? false
            guard due else { continue }
            ran = true
            let timeout = member.loop.runTurn()
            if member.loop.hasWork || network.hasInput(host: member.host) {
                member.nextWake = now + Simulation.turnCost
            } else {
                member.nextWake = timeout.map { now + max($0, Simulation.turnCost) }
            }
        }
        if ran { lastActive = now }
        let waiting = members.contains { member in
            guard let replica = member.replica, !member.paused else { return false }
            return member.loop.inTurn { replica.assumeIsolated { $0.waitsOnTime } }
        }
        var next = network.nextDue
        for member in members where member.replica != nil && !member.paused {
            if let wake = member.nextWake { next = min(next ?? wake, wake) }
        }
        var idle = false
        if let next, waiting || next <= max(runUntil, lastActive + Self.present) {
            time.advance(to: max(next, now))
        } else if now < runUntil {
            // Nothing is due before the time the test ran the cluster to: the clock just moves.
            time.advance(to: runUntil)
        } else {
            idle = !ran
        }
        lock.unlock()
        if idle { _ = wakeUp.wait(timeout: .now() + .milliseconds(50)) }
        return true
    }

    private var lastActive = MonotonicInstant.now
}
