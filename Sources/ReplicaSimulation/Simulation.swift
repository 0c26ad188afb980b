import Foundation
import Logging
@_spi(Simulation) import ReplicaCore

/// One seeded history of a simulated cluster: a workload from every node, faults, a heal, and
/// the checks of what must hold afterwards (docs/simulation.md). The same options give the
/// same history, byte for byte (`SimulationReport.traceHash`).
public final class Simulation: @unchecked Sendable {
    public let options: SimulationOptions
    let time: SimulatedTime
    let network: SimulatedNetwork
    private(set) var nodes: [SimulatedNode] = []
    private var agenda = Agenda()
    private var workload: SimulationRandom
    private var faultRandom: SimulationRandom
    var ledger = Ledger()
    private var violations: [String] = []
    private var trace = TraceHash()
    private var faultsApplied: [String] = []
    private var operations = 0
    private var convergedAfter: Duration?
    /// Problems each node listed during each fault (sampled), and the longest run of samples in
    /// which the fault could be seen (its node running, and for a clock, not cut off from every
    /// member).
    private var sightings: [Int: Set<String>] = [:]
    private var visibleSamples: [Int: Int] = [:]
    private var visibleInARow: [Int: Int] = [:]
    private var failuresAtStart: [Int: Int] = [:]
    private var schedule: [Fault] = []

    public init(_ options: SimulationOptions) {
        self.options = options
        var random = SimulationRandom(seed: options.seed)
        time = SimulatedTime()
        network = SimulatedNetwork(time: time, seed: random.next())
        workload = random.split()
        faultRandom = random.split()
    }

    // MARK: Running

    public func run() -> SimulationReport {
        network.published = { [unowned self] host, frame in observePublished(frame, by: host) }
        let joiner = options.faults.contains(.join) && options.nodes > 2 ? options.nodes - 1 : nil
        for index in 0..<options.nodes {
            nodes.append(SimulatedNode(index: index, simulation: self))
        }
        for node in nodes where node.index != joiner { node.start(seeds: seeds(for: node)) }
        schedule = Fault.schedule(options, random: &faultRandom, joiner: joiner)
        for (number, fault) in schedule.enumerated() where options.onlyFaults?.contains(number) ?? true {
            agenda.add(.faultStart(number), at: time.origin + fault.start)
            agenda.add(.faultEnd(number), at: time.origin + fault.start + fault.length)
        }
        var at = Duration.zero
        while at < options.faultPhase {
            at += .milliseconds(10 + workload.below(2 * options.operationInterval))
            agenda.add(.operation, at: time.origin + at)
        }
        agenda.add(.heal, at: time.origin + options.faultPhase)
        var sample = Duration.milliseconds(500)
        while sample < options.faultPhase {
            agenda.add(.sample, at: time.origin + sample)
            sample += .milliseconds(500)
        }
        let deadline = time.origin + options.faultPhase + options.convergenceBound
        while time.now < deadline {
            step()
            if healed, convergedAfter == nil, time.now >= nextConvergenceCheck {
                nextConvergenceCheck = time.now + .milliseconds(200)
                if converged() {
                    convergedAfter = time.now - (time.origin + options.faultPhase)
                    break
                }
            }
        }
        check()
        for node in nodes { node.stop() }
        trace.combine(network.trace.value)
        return SimulationReport(
            seed: options.seed, nodes: options.nodes, traceHash: trace.description, violations: violations,
            faults: faultsApplied, operations: operations, acknowledged: ledger.acknowledged,
            messages: network.messagesDelivered, virtualSeconds: Double((time.now - time.origin) / .milliseconds(1)) / 1000,
            convergedAfterSeconds: convergedAfter.map { Double($0 / .milliseconds(1)) / 1000 })
    }

    /// The heal was performed: convergence is checked from then on. (Not the last event of a
    /// step: another one due at the same instant, a hostile member's acts, would hide it.)
    private var healed = false
    private var nextConvergenceCheck = MonotonicInstant.now

