import Testing
@testable import ReplicaCore

/// The departure's two phases as a table: members hand-off first, then acknowledgements.
@Suite struct LeaveProgressTests {
    static let start = MonotonicInstant.now

    static func progress(asking members: Set<NodeID> = ["a", "b"], published: UInt64 = 12, earlierWrites: Bool = false, force: Bool = false) -> LeaveProgress {
        LeaveProgress(asking: members, epoch: 7, published: published, earlierWrites: earlierWrites, force: force, now: start,
                      handOffTime: .seconds(10), acknowledgementTime: .seconds(2))
    }

    static func report(epoch: UInt64 = 7, through: UInt64) -> PeerReport {
        PeerReport(node: "leaver", epoch: epoch, through: through, echoWallMillis: 0, heldMillis: 0, hearsDirectly: true)
    }

    static func at(_ seconds: Double) -> MonotonicInstant { start + .seconds(seconds) }

    @Test(arguments: [
        (report(through: 12), true),
        (report(through: 13), false),  // more than this process published: a lie, not a hand-off
        (report(through: WireLimits.maxSequence), false),
        (report(through: 11), false),
        (report(epoch: 6, through: 99), false),  // an earlier life's stream
    ] as [(PeerReport, Bool)])
    func aMemberHoldsTheWritesWhenItReportsTheStreamThroughTheLastSequence(report: PeerReport, holds: Bool) {
        #expect(Self.progress().holds(report) == holds)
        #expect(!Self.progress().holds(nil))
        #expect(Self.progress(published: 0).holds(nil), "nothing published: nothing to hold")
    }

    @Test func theDepartureWaitsUntilEveryMemberHoldsTheWrites() {
        var progress = Self.progress()
        #expect(progress.heard(Self.report(through: 12), from: "a", now: Self.at(0)) == nil)
        #expect(progress.start(now: Self.at(0)) == nil, "b lacks them: wait")
        #expect(progress.heard(Self.report(through: 5), from: "b", now: Self.at(1)) == nil)
        #expect(progress.tick(now: Self.at(2)) == nil)
        #expect(progress.heard(Self.report(through: 12), from: "b", now: Self.at(3)) == .announce)
        #expect(progress.heard(Self.report(through: 12), from: "b", now: Self.at(3.5)) == nil, "announced once")
        #expect(progress.acknowledged(by: "a") == nil)
        #expect(progress.acknowledged(by: "b") == .finish(left: true))
    }

    @Test func withNothingPublishedTheDepartureStartsAtOnce() {
        var progress = Self.progress(published: 0)
        #expect(progress.heard(nil, from: "a", now: Self.at(0)) == nil)
        #expect(progress.heard(nil, from: "b", now: Self.at(0)) == .announce)
        #expect(progress.start(now: Self.at(0)) == nil)
    }

    @Test func whenTimeIsUpThoseHoldingTheWritesAreEnough() {
        var progress = Self.progress()
        _ = progress.heard(Self.report(through: 12), from: "a", now: Self.at(0))
        #expect(progress.start(now: Self.at(0)) == nil)
        #expect(progress.tick(now: Self.at(10)) == .announce)
        #expect(progress.lacking == ["b"])
        #expect(progress.acknowledged(by: "a") == nil)
        #expect(progress.tick(now: Self.at(10.1)) == nil)
        #expect(progress.tick(now: Self.at(10.25)) == .reask(["b"]), "asked again, a quarter second on")
        #expect(progress.tick(now: Self.at(10.3)) == nil)
        #expect(progress.tick(now: Self.at(11.9)) == .reask(["b"]))
        #expect(progress.tick(now: Self.at(12)) == .finish(left: true), "b never acknowledged: left all the same")
    }

    @Test func withNoMemberHoldingTheWritesTheNodeStays() {
        var progress = Self.progress()
        #expect(progress.start(now: Self.at(0)) == nil)
        #expect(progress.acknowledged(by: "a") == nil, "no acknowledgement before the departure")
        #expect(progress.tick(now: Self.at(10)) == .finish(left: false))
        var forced = Self.progress(force: true)
        #expect(forced.tick(now: Self.at(10)) == .announce)
    }

    @Test func withNoMemberAliveOnlyANodeWithNothingToHandOverLeaves() {
        var alone = Self.progress(asking: [], published: 3)
        #expect(alone.start(now: Self.at(0)) == .finish(left: false))
        var empty = Self.progress(asking: [], published: 0)
        #expect(empty.start(now: Self.at(0)) == .announce)
        var forced = Self.progress(asking: [], published: 3, force: true)
        #expect(forced.start(now: Self.at(0)) == .announce)
    }

