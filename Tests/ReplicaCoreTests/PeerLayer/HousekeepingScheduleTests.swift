import Testing
@testable import ReplicaCore

/// `HousekeepingSchedule`: the housekeeping runs at the first turn, then at most once per
/// interval however fast the loop turns, and a turn that skipped it makes the loop wake for it.
@Suite struct HousekeepingScheduleTests {
    let start = MonotonicInstant.now

    func at(_ millis: Int) -> MonotonicInstant { start + .milliseconds(millis) }

    /// Turns at these moments (ms from the start): whether each runs it, and how long the loop
    /// may then sleep for it (nil: no limit from housekeeping).
    @Test func aTableOfTurns() {
        let turns: [(at: Int, runs: Bool, wakeWithin: Duration?)] = [
            (0, true, nil),  // the first turn
            (1, false, .milliseconds(9)),  // a busy loop: skipped, owed by 10 ms
            (4, false, .milliseconds(6)),
            (10, true, nil),  // due: runs, nothing owed
            (15, false, .milliseconds(5)),
            (40, true, nil),  // an idle loop woke late: runs at once
            (50, true, nil),
            (59, false, .milliseconds(1)),
        ]
        var schedule = HousekeepingSchedule(now: start)
        for turn in turns {
            let runs = schedule.runs(now: at(turn.at))
            #expect(runs == turn.runs, "turn at \(turn.at) ms")
            #expect(schedule.wake(now: at(turn.at)) == turn.wakeWithin, "turn at \(turn.at) ms")
        }
    }

    /// A thousand turns within one interval run it once.
    @Test func aBurstOfTurnsRunsItOnce() {
        var schedule = HousekeepingSchedule(now: start)
        let runs = (0..<1_000).filter { schedule.runs(now: start + .microseconds($0 * 9)) }
        #expect(runs == [0])
        #expect(schedule.wake(now: start + .microseconds(9_000)) == .milliseconds(1))
    }

    /// An event it judges (a heartbeat, a finished sync) has the next turn run it, due or not,
    /// and the loop not sleep before that turn.
    @Test func anEventHasTheNextTurnRunIt() {
        var schedule = HousekeepingSchedule(now: start)
        let first = schedule.runs(now: at(0)), skipped = schedule.runs(now: at(1))
        #expect(first && !skipped)
        schedule.runSoon()
        #expect(schedule.wake(now: at(2)) == .zero)
        let asked = schedule.runs(now: at(2))
        #expect(asked, "not due until 10 ms, but asked for")
        #expect(schedule.wake(now: at(2)) == nil)
        let afterIt = schedule.runs(now: at(3)), due = schedule.runs(now: at(12))
        #expect(!afterIt, "the interval counts from that run")
        #expect(due)
    }

    /// Owed but asked for late (the loop slept past it): wake at once, not at a negative time.
    @Test func anOverdueWakeIsNow() {
        var schedule = HousekeepingSchedule(now: start)
        _ = schedule.runs(now: at(0))
        _ = schedule.runs(now: at(2))
        #expect(schedule.wake(now: at(30)) == .zero)
    }
}
