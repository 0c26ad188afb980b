import Testing
@testable import ReplicaCore

/// `PeriodicDuties`: which of the node's periodic duties a turn runs, and what moves them.
@Suite struct PeriodicDutiesTests {
    let start = MonotonicInstant.now
    let intervals = PeriodicDuties.Intervals(
        heartbeat: .milliseconds(500), beacon: .seconds(1), periodicSync: .seconds(30), tombstoneSweep: .seconds(60))

    func at(_ millis: Int) -> MonotonicInstant { start + .milliseconds(millis) }

    /// Turns at these moments (ms from the start), and the duties each runs, in order.
    @Test func aTableOfTurns() {
        let turns: [(at: Int, due: [PeriodicDuties.Duty])] = [
            (0, [.heartbeat, .beacon, .tombstoneSweep, .storeFileCheck]),  // all but the periodic sync at once
            (100, []),
            (500, [.heartbeat]),
            (999, []),
            (1_000, [.heartbeat, .beacon]),
            (2_000, [.heartbeat, .beacon, .storeFileCheck]),  // late: each is due an interval from now
            (2_400, []),
            (30_000, [.heartbeat, .beacon, .periodicSync, .storeFileCheck]),
        ]
        var duties = PeriodicDuties(intervals: intervals, now: start)
        for turn in turns {
            #expect(duties.due(now: at(turn.at)) == turn.due, "turn at \(turn.at) ms")
        }
    }

    @Test func withoutDiscoveryThereIsNoBeacon() {
        var noBeacon = intervals
        noBeacon.beacon = nil
        var duties = PeriodicDuties(intervals: noBeacon, now: start)
        #expect(!duties.due(now: start).contains(.beacon))
    }

    /// A heartbeat asked for (a withheld update's sequence to show) or a sweep that left
    /// tombstones runs at the next turn; a stall puts the periodic sync off by its length.
    @Test func eventsMoveDuties() {
        var duties = PeriodicDuties(intervals: intervals, now: start)
        _ = duties.due(now: start)
        duties.runSoon(.heartbeat, now: at(10))
        #expect(duties.due(now: at(10)) == [.heartbeat])
        #expect(duties.turned(now: at(20)) == .milliseconds(20))
        #expect(duties.turned(now: at(10_020)) == .seconds(10), "a gap since the last turn: a stall")
        duties.stalled(for: .seconds(10))
        #expect(duties[.periodicSync] == at(40_000))
    }

    /// The member table at most once a second, at once when forced, 30 s after a failed save;
    /// tombstones collected for sync requests at most once a second.
    @Test func memberTableSavesAndCollectionsForRequestsAreSpaced() {
        var duties = PeriodicDuties(intervals: intervals, now: start)
        #expect(duties.savesMemberTable(now: start, force: false))
        duties.memberTableSaved(now: start, failed: false)
        #expect(!duties.savesMemberTable(now: at(500), force: false) && duties.savesMemberTable(now: at(500), force: true))
        #expect(duties.savesMemberTable(now: at(1_000), force: false))
        duties.memberTableSaved(now: at(1_000), failed: true)
        #expect(!duties.savesMemberTable(now: at(30_999), force: false) && duties.savesMemberTable(now: at(31_000), force: false))

        #expect(duties.requestMayCollect(now: start))
        duties.requestServed(now: start)
        #expect(!duties.requestMayCollect(now: at(999)) && duties.requestMayCollect(now: at(1_000)))
    }
}