    /// Every turn's virtual cost: time moves even while a node is busy.
    static let turnCost: Duration = .microseconds(20)

    private func step() {
        let now = time.now
        network.deliverDue()
        while let (event, at) = agenda.first, at <= now {
            agenda.removeFirst()
            perform(event)
        }
        for node in nodes where node.isRunning {
            let due = node.loop.hasWork || network.hasInput(host: node.host) || node.nextWake.map { $0 <= now } ?? false
            guard due else { continue }
            let timeout = node.turn()
            if node.loop.hasWork || network.hasInput(host: node.host) {
                node.nextWake = now + Self.turnCost
            } else {
                node.nextWake = timeout.map { now + max($0, Self.turnCost) }
            }
        }
        var next = agenda.first?.1
        if let due = network.nextDue { next = min(next ?? due, due) }
        for node in nodes where node.isRunning {
            if let wake = node.nextWake { next = min(next ?? wake, wake) }
        }
        time.advance(to: max(next ?? now + .milliseconds(100), now + .microseconds(1)))
    }

    /// n1 and n2, unless both have left: then, as an operator would, two members that have not
    /// (a node given only departed seeds can never join, and rightly says it is isolated).
    func seeds(for node: SimulatedNode) -> [Endpoint] {
        let usual = nodes.filter { $0.index != node.index && $0.index < 2 }
        if usual.contains(where: { !$0.hasLeft }) { return usual.map(\.address) }
        return nodes.filter { $0.index != node.index && !$0.hasLeft }.prefix(2).map(\.address)
    }

    // MARK: Agenda

    private func perform(_ event: AgendaEvent) {
        switch event {
        case .operation: operate()
        case .faultStart(let number): begin(schedule[number], number: number)
        case .faultEnd(let number): end(schedule[number], number: number)
        case .sample: sampleProblems()
        case .heal: heal()
        case .hostileActs: hostileActs()
        }
    }

    /// One operation of the workload, on a running node chosen now.
    private func operate() {
        let running = nodes.filter { $0.isRunning && $0.replica != nil }
        guard !running.isEmpty else { return }
        let node = running[workload.below(running.count)]
        operations += 1
        let number = operations
        switch workload.below(10) {
        case 0..<4: node.setRegister("r\(workload.below(options.registers))", to: "v\(number)", operation: number)
        case 4: node.setRegister("r\(workload.below(options.registers))", to: nil, operation: number)
        case 5..<8: node.increment("c\(workload.below(3))", by: 1 + workload.below(5), operation: number)
        case 8: node.addToLog("e\(number)", operation: number)
        default:
            let added = ledger.logAdds.keys.sorted()
            if !added.isEmpty { node.removeFromLog(added[workload.below(added.count)], operation: number) }
        }
    }

    // MARK: Checks

    /// Every node that runs and is a member holds the same entries.
    private func converged() -> Bool {
        let live = nodes.filter { $0.isRunning && $0.isMember }
        guard let first = live.first?.digest else { return true }
        return live.allSatisfy { $0.digest == first }
    }

    private func violation(_ text: String) { violations.append(text) }

    /// A write that does not win over what its node held when it wrote: the clock took in what
    /// the node had seen, and must stamp above it.
    func causalityViolated(_ text: String) { violation(text) }

