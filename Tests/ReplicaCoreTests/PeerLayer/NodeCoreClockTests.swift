import Foundation
import Testing
@testable import ReplicaCore

/// The clock decisions of `NodeCore`, driven without an actor, sockets or sleeps: the members'
/// clocks judged as `peerClock` problems, the hybrid clock's lead, a step of the wall clock.
@Suite struct NodeCoreClockTests {
    static let start = MonotonicInstant.now
    static let wall: UInt64 = 1_800_000_000_000
    static let timing = PeerTiming(heartbeatInterval: .milliseconds(500), suspectAfter: .milliseconds(1500), downAfter: .seconds(5), requestTimeout: .seconds(2))

    static func core(clockAt floor: UInt64 = wall) -> NodeCore {
        let local = MemberRecord(
            node: "a", epoch: wall, incarnation: UUID(), status: .active, address: Endpoint(host: "10.0.0.1", port: 7000), publicKey: nil)
        return NodeCore(
            clock: HybridLogicalClock(maxDriftMillis: 60_000, startingAfter: HybridTimestamp(wallMillis: floor, logical: 0), physical: { wall }),
            clockCheck: ClockCheck(limit: .seconds(60), grace: .seconds(3)), forgottenStamps: ForgottenStamps(storeMayHaveForgotten: false),
            membership: Membership(local: local), own: OwnStream(epoch: wall, retransmitWindow: 16),
            duties: PeriodicDuties(intervals: .init(heartbeat: .milliseconds(500), beacon: nil, periodicSync: .seconds(30), tombstoneSweep: .seconds(60)), now: start),
            housekeeping: HousekeepingSchedule(now: start),
            healthState: NodeHealth(downAfter: .seconds(5), absence: AbsenceCheck(retentionMillis: 86_400_000, lastContact: nil)))
    }

    static func readings(at seconds: Int = 0, wall: UInt64 = wall, alone: Bool = false) -> NodeCore.ClockReadings {
        .init(now: start + .seconds(seconds), wallMillis: wall, timing: timing, refusedEntriesWindow: .seconds(60), hasMembersOrSeeds: !alone)
    }

    static let check = ClockCheck(limit: .seconds(60), grace: .seconds(3))

