import Testing
@testable import ReplicaCore

/// Health decisions of `NodeCore` without an actor: the `clock` problem and isolation.
@Suite struct NodeCoreHealthTests {
    typealias Clock = NodeCoreClockTests

    @Test func aNodeThatHearsNoMemberIsIsolatedAfterTheLimitUnlessItHasNoneToHear() {
        var core = Clock.core()
        for seconds in [0, 5, 11] {
            core.judgeIsolation(
                now: Clock.start + .seconds(seconds), local: "a", suspectAfter: .milliseconds(1500), hasMembersOrSeeds: true, requiringCheck: false)
        }
        #expect(core.healthState.isolation.condition == .alone(for: .seconds(11)), "twice the down time: 10 s")
        var single = Clock.core()
        for seconds in [0, 11] {
            single.judgeIsolation(
                now: Clock.start + .seconds(seconds), local: "a", suspectAfter: .milliseconds(1500), hasMembersOrSeeds: false, requiringCheck: false)
        }
        #expect(single.healthState.isolation.condition == nil, "a cluster of one is never isolated")
    }

    /// Under `requireClockCheck`, a node never compared is a `clock` problem from the start:
    /// while its writes wait, then, after the grace, while they are refused.
    @Test func aClockNeverComparedIsAProblemOnlyWhenTheCheckIsRequired() {
        var core = Clock.core()
        _ = core.checkClock(Clock.readings())
        let waiting = core.ownClockProblem(now: Clock.start + .seconds(1), requiringCheck: true)
        let refused = core.ownClockProblem(now: Clock.start + .seconds(4), requiringCheck: true)
        #expect(waiting?.contains("has not been compared") == true)
        #expect(refused == ReplicaError.clockUnchecked.description)
        #expect(core.ownClockProblem(now: Clock.start + .seconds(4), requiringCheck: false) == nil)
    }
}