    private func check() {
        let live = nodes.filter { $0.isRunning && $0.isMember }
        if ProcessInfo.processInfo.environment["SIMULATION_TRACE"] != nil {
            for node in nodes {
                print(node.id, node.isRunning, node.digest.map { String($0, radix: 16) } ?? "-", node.store.count, node.debugStatus())
            }
        }
        if convergedAfter == nil {
            violation("not converged \(options.convergenceBound) after the heal: digests \(live.map { "\($0.id)=\($0.digest.map { String($0, radix: 16) } ?? "?")" }.joined(separator: " "))")
        }
        guard let reference = live.first else { return }
        let entries = reference.allEntries()
        for node in live.dropFirst() where node.allEntries() != entries {
            violation("\(node.id) holds other entries than \(reference.id) although their digests agree")
        }
        let byKey = Dictionary(entries.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        // Registers: every acknowledged write is there, or beaten by a higher version.
        for write in ledger.registerWrites where !ledger.lostToWipe.contains(write.operation) {
            guard let held = byKey[write.entry.key] else {
                violation("acknowledged write \(write.entry.key) = op \(write.operation) at \(write.entry.version) on \(write.node) is gone")
                continue
            }
            if held.version < write.entry.version {
                violation("acknowledged write \(write.entry.key) at \(write.entry.version) on \(write.node) lost to an older version \(held.version)")
            }
        }
        // Counters: each slot holds what was acknowledged through it; a slot whose node was
        // wiped, at least what other nodes held of it then (what was on its way to them may
        // have arrived too). No slot holds more than was acknowledged through it.
        for slot in entries.filter({ FamilyKey.isReserved($0.key) && $0.key.contains("counter/") }) {
            let total = (try? CounterFamily.total(of: slot)) ?? -1
            guard let acknowledged = ledger.slotTotals[slot.key] else {
                violation("counter slot \(slot.key) holds \(total), and no increment through it was acknowledged")
                continue
            }
            let least = ledger.slotFloors[slot.key].map { min($0, acknowledged) } ?? acknowledged
            if total < least || total > acknowledged {
                violation("counter slot \(FamilyKey.readable(slot.key)) holds \(total); acknowledged through it: \(acknowledged)"
                    + (ledger.slotFloors[slot.key].map { ", of which \($0) had reached other nodes before its node was wiped" } ?? ""))
            }
        }
        for slot in ledger.slotTotals.keys where byKey[slot] == nil && ledger.slotFloors[slot] == nil {
            violation("counter slot \(FamilyKey.readable(slot)) is gone, with \(ledger.slotTotals[slot] ?? 0) acknowledged through it")
        }
        // Logs: every acknowledged add is there unless an acknowledged removal followed it.
        for (id, add) in ledger.logAdds where !ledger.lostToWipe.contains(add.operation) {
            let key = SimulatedNode.log.key(forID: id)
            let removed = ledger.logRemovals[id].map { $0.version > add.version } ?? false
            let present = byKey[key].map { !$0.isTombstone } ?? false
            if !removed && !present {
                violation("acknowledged log add \(id) (op \(add.operation) on \(add.node)) is gone")
            }
        }
        for (number, fault) in schedule.enumerated() where options.onlyFaults?.contains(number) ?? true {
            guard let expected = fault.detection(options: options), visibleSamples[number, default: 0] >= Self.samplesToDetect(expected),
                  !undetectable.contains(number) else { continue }
            if !(sightings[number] ?? []).contains(expected) {
                violation("fault \(number) (\(fault)) lasted \(fault.length) and no \(expected) problem was listed while it did")
            }
        }
    }

    // MARK: Faults

    private var activeFaults: [Int: Fault] = [:]

    /// Starts fault `number`, if it can happen now (a crash needs a running node, a join one
    /// not started yet): only those that did are ended, and listed in the report.
    private func begin(_ fault: Fault, number: Int) {
        guard applies(fault) else { return }
        activeFaults[number] = fault
        if let subject = fault.subject { failuresAtStart[number] = nodes[subject].store.failedCommits }
        faultsApplied.append("\(number): \(fault)")
        trace.combine("fault", "\(number)", "\(fault)")
        apply(fault)
    }

    private func applies(_ fault: Fault) -> Bool {
        switch fault.kind {
        case .crash(let index, _), .pause(let index), .leave(let index): nodes[index].replica != nil && !nodes[index].paused
        case .forget(let index, let by): nodes[index].replica != nil && nodes[by].replica != nil
        case .join(let index): !nodes[index].started
        default: true
        }
    }

    private func apply(_ fault: Fault) {
        switch fault.kind {
        case .partition(let side):
            for a in nodes where side.contains(a.index) {
                for b in nodes where !side.contains(b.index) {
                    block(a, b)
                    block(b, a)
                }
            }
        case .oneWay(let from, let to):
            block(nodes[from], nodes[to])
        case .bridge(let left, let bridge):
            for a in nodes where left.contains(a.index) {
                for b in nodes where !left.contains(b.index) && b.index != bridge {
                    block(a, b)
                    block(b, a)
                }
            }
        case .crash(let index, let wiped):
            if wiped && nodes[index].replica != nil { noteWipe(of: nodes[index]) }
            nodes[index].crash()
        case .pause(let index):
            nodes[index].paused = true
        case .clockSkew(let index, let millis):
            nodes[index].skewMillis = millis
        case .diskFull(let index):
            nodes[index].store.failingCommits = true
        case .links(let condition):
            network.standard = condition
        case .join(let index):
            // Every member that has not left is a seed of a late joiner: given two, it could
            // never join once both left before a partition let it reach them (it rightly lists
            // itself isolated).
            nodes[index].start(seeds: nodes.filter { $0.index != index && !$0.hasLeft }.map(\.address))
        case .leave(let index):
            nodes[index].leave()
        case .forget(let index, let by):
            nodes[index].crash()
            nodes[by].forget(nodes[index].id)
        case .hostile(let index):
            // Overlapping hostile faults share one member (and one round of mischief a turn).
            hostileFaults += 1
            guard hostile == nil else { break }
            hostile = try? HostileNode(network: network, joining: nodes[index].address, wallMillis: time.wallMillis, random: faultRandom.split())
            agenda.add(.hostileActs, at: time.now + .milliseconds(500))
        }
    }

    /// The hostile member of a `hostile` fault, while it lasts.
    private var hostile: HostileNode?
    private var hostileFaults = 0

    private func hostileActs() {
        guard let hostile else { return }
        let victims = nodes.compactMap { node in node.replica.map { (node.id, node.address, $0.epoch) } }
        hostile.act(victims: victims, wallMillis: time.wallMillis)
        agenda.add(.hostileActs, at: time.now + .milliseconds(500))
    }

    private func end(_ fault: Fault, number: Int) {
        guard activeFaults.removeValue(forKey: number) != nil else { return }
        switch fault.kind {
        case .partition, .oneWay, .bridge:
            network.healAll()
            // Other partitions still under way are set again.
            for active in activeFaults.sorted(by: { $0.key < $1.key }).map(\.value) where active.isPartition { apply(active) }
        case .crash(let index, let wiped):
            restart(nodes[index], wiped: wiped)
        case .pause(let index): nodes[index].paused = false
        case .clockSkew(let index, _), .diskFull(let index):
            // Another fault of the kind on the node may still be under way: it holds.
            nodes[index].skewMillis = 0
            nodes[index].store.failingCommits = false
            for active in activeFaults.sorted(by: { $0.key < $1.key }).map(\.value) where active.subject == index {
                if case .clockSkew = active.kind { apply(active) }
                if case .diskFull = active.kind { apply(active) }
            }
        case .links: network.standard = LinkCondition()
        case .forget(let index, _):
            // Back on its data: a new life, which rejoins over the forget.
            restart(nodes[index], wiped: false)
        case .hostile:
            hostileFaults -= 1
            guard hostileFaults == 0 else { break }
            hostile?.leave()
            hostile = nil
        case .join, .leave: break
        }
    }

    private func restart(_ node: SimulatedNode, wiped: Bool) {
        guard node.started, node.replica == nil, node.isMember else { return }
        node.restart(wiped: wiped, seeds: seeds(for: node))
    }

    private func block(_ from: SimulatedNode, _ to: SimulatedNode) {
        var condition = network.condition(from: from.host, to: to.host)
        condition.blocked = true
        network.setCondition(condition, from: from.host, to: to.host)
    }

    /// A node's disk is lost: what it acknowledged that no other node holds (or has received
    /// and not stored yet: it may be lost or not) goes with it (not the protocol's fault), and is
    /// not looked for; of its counter slots, at least what the others hold now must remain.
    private func noteWipe(of wiped: SimulatedNode) {
        let others = nodes.filter { $0.index != wiped.index && $0.replica != nil }
        for write in ledger.registerWrites where write.node == wiped.id && !ledger.lostToWipe.contains(write.operation) {
            let held = others.contains { $0.entry(write.entry.key).map { $0.version >= write.entry.version } ?? false }
            if !held { ledger.lostToWipe.insert(write.operation) }
        }
        for add in ledger.logAdds.values where add.node == wiped.id && !ledger.lostToWipe.contains(add.operation) {
            let key = SimulatedNode.log.key(forID: add.id)
            if !others.contains(where: { $0.entry(key) != nil }) { ledger.lostToWipe.insert(add.operation) }
        }
        for (slot, _) in ledger.slotTotals where ledger.slotNodes[slot] == wiped.id {
            let held = others.compactMap { $0.entry(slot).flatMap { try? CounterFamily.total(of: $0) } }.max() ?? 0
            ledger.slotFloors[slot] = min(ledger.slotFloors[slot] ?? .max, held)
        }
    }

    /// The end of the fault phase: every fault still under way ends, and every node that is
    /// down comes back on its data (a node left down for good takes what only it held with it).
    private func heal() {
        healed = true
        for (number, fault) in activeFaults.sorted(by: { $0.key < $1.key }) { end(fault, number: number) }
        network.healAll()
        network.standard = LinkCondition()
        for node in nodes {
            node.paused = false
            node.skewMillis = 0
            node.store.failingCommits = false
            restart(node, wiped: false)
        }
    }

    private func sampleProblems() {
        // No second process ever runs with a node's id here: an identity problem is a false one
        // (a forged record must not make a node refuse its writes).
        for node in nodes where node.isRunning && node.problems().contains("identity") {
            violation("at \(time.elapsed) \(node.id) lists an identity problem, with no other process using its id")
        }
        let partitioned = activeFaults.values.contains { $0.isPartition }
        for (number, fault) in activeFaults {
            guard fault.detection(options: options) != nil else { continue }
            var inForce = true
            if case .clockSkew(let node, let millis) = fault.kind { inForce = nodes[node].skewMillis == millis }
            // A full disk shows only to a node that commits something.
            if case .diskFull(let node) = fault.kind { inForce = nodes[node].store.failedCommits > (failuresAtStart[number] ?? 0) }
            // The hostile member stands outside partitions: a node it reaches is not isolated,
            // and isolation is judged over a stretch it broke.
            if fault.isPartition && hostile != nil { undetectable.insert(number) }
            // Counted in a row: a crash of its node starts its detection over.
            if let subject = fault.subject, nodes[subject].isRunning, inForce, !(partitioned && !fault.isPartition) {
                visibleInARow[number, default: 0] += 1
                visibleSamples[number] = max(visibleSamples[number, default: 0], visibleInARow[number, default: 0])
            } else {
                visibleInARow[number] = 0
            }
            for node in nodes where node.isRunning {
                for problem in node.problems() { sightings[number, default: []].insert(problem) }
            }
        }
    }

    /// Faults whose problem cannot be expected (a partition the hostile member reached across).
    private var undetectable: Set<Int> = []

    /// Samples in a row (every 500 ms) a fault must be visible for before its problem must
    /// show: 4 s, or for isolation 12 s (a node is isolated after hearing no member for twice
    /// the down time, 10 s, judged at a housekeeping run).
    static func samplesToDetect(_ problem: String) -> Int { problem == "isolated" ? 24 : 8 }

    // MARK: Reports: a node reports holding only what it holds

    /// What each node published, by its id, its epoch, then sequence: the key and version.
    private var publications: [NodeID: [UInt64: [UInt64: (key: String, version: Version)]]] = [:]
    /// Per reporting node, reported member and epoch: the sequence checked through.
    private var reportsChecked: [NodeID: [NodeID: [UInt64: UInt64]]] = [:]
    private let codec = WireCodec()

    /// Every update a node publishes is recorded; every heartbeat's reports are checked against
    /// the reporter's store: a node that reports holding a member's stream through a sequence
    /// must hold each update of it up to there (or a later version of its key). Members leave
    /// out of their sync replies what a report claims, and a leaving node relies on them.
    private func observePublished(_ frame: [UInt8], by host: String) {
        guard let node = nodes.first(where: { $0.host == host }), let replica = node.replica,
              let message = try? codec.decodePublished(frame) else { return }
        switch message {
        case .update(let update):
            publications[node.id, default: [:]][replica.epoch, default: [:]][update.sequence] = (update.entry.key, update.entry.version)
        case .updates(let batch):
            for (offset, entry) in batch.entries.enumerated() {
                publications[node.id, default: [:]][replica.epoch, default: [:]][batch.firstSequence + UInt64(offset)] = (entry.key, entry.version)
            }
        case .heartbeat(let heartbeat):
            for report in heartbeat.reports where report.through > 0 {
                guard let published = publications[report.node]?[report.epoch] else { continue }
                let from = (reportsChecked[node.id]?[report.node]?[report.epoch] ?? 0) + 1
                guard from <= report.through else { continue }
                // Over what was published (a member that lies may claim 2^53 - 1).
                for (sequence, update) in published.sorted(by: { $0.key < $1.key }) where sequence >= from && sequence <= report.through {
                    let held = node.store.entry(for: update.key)
                    if !(held.map { $0.version >= update.version } ?? false) {
                        violation("at \(time.elapsed) \(node.id) reports holding \(report.node)'s stream through \(report.through) (epoch \(report.epoch)), "
                            + "but holds \(update.key) at \(held.map { "\($0.version)" } ?? "nothing"), not its update \(sequence) at \(update.version)")
                        break
                    }
                }
                reportsChecked[node.id, default: [:]][report.node, default: [:]][report.epoch] = report.through
            }
        default:
            break
        }
    }

    // MARK: The ledger

    func acknowledged(_ kind: String, node: SimulatedNode, operation: Int) {
        trace.combine("ack", kind, node.id.rawValue, "\(operation)")
    }
}

/// What the workload's acknowledgements said, for the checks.
struct Ledger {
    struct RegisterWrite {
        var operation: Int
        var node: NodeID
        var entry: Entry
    }
    struct LogAdd {
        var operation: Int
        var node: NodeID
        var id: String
        var version: Version
    }

