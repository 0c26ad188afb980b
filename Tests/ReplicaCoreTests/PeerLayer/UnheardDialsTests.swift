import Testing
@testable import ReplicaCore

/// `UnheardDials`: members never heard hold at most `limit` links at once, give their places up
/// after `attempt`, and wait a back-off that doubles.
@Suite struct UnheardDialsTests {
    static let start = MonotonicInstant.now
    static func at(_ seconds: Int) -> MonotonicInstant { start + .seconds(seconds) }

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

    /// One step of a row: a dial asked for (and whether it may go ahead now), the member heard,
    /// removed (it left or was forgotten, maybe on another member's word), or its departure
    /// expired.
    enum Step: Sendable {
        case admit(NodeID, Bool)
        case heard(NodeID)
        case remove(NodeID)
        case forget(NodeID)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [Step]
        var testDescription: String { name }
    }

    /// With one place, held by a ghost ("g…", never heard) where a row says so.
    static let rows: [Row] = [
        Row(name: "never heard: it waits while ghosts hold every place", steps: [
            .admit("g1", true), .admit("n3", false),
        ]),
        // Seed 3315: n3 heard, then a forged `forgotten` record dropped its session during a
        // partition; its own record brought it back while ghosts held every place, and it
        // waited behind them past the convergence bound.
        Row(name: "heard once, removed on another's word, back: dialled at once though ghosts hold every place", steps: [
            .admit("n3", true), .heard("n3"), .admit("g1", true), .remove("n3"), .admit("n3", true), .admit("g2", false),
        ]),
        Row(name: "heard once, its session started over (a move): dialled at once, holding no place", steps: [
            .admit("n3", true), .heard("n3"), .admit("n3", true), .admit("g1", true), .admit("g2", false),
        ]),
        Row(name: "heard before it was ever counted: dialled at once later", steps: [
            .heard("n3"), .admit("g1", true), .admit("n3", true),
        ]),
        Row(name: "a ghost removed and sent again is still never heard: it waits", steps: [
            .admit("g1", true), .admit("g2", false), .remove("g2"), .admit("g2", false),
        ]),
        Row(name: "heard once, its departure expired: never heard again, it waits", steps: [
            .admit("n3", true), .heard("n3"), .admit("g1", true), .forget("n3"), .admit("n3", false),
        ]),
    ]

    @Test(arguments: rows) func whoIsDialledAtOnce(_ row: Row) {
        var dials = UnheardDials(limit: 1, attempt: .seconds(30), firstBackOff: .seconds(60), maxBackOff: .seconds(240))
        for (index, step) in row.steps.enumerated() {
            switch step {
            case .admit(let node, let expected):
                #expect(dials.admit(node, now: Self.at(index)) == expected, "step \(index): \(node)")
            case .heard(let node): dials.heard(node)
            case .remove(let node): dials.remove(node)
            case .forget(let node): dials.forget(node)
            }
        }
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