    struct Row: CustomTestStringConvertible {
        var name: String
        var measured: [(node: NodeID, offset: Int64)] = []
        var refusing: [NodeID: Int64] = [:]
        var newRefusals: [NodeID: Int] = [:]
        var listed: [NodeID: ProblemFact] = [:]
        var kept: Set<NodeID> = []
        /// What is listed after, by member: the message's start and the occurrences.
        var expected: [NodeID: (prefix: String, occurrences: Int)]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a member 90 s ahead of ours and of the median is listed",
            measured: [("b", 90_000), ("c", 0), ("d", 1_000)], expected: ["b": ("b's clock is 90 s ahead", 1)]),
        Row(name: "each check that finds it off counts once more",
            measured: [("b", 90_000), ("c", 0), ("d", 1_000)], listed: ["b": ProblemFact("b's clock is 90 s ahead", occurrences: 3)],
            expected: ["b": ("b's clock is 90 s ahead", 4)]),
        Row(name: "a member behind ours and the median refuses its own writes",
            measured: [("b", -80_000), ("c", 0), ("d", 500)], expected: ["b": ("b's clock is 80 s behind", 1)]),
        Row(name: "with ours the wrong one, the members agree with the median and none is listed",
            measured: [("b", 90_000), ("c", 91_000), ("d", 89_000)], expected: [:]),
        Row(name: "entries refused as stamped ahead list a member whose clock now looks right",
            measured: [("e", 0)], refusing: ["e": 75_000], expected: ["e": (NodeCore.refusedEntriesPrefix, 1)]),
        Row(name: "a listing of refused entries keeps its words and counts new refusals",
            refusing: ["e": 80_000], newRefusals: ["e": 2], listed: ["e": ProblemFact("\(NodeCore.refusedEntriesPrefix) e (first)", occurrences: 1)],
            expected: ["e": ("\(NodeCore.refusedEntriesPrefix) e (first)", 2)]),
        Row(name: "a member not heard directly keeps what was said; one that is down or gone does not",
            listed: ["f": ProblemFact("f's clock is 70 s ahead", occurrences: 2), "g": ProblemFact("g's clock is 70 s ahead")], kept: ["f"],
            expected: ["f": ("f's clock is 70 s ahead", 2)]),
    ]

    @Test(arguments: rows) func membersClocksAreJudgedAgainstTheMedian(_ row: Row) {
        var check = Self.check
        _ = check.evaluate(offsets: row.measured.map(\.offset), unmeasured: 0, now: Self.start)
        let faults = NodeCore.judgeMemberClocks(
            row.measured, median: check.median(row.measured.map(\.offset)), refusing: row.refusing, newRefusals: row.newRefusals,
            check: check, listed: row.listed, keeping: row.kept)
        #expect(Set(faults.keys) == Set(row.expected.keys))
        for (node, expected) in row.expected {
            #expect(faults[node]?.message.hasPrefix(expected.prefix) == true, "\(faults[node]?.message ?? "nothing")")
            #expect(faults[node]?.occurrences == expected.occurrences)
        }
    }

    /// A node alone has nothing to compare with: no verdict holds its writes, and no lead is
    /// held against it. With seeds, it waits for the first comparison (unverified).
    @Test func aNodeAloneIsNotHeldAndOneWithSeedsWaitsForAComparison() {
        var alone = Self.core()
        let aloneRefusal = alone.checkClock(Self.readings(alone: true))
        #expect(aloneRefusal == nil && alone.clockCheck.verdict == .alone)
        var seeded = Self.core()
        let seededRefusal = seeded.checkClock(Self.readings())
        #expect(seededRefusal == nil && seeded.clockCheck.verdict == .unverified)
        #expect(seeded.clockCheck.holdsWrites(now: Self.start + .seconds(1)))
    }

    /// A hybrid clock ahead of the members' by more than they accept (written while the wall
    /// clock was ahead, then set back) is kept as the `clock` problem's lead as first found, and
    /// let go once the wall clock caught up.
    @Test func aHybridClockAheadIsHeldUntilTheWallClockCatchesUp() {
        var core = Self.core(clockAt: Self.wall + 120_000)
        _ = core.checkClock(Self.readings())
        guard case .clockAhead(let lead, _)? = core.healthState.clockLead else {
            Issue.record("no lead: \(String(describing: core.healthState.clockLead))")
            return
        }
        #expect(lead == 120_000)
        _ = core.checkClock(Self.readings(at: 1, wall: Self.wall + 1_000))
        #expect(core.healthState.clockLead == .clockAhead(leadMillis: 120_000, limitMillis: 60_000), "kept as first described")
        _ = core.checkClock(Self.readings(at: 61, wall: Self.wall + 61_000))
        #expect(core.healthState.clockLead == nil)
        #expect(core.clockLeadRefusal(wallMillis: Self.wall, hasMembersOrSeeds: false) == nil, "alone, nobody refuses what it stamps")
    }

    /// A wall clock that moves more than a second differently from the monotonic one was stepped:
    /// the check starts over and the housekeeping runs at the next turn.
    @Test func aStepOfTheWallClockIsFoundBetweenTwoReadings() {
        var core = Self.core()
        let first = core.noticeClockStep(wallMillis: Self.wall, now: Self.start)
        let within = core.noticeClockStep(wallMillis: Self.wall + 500, now: Self.start + .milliseconds(400))
        #expect(first == nil, "the first reading")
        #expect(within == nil, "within a second")
        let step = core.noticeClockStep(wallMillis: Self.wall + 30_500, now: Self.start + .milliseconds(500))
        #expect(step == 29_900)
        #expect(core.housekeeping.wake(now: Self.start + .milliseconds(500)) == .zero)
    }

    /// Local writes meet one decision per batch (`NodeCore.localWrites`), from the core's state.
    @Test func localWritesAreAcceptedHeldOrRefusedByOneDecision() {
        func decide(_ core: inout NodeCore, at seconds: Int, requiring: Bool = false, alone: Bool = false) -> NodeCore.LocalWrites {
            core.localWrites(now: Self.start + .seconds(seconds), wallMillis: Self.wall, requiringCheck: requiring, hasMembersOrSeeds: !alone)
        }
        var alone = Self.core()
        _ = alone.checkClock(Self.readings(alone: true))
        let aloneDecision = decide(&alone, at: 0, alone: true)
        #expect(aloneDecision == .accept, "nobody to compare with")

        var seeded = Self.core()
        _ = seeded.checkClock(Self.readings())
        let (during, after, required) = (decide(&seeded, at: 1), decide(&seeded, at: 4), decide(&seeded, at: 4, requiring: true))
        #expect(during == .hold, "the first comparison is awaited, within the grace")
        #expect(after == .accept, "then taken with an unchecked clock")
        #expect(required == .refuse(.clockUnchecked), "or refused under requireClockCheck")

        var ahead = Self.core(clockAt: Self.wall + 120_000)
        _ = ahead.checkClock(Self.readings())
        let aheadDecision = decide(&ahead, at: 4)
        #expect(aheadDecision == .refuse(.clockAhead(leadMillis: 120_000, limitMillis: 60_000)))

        var skewed = Self.core()
        _ = skewed.clockCheck.evaluate(offsets: [90_000, 95_000, 92_000], unmeasured: 0, now: Self.start)
        let skewedDecision = decide(&skewed, at: 0)
        #expect(skewedDecision == .refuse(.clockSkew(offsetMillis: 92_000, limitMillis: 60_000)))

        var leaving = Self.core()
        _ = leaving.membership.leave(wallMillis: Self.wall + 1)
        let leavingDecision = decide(&leaving, at: 0, alone: true)
        #expect(leavingDecision == .refuse(.leaving), "a node that left takes no writes")
    }
}