    var registerWrites: [RegisterWrite] = []
    var logAdds: [String: LogAdd] = [:]
    var logRemovals: [String: Entry] = [:]
    /// Counter slots: the last acknowledged total of each, its node, and what other nodes held
    /// of it when its node was wiped.
    var slotTotals: [String: Int] = [:]
    var slotNodes: [String: NodeID] = [:]
    var slotFloors: [String: Int] = [:]
    var lostToWipe: Set<Int> = []
    var acknowledged = 0

}

/// The agenda of a simulation: events by time, then by the order they were added.
enum AgendaEvent {
    case operation
    case faultStart(Int)
    case faultEnd(Int)
    case sample
    case heal
    case hostileActs
}

struct Agenda {
    private var items: [(at: MonotonicInstant, sequence: Int, event: AgendaEvent)] = []
    private var sequence = 0

    var first: (AgendaEvent, MonotonicInstant)? { items.first.map { ($0.event, $0.at) } }

    mutating func add(_ event: AgendaEvent, at: MonotonicInstant) {
        sequence += 1
        let item = (at: at, sequence: sequence, event: event)
        let index = items.firstIndex { ($0.at, $0.sequence) > (at, sequence) } ?? items.count
        items.insert(item, at: index)
    }

    mutating func removeFirst() { items.removeFirst() }
}
