import Synchronization
import Testing
@testable import ReplicaCore

/// A wall clock the test moves by hand.
final class ManualClock: Sendable {
    private let now: Mutex<UInt64>
    init(_ start: UInt64) { now = Mutex(start) }
    func set(_ value: UInt64) { now.withLock { $0 = value } }
    var physical: HybridLogicalClock.PhysicalClock { { self.now.withLock { $0 } } }
}

@Suite struct HybridLogicalClockTests {
    @Test func localEventsIncreaseStrictlyWhileTheWallClockStands() {
        let wall = ManualClock(1_000)
        var clock = HybridLogicalClock(physical: wall.physical)
        let a = clock.tick(), b = clock.tick(), c = clock.tick()
        #expect(a == HybridTimestamp(wallMillis: 1_000, logical: 0))
        #expect(b == HybridTimestamp(wallMillis: 1_000, logical: 1))
        #expect(c == HybridTimestamp(wallMillis: 1_000, logical: 2))
        wall.set(1_005)
        #expect(clock.tick() == HybridTimestamp(wallMillis: 1_005, logical: 0))
    }

    /// What a heartbeat carries: no later tick is below it, whatever the wall clock does
    /// (stepped back, standing, jumping ahead), and reading it does not move the clock.
    @Test func noLaterTickIsBelowTheLeastNext() throws {
        let wall = ManualClock(5_000)
        var clock = HybridLogicalClock(physical: wall.physical)
        for step in [5_000, 5_000, 4_000, 4_000, 9_000, 1_000, 9_000, 9_001] as [UInt64] {
            let least = clock.leastNext
            #expect(clock.leastNext == least, "reading it changes nothing")
            wall.set(step)
            let stamp = clock.tick()
            #expect(stamp >= least, "wall clock at \(step)")
        }
        try clock.receive(HybridTimestamp(wallMillis: 9_050, logical: 3))
        let least = clock.leastNext
        #expect(least == HybridTimestamp(wallMillis: 9_050, logical: 5))
        #expect(clock.tick() == least)
    }

    @Test func aNodeWhoseClockIsBehindStampsAboveWhatItHasSeen() throws {
        let wall = ManualClock(1_000)
        var behind = HybridLogicalClock(physical: wall.physical)
        let remote = HybridTimestamp(wallMillis: 5_000, logical: 7)
        #expect(try behind.receive(remote) == HybridTimestamp(wallMillis: 5_000, logical: 8))
        let next = behind.tick()
        #expect(next > remote)
        #expect(next == HybridTimestamp(wallMillis: 5_000, logical: 9))
    }

    /// The bound `receive` applies is the one `acceptsThrough` states (the `peerClock` check
    /// reads it too): the drift, plus the allowance of a slow clock.
    @Test func theAcceptanceBoundIsReceives() throws {
        var clock = HybridLogicalClock(maxDriftMillis: 60_000, physical: ManualClock(1_000).physical)
        clock.extraDriftMillis = 5_000
        #expect(clock.acceptsThrough(wallMillis: 1_000) == 66_000)
        #expect(throws: Never.self) { try clock.receive(HybridTimestamp(wallMillis: 66_000, logical: 0), wallMillis: 1_000) }
        #expect(throws: HybridLogicalClock.RejectedTimestamp.self) { try clock.receive(HybridTimestamp(wallMillis: 66_001, logical: 0), wallMillis: 1_000) }
    }

    @Test func receiveFollowsEachBranchOfTheRule() throws {
        let wall = ManualClock(2_000)
        var clock = HybridLogicalClock(physical: wall.physical)
        _ = clock.tick()  // 2000.0
        // l == l' == m.l: max(c, m.c) + 1
        #expect(try clock.receive(HybridTimestamp(wallMillis: 2_000, logical: 5)) == HybridTimestamp(wallMillis: 2_000, logical: 6))
        // l == l' > m.l: c + 1
        #expect(try clock.receive(HybridTimestamp(wallMillis: 1_000, logical: 99)) == HybridTimestamp(wallMillis: 2_000, logical: 7))
        // m.l > l': m.c + 1
        #expect(try clock.receive(HybridTimestamp(wallMillis: 2_500, logical: 3)) == HybridTimestamp(wallMillis: 2_500, logical: 4))
        // The wall clock takes no part in a receive; the next local event takes it in.
        wall.set(9_000)
        #expect(try clock.receive(HybridTimestamp(wallMillis: 2_600, logical: 0)) == HybridTimestamp(wallMillis: 2_600, logical: 1))
        #expect(clock.tick() == HybridTimestamp(wallMillis: 9_000, logical: 0))
    }

    /// A node whose wall clock runs ahead, and then is fixed, stamps from the fixed clock: what it
    /// received meanwhile did not carry its wrong time into its clock.
    @Test func aWrongWallClockDoesNotStayInTheClockThroughReceivedEntries() throws {
        let wall = ManualClock(120_000)  // 120 s ahead of the others' 0...
        var clock = HybridLogicalClock(physical: wall.physical)
        try clock.receive(HybridTimestamp(wallMillis: 1_000, logical: 0))
        wall.set(1_500)  // fixed
        #expect(clock.tick() == HybridTimestamp(wallMillis: 1_500, logical: 0))
    }

    @Test func rejectsTimestampsTooFarAheadAndStaysPut() {
        let wall = ManualClock(10_000)
        var clock = HybridLogicalClock(maxDriftMillis: 1_000, physical: wall.physical)
        let before = clock.tick()
        #expect(throws: HybridLogicalClock.RejectedTimestamp.self) {
            try clock.receive(HybridTimestamp(wallMillis: 11_001, logical: 0))
        }
        #expect(clock.last == before)
        #expect((try? clock.receive(HybridTimestamp(wallMillis: 11_000, logical: 0))) != nil)
    }

    @Test func aFullLogicalCounterCarriesIntoTheMilliseconds() throws {
        let wall = ManualClock(1)
        var clock = HybridLogicalClock(physical: wall.physical)
        try clock.receive(HybridTimestamp(wallMillis: 1, logical: .max - 1))
        #expect(clock.tick() == HybridTimestamp(wallMillis: 2, logical: 0))
    }

    @Test func startsAboveTheHighestStoredTimestamp() {
        let wall = ManualClock(1_000)
        var clock = HybridLogicalClock(startingAfter: HybridTimestamp(wallMillis: 9_000, logical: 3), physical: wall.physical)
        #expect(clock.tick() == HybridTimestamp(wallMillis: 9_000, logical: 4))
    }
}
