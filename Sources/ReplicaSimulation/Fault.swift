/// The kinds of fault a simulation draws from (`SimulationOptions.faults`).
public enum FaultKind: String, CaseIterable, Codable, Sendable {
    case partition, oneWay = "one-way", bridge, crash, wipe, pause, clockSkew = "clock-skew", diskFull = "disk-full"
    case loss, delay, duplication, join, leave, forget
    /// A member that lies: edge numbers, claims it never serves, forged records about others.
    case hostile
}

/// One fault of a history: what, when (from the start), for how long.
struct Fault: CustomStringConvertible {
    enum Kind {
        /// These nodes on one side, the rest on the other.
        case partition(Set<Int>)
        case oneWay(from: Int, to: Int)
        /// `left` on one side, the rest on the other, `bridge` hearing both.
        case bridge(left: Set<Int>, bridge: Int)
        case crash(Int, wiped: Bool)
        case pause(Int)
        /// The node's wall clock is off by this much (ms) for the fault's length.
        case clockSkew(Int, millis: Int64)
        case diskFull(Int)
        /// Every link: loss, delay, duplication, jitter.
        case links(LinkCondition)
        case join(Int)
        case leave(Int)
        /// The node crashes and another forgets it.
        case forget(Int, by: Int)
        /// A hostile member joins through this node.
        case hostile(joiningThrough: Int)
    }

    var kind: Kind
    var start: Duration
    var length: Duration

    /// The node the fault is about, when one is (the isolated one of a partition of one).
    var subject: Int? {
        switch kind {
        case .crash(let node, _), .pause(let node), .clockSkew(let node, _), .diskFull(let node), .join(let node), .leave(let node), .forget(let node, _): node
        case .partition(let side) where side.count == 1: side.first
        default: nil
        }
    }

    var isPartition: Bool {
        switch kind {
        case .partition, .oneWay, .bridge: true
        default: false
        }
    }

    var description: String {
        let what: String = switch kind {
        case .partition(let side): "partition \(side.sorted().map { "n\($0 + 1)" }) | rest"
        case .oneWay(let from, let to): "one-way n\(from + 1) -/-> n\(to + 1)"
        case .bridge(let left, let bridge): "bridge \(left.sorted().map { "n\($0 + 1)" }) | rest, n\(bridge + 1) hears both"
        case .crash(let node, let wiped): "\(wiped ? "crash and wipe" : "crash") n\(node + 1)"
        case .pause(let node): "pause n\(node + 1)"
        case .clockSkew(let node, let millis): "clock of n\(node + 1) off by \(millis / 1000) s"
        case .diskFull(let node): "disk of n\(node + 1) full"
        case .links(let condition):
            "links: loss \(condition.loss), duplication \(condition.duplication), delay \(condition.delay), jitter \(condition.jitter)"
        case .join(let node): "n\(node + 1) joins"
        case .leave(let node): "n\(node + 1) leaves"
        case .forget(let node, let by): "n\(node + 1) crashes, n\(by + 1) forgets it"
        case .hostile(let node): "a hostile member joins through n\(node + 1)"
        }
        return "\(what) at \(start) for \(length)"
    }

    /// The problem a node must list while this fault lasts, if it lasts long enough to be seen.
    func detection(options: SimulationOptions) -> String? {
        switch kind {
        case .diskFull where length >= .seconds(4): "commit"
        case .clockSkew(_, let millis) where abs(millis) > 60_000 && length >= .seconds(6): "clock"
        case .partition(let side) where side.count == 1 && length >= .seconds(14): "isolated"
        default: nil
        }
    }