    /// Writes of an earlier run are in no stream of this process: only a member whose digest
    /// equals ours holds them for sure. (A node restarted after writing while partitioned left
    /// at once, "published nothing in this run", and its writes stayed only on its disk.)
    @Test func writesOfEarlierRunsNeedAMemberInTheSameState() {
        var progress = Self.progress(published: 0, earlierWrites: true)
        #expect(!progress.holds(nil) && !progress.holds(Self.report(through: 99)))
        #expect(progress.holds(nil, sameState: true))
        #expect(progress.heard(nil, from: "a", now: Self.at(0)) == nil)
        #expect(progress.start(now: Self.at(0)) == nil)
        #expect(progress.heard(nil, sameState: true, from: "a", now: Self.at(1)) == nil)
        #expect(progress.heard(Self.report(through: 0), sameState: true, from: "b", now: Self.at(2)) == .announce)
        var alone = Self.progress(asking: [], published: 0, earlierWrites: true)
        #expect(alone.start(now: Self.at(0)) == .finish(left: false), "nobody to hand them to")
        var unconfirmed = Self.progress(published: 0, earlierWrites: true)
        #expect(unconfirmed.tick(now: Self.at(10)) == .finish(left: false))
    }

    /// A member that leaves (or is forgotten) while we leave is no longer waited for: it takes
    /// what it holds with it. Before, two nodes leaving at once waited for each other (up to
    /// 12 s), each naming the other as not confirming.
    @Test func aMemberThatLeavesMeanwhileIsNoLongerAsked() {
        var handingOff = Self.progress()
        _ = handingOff.heard(Self.report(through: 12), from: "a", now: Self.at(0))
        #expect(handingOff.start(now: Self.at(0)) == nil)
        handingOff.memberDeparted("b")
        #expect(handingOff.tick(now: Self.at(1)) == .announce, "a holds the writes: all that is left to ask")
        #expect(handingOff.asked == ["a"] && handingOff.lacking.isEmpty)

        var departing = Self.progress()
        _ = departing.heard(Self.report(through: 12), from: "a", now: Self.at(0))
        _ = departing.heard(Self.report(through: 12), from: "b", now: Self.at(0))
        #expect(departing.acknowledged(by: "a") == nil)
        departing.memberDeparted("z")
        #expect(departing.tick(now: Self.at(0.1)) == nil, "not asked: changes nothing")
        departing.memberDeparted("b")
        #expect(departing.tick(now: Self.at(0.6)) == .finish(left: true), "no acknowledgement to wait for")

        var lastOne = Self.progress(asking: ["a"])
        _ = lastOne.heard(Self.report(through: 5), from: "a", now: Self.at(0))
        lastOne.memberDeparted("a")
        #expect(lastOne.tick(now: Self.at(1)) == .finish(left: false), "nobody left to hold the writes")
        var earlierWrites = Self.progress(asking: ["a", "b"], published: 0, earlierWrites: true)
        earlierWrites.memberDeparted("a")
        #expect(earlierWrites.tick(now: Self.at(1)) == nil, "b still asked")

        // The one holding them leaves during the hand-off: the other must confirm, or the node stays.
        var holderGone = Self.progress()
        _ = holderGone.heard(Self.report(through: 12), from: "a", now: Self.at(0))
        holderGone.memberDeparted("a")
        #expect(holderGone.tick(now: Self.at(1)) == nil)
        #expect(holderGone.tick(now: Self.at(10)) == .finish(left: false))
        // Once the departure is announced: no early finish for the others' acknowledgements.
        var announced = Self.progress()
        _ = announced.heard(Self.report(through: 12), from: "a", now: Self.at(0))
        #expect(announced.tick(now: Self.at(10)) == .announce)
        #expect(announced.acknowledged(by: "b") == nil)
        announced.memberDeparted("a")
        #expect(announced.tick(now: Self.at(10.5)) == nil, "the holder left: b gets the whole wait to repair")
        #expect(announced.tick(now: Self.at(12)) == .finish(left: true))
    }

    @Test func aMemberNotAskedChangesNothing() {
        var progress = Self.progress(asking: ["a"])
        #expect(progress.heard(Self.report(through: 12), from: "z", now: Self.at(0)) == nil)
        #expect(progress.heard(Self.report(through: 12), from: "a", now: Self.at(0)) == .announce)
        #expect(progress.acknowledged(by: "z") == nil)
        #expect(progress.acknowledged(by: "a") == .finish(left: true))
    }
}
