import Foundation
import Testing
@testable import ReplicaCore

/// `SeedRecontact`: when an isolated node asks its seeds again. (`LeaveProgress` has its own
/// table, LeaveProgressTests.)
@Suite struct LeaveAndSeedTests {
    let start = MonotonicInstant.now

    struct Tick: Sendable {
        var at: Int
        var anyAlive = false
        var hasSeeds = true
        var contact: Bool
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var ticks: [Tick]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "isolated for the down time: the seeds are asked, then again every down time", ticks: [
            Tick(at: 0, contact: false), Tick(at: 4_999, contact: false), Tick(at: 5_000, contact: true),
            Tick(at: 9_000, contact: false), Tick(at: 10_000, contact: true),
        ]),
        Row(name: "a member heard meanwhile starts the count again", ticks: [
            Tick(at: 0, contact: false), Tick(at: 3_000, anyAlive: true, contact: false),
            Tick(at: 5_000, contact: false), Tick(at: 9_999, contact: false), Tick(at: 10_000, contact: true),
        ]),
        Row(name: "no seeds configured: nothing to ask", ticks: [
            Tick(at: 0, hasSeeds: false, contact: false), Tick(at: 60_000, hasSeeds: false, contact: false),
        ]),
    ]

    /// A seed still pending (a retired host) does not hold the others back: the decision does
    /// not even look at pending seeds (it used to wait until none was pending, that is, forever).
    @Test(arguments: rows) func anIsolatedNodeAsksItsSeedsAgain(_ row: Row) {
        var recontact = SeedRecontact()
        for tick in row.ticks {
            let contact = recontact.tick(anyMemberAlive: tick.anyAlive, hasSeeds: tick.hasSeeds, now: start + .milliseconds(tick.at), after: .seconds(5))
            #expect(contact == tick.contact, "at \(tick.at) ms")
        }
    }

    /// `SeedRetirement`: a seed at the address of a member heard here is no longer asked; others
    /// (a retired host, a member not heard) are.
    @Test func aSeedThatIsAMemberHeardHereIsNoLongerAsked() {
        let member = Endpoint(host: "10.0.0.1", port: 7000), other = Endpoint(host: "10.0.0.2", port: 7000)
        let seeds = [(id: 1, address: member), (id: 2, address: other), (id: 3, address: Endpoint(host: "10.0.0.1", port: 7002))]
        #expect(SeedRetirement.redundant(seeds: seeds, aliveMembers: [member]) == [1])
        #expect(SeedRetirement.redundant(seeds: seeds, aliveMembers: []).isEmpty, "nobody heard: every seed is still a way in")
        #expect(SeedRetirement.redundant(seeds: seeds, aliveMembers: [member, other]) == [1, 2])
    }

    /// A members reply acknowledges our departure only if it lists our record as departed: an
    /// exchange's reply that overtook the departure does not (helper-69).
    @Test func onlyAReplyHoldingOurDepartureAcknowledgesIt() {
        func record(_ node: NodeID, _ status: MemberRecord.Status) -> MemberRecord {
            MemberRecord(node: node, epoch: 1, incarnation: UUID(), status: status, address: Endpoint(host: "10.0.0.1", port: 7000), publicKey: nil)
        }
        #expect(Replica.acknowledgesDeparture([record("b", .active), record("a", .left)], of: "a"))
        #expect(!Replica.acknowledgesDeparture([record("b", .active), record("a", .active)], of: "a"), "an exchange's reply")
        #expect(!Replica.acknowledgesDeparture([record("b", .active), record("c", .left)], of: "a"), "the first part of a long table")
    }

    /// `SeedRetirement` of seeds found by beacons (helper-69: forged beacons opened sockets
    /// without limit): configured seeds are kept; discovered ones go after their life, the
    /// oldest first beyond the limit, and one opens a second at most.
    @Test func discoveredSeedsAreBoundedInNumberAndLife() {
        let start = MonotonicInstant.now
        func at(_ seconds: Int) -> MonotonicInstant { start + .seconds(seconds) }
        let life = Int(SeedRetirement.discoveredLife / .seconds(1))
        // Seed 0 configured; 1...16 discovered at seconds 1...16.
        let seeds = [(id: 0, discoveredAt: nil as MonotonicInstant?)] + (1...SeedRetirement.maxDiscovered).map { (id: $0, discoveredAt: at($0)) }
        #expect(SeedRetirement.discoveredToClose(seeds: seeds, now: at(16)).isEmpty, "at the limit, none past its life")
        #expect(SeedRetirement.discoveredToClose(seeds: seeds, making: 1, now: at(16)) == [1], "another makes room: the oldest goes")
        #expect(SeedRetirement.discoveredToClose(seeds: seeds, now: at(life + 2)) == [1, 2], "past their life")
        #expect(SeedRetirement.discoveredToClose(seeds: [(id: 0, discoveredAt: nil)], now: at(10_000)).isEmpty, "a configured seed stays")
        #expect(SeedRetirement.mayDiscover(seeds: seeds.map(\.discoveredAt), now: at(16)) == false)
        #expect(SeedRetirement.mayDiscover(seeds: seeds.map(\.discoveredAt), now: at(17)))
        #expect(SeedRetirement.mayDiscover(seeds: [nil], now: at(0)))
    }

    /// `Isolation`: listed once no member has been heard for the limit, with seeds or members
    /// to hear; cleared the moment one is heard; never for a node with nobody to hear.
    @Test func aNodeThatHearsNoMemberIsListedAfterTheLimit() {
        var isolation = Isolation(limit: .seconds(10))
        func tick(_ ms: Int, alive: Bool = false, others: Bool = true) -> Duration? {
            isolation.update(anyMemberAlive: alive, hasMembersOrSeeds: others, now: start + .milliseconds(ms))
        }
        #expect(tick(0) == nil, "alone from now")
        #expect(tick(9_999) == nil)
        #expect(tick(10_000) == .seconds(10))
        #expect(tick(12_500) == .milliseconds(12_500), "how long, as it goes on")
        #expect(tick(13_000, alive: true) == nil, "a member heard: over at once")
        #expect(tick(14_000) == nil, "alone again: the time starts over")
        #expect(tick(23_999) == nil)
        #expect(tick(24_000) == .seconds(10))
        #expect(tick(25_000, others: false) == nil, "nobody to hear (a cluster of one): never isolated")
        #expect(tick(90_000, others: false) == nil)
    }

    /// `Isolation.unheard`: members heard, none hearing us (a key they do not trust, a one-way
    /// link), for the limit; over as soon as one reports hearing us, or when none is heard
    /// (then it is the other kind of isolation).
    @Test func aNodeThatNoMemberHearsIsListedAfterTheLimit() {
        var isolation = Isolation(limit: .seconds(10))
        func tick(_ ms: Int, alive: Bool = true, hearsUs: Bool = false) -> Duration? {
            isolation.unheard(anyMemberAlive: alive, anyMemberHearsUs: hearsUs, now: start + .milliseconds(ms))
        }
        #expect(tick(0) == nil)
        #expect(tick(9_999) == nil)
        #expect(tick(10_000) == .seconds(10))
        #expect(tick(11_000, hearsUs: true) == nil, "a member hears us: over at once")
        #expect(tick(12_000) == nil, "the time starts over")
        #expect(tick(22_000) == .seconds(10))
        #expect(tick(23_000, alive: false) == nil, "nobody heard: not this kind")
    }
}
