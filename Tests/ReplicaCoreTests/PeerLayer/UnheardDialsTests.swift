import Testing
@testable import ReplicaCore

/// `UnheardDials`: members never heard hold at most `limit` links at once, give their places up
/// after `attempt`, and wait a back-off that doubles.
@Suite struct UnheardDialsTests {
    static let start = ContinuousClock.now
    static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test func atMostTheLimitAreDialledAndTheRestWait() {
        var dials = UnheardDials(limit: 2, attempt: .seconds(30), firstBackOff: .seconds(60), maxBackOff: .seconds(240))
        let admitted = (["g1", "g2", "g3", "g4", "g1"] as [NodeID]).map { dials.admit($0, now: Self.at(0)) }
        #expect(admitted == [true, true, false, false, true], "one dialling stays admitted")
        #expect(dials.deferred == 2)
        #expect(dials.tick(now: Self.at(10)).isEmpty, "no place free")
        dials.heard("g1")
        #expect(dials.tick(now: Self.at(11)) == [.open("g3")], "a member heard frees its place for the one waiting longest")
        #expect(dials.tick(now: Self.at(30)) == [.close("g2"), .open("g4")], "unheard for the attempt: it gives its place up")
        #expect(dials.tick(now: Self.at(41)) == [.close("g3")], "no one else's back-off is over")
        #expect(dials.tick(now: Self.at(60)) == [.close("g4")])
        #expect(dials.tick(now: Self.at(89)).isEmpty, "g2 waits its back-off")
        #expect(dials.tick(now: Self.at(90)) == [.open("g2")])
        #expect(dials.tick(now: Self.at(101)) == [.open("g3")])
        #expect(dials.tick(now: Self.at(120)) == [.close("g2"), .open("g4")], "unheard again")
        #expect(dials.waiting["g2"]?.until == Self.at(240), "the back-off doubled")
        dials.remove("g2")
        #expect(dials.waiting["g2"] == nil && dials.dialling["g2"] == nil)
    }

    @Test func theBackOffStopsAtItsLongest() {
        var dials = UnheardDials(limit: 1, attempt: .seconds(1), firstBackOff: .seconds(2), maxBackOff: .seconds(4))
        _ = dials.admit("g", now: Self.at(0))
        var time = 0
        var waits: [Int] = []
        for _ in 0..<5 {
            time += 1
            _ = dials.tick(now: Self.at(time))  // closed
            let until = dials.waiting["g"]!.until
            waits.append(Int((until - Self.at(time)) / .seconds(1)))
            time = Int((until - Self.start) / .seconds(1))
            _ = dials.tick(now: Self.at(time))  // opened again
        }
        #expect(waits == [2, 4, 4, 4, 4])
    }
}