    /// A history's faults, drawn from `random`: their kinds from the options, their times within
    /// the fault phase. A node that joins late starts with a `join` at a random time.
    static func schedule(_ options: SimulationOptions, random: inout SimulationRandom, joiner: Int?) -> [Fault] {
        var faults: [Fault] = []
        let nodes = options.nodes
        let kinds = FaultKind.allCases.filter { options.faults.contains($0) && $0 != .join }
        if let joiner {
            faults.append(Fault(kind: .join(joiner), start: .milliseconds(random.below(Int(options.faultPhase / .milliseconds(2)))), length: .zero))
        }
        guard !kinds.isEmpty else { return faults }
        let count = options.faultCount.lowerBound + random.below(options.faultCount.count)
        let phase = Int(options.faultPhase / .milliseconds(1))
        for _ in 0..<count {
            let start = Duration.milliseconds(random.below(phase * 3 / 4))
            let length = Duration.milliseconds(1_000 + random.below(max(1, phase - Int(start / .milliseconds(1)) - 1_000)))
            let node = random.below(nodes)
            var other = random.below(nodes - 1)
            if other >= node { other += 1 }
            let kind: Kind
            switch kinds[random.below(kinds.count)] {
            case .partition:
                var side: Set<Int> = [node]
                for candidate in 0..<nodes where random.chance(0.3) { side.insert(candidate) }
                if side.count == nodes { side.remove(other) }
                kind = .partition(side)
            case .oneWay: kind = .oneWay(from: node, to: other)
            case .bridge:
                var left: Set<Int> = [other]
                for candidate in 0..<nodes where candidate != node && random.chance(0.4) { left.insert(candidate) }
                kind = .bridge(left: left, bridge: node)
            case .crash: kind = .crash(node, wiped: false)
            case .wipe: kind = .crash(node, wiped: true)
            case .pause: kind = .pause(node)
            case .clockSkew:
                let skews: [Int64] = [-180_000, -90_000, -20_000, 20_000, 90_000, 180_000]
                kind = .clockSkew(node, millis: skews[random.below(skews.count)])
            case .diskFull: kind = .diskFull(node)
            case .loss: kind = .links(LinkCondition(loss: [0.01, 0.05, 0.2][random.below(3)]))
            case .delay: kind = .links(LinkCondition(delay: .milliseconds([5, 50, 200][random.below(3)]), jitter: .milliseconds(random.below(100))))
            case .duplication: kind = .links(LinkCondition(duplication: [0.05, 0.3][random.below(2)]))
            case .leave: kind = .leave(node)
            case .forget: kind = .forget(node, by: other)
            case .hostile: kind = .hostile(joiningThrough: node)
            case .join: continue
            }
            faults.append(Fault(kind: kind, start: start, length: length))
        }
        return faults
    }
}

/// What one history does.
public struct SimulationOptions: Sendable {
    public var seed: UInt64
    public var nodes: Int
    /// How long faults and the workload run; then everything heals.
    public var faultPhase: Duration = .seconds(20)
    /// How long after the heal the nodes must agree.
    public var convergenceBound: Duration = .seconds(60)
    /// The mean gap between two operations of the workload, in ms.
    public var operationInterval = 40
    /// Register keys the workload writes (few, so that writes collide).
    public var registers = 16
    public var faults: Set<FaultKind> = Set(FaultKind.allCases)
    /// How many faults a history draws (a join comes on top, when drawn).
    public var faultCount: ClosedRange<Int> = 2...6
    /// Only these faults of the schedule (by number), to shrink a failing history.
    public var onlyFaults: Set<Int>?

    public init(seed: UInt64, nodes: Int = 5) {
        self.seed = seed
        self.nodes = nodes
    }
}

/// What a history did and whether anything it must hold was broken.
public struct SimulationReport: Codable, Sendable {
    public var seed: UInt64
    public var nodes: Int
    /// A hash of everything that happened, in order: the same on every run of the same seed.
    public var traceHash: String
    public var violations: [String]
    public var faults: [String]
    public var operations: Int
    public var acknowledged: Int
    public var messages: Int
    public var virtualSeconds: Double
    public var convergedAfterSeconds: Double?
}
