import Foundation
import Testing
@testable import ReplicaCore

/// Which relays the core takes (`NodeCore.relayChanges`), without an actor: a member not heard
/// directly for the suspect time is taken through the first linked member, by id, that hears
/// it; a working relay is kept; a member heard again drops its relay.
@Suite struct NodeCoreRelaysTests {
    typealias Clock = NodeCoreClockTests
    static let timing = NodeCoreSyncTests.timing
    static func at(_ millis: Int) -> MonotonicInstant { Clock.start + .milliseconds(millis) }

    /// A core with members `b`, `c` and `d`: `b` last heard at `bHeardAt`, `c` and `d` at 1,900
    /// ms, each saying it hears those of `hearing` directly.
    static func core(bHeardAt: Int, hearing: [NodeID: Set<NodeID>], taken: [NodeID: NodeID] = [:]) -> NodeCore {
        var core = Clock.core()
        let local = PeerSession.LocalView(node: "a", digestRoot: 1, membersDigest: 0, syncing: false)
        for node: NodeID in ["b", "c", "d"] {
            let record = MemberRecord(node: node, epoch: Clock.wall - 10, incarnation: UUID(), status: .active,
                                      address: Endpoint(host: "10.0.0.\(node.rawValue.count)", port: 7000), publicKey: nil)
            _ = core.membership.merge([record], wallMillis: Clock.wall)
            var session = PeerSession(record: record, now: Clock.start)
            let reports = (hearing[node] ?? []).map {
                PeerReport(node: $0, epoch: 0, through: 0, echoWallMillis: 0, heldMillis: 0, hearsDirectly: true)
            }
            let heartbeat = Heartbeat(origin: node, incarnation: record.incarnation, epoch: record.epoch, sequence: 0,
                                      timestamp: .zero, digestRoot: 2, entryCount: 0, reports: reports)
            _ = session.heartbeatReceived(heartbeat, local: local, now: at(node == "b" ? bHeardAt : 1_900), wallMillis: Clock.wall)
            core.sessions[node] = session
        }
        core.relays.taken = taken
        return core
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var bHeardAt: Int
        var hearing: [NodeID: Set<NodeID>]
        var taken: [NodeID: NodeID] = [:]
        var linked: Set<NodeID> = ["b", "c", "d"]
        /// nil: nothing changes.
        var expect: (plan: [NodeID: NodeID], drop: [NodeCore.Relay], take: [NodeCore.Relay])?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "every member heard directly: no relay", bHeardAt: 1_900, hearing: ["c": ["b"]], expect: nil),
        Row(name: "a silent member is taken through the first member by id that hears it", bHeardAt: 0,
            hearing: ["c": ["b"], "d": ["b"]], expect: (["b": "c"], [], [NodeCore.Relay(source: "b", relay: "c")])),
        Row(name: "a working relay is kept", bHeardAt: 0, hearing: ["c": ["b"], "d": ["b"]], taken: ["b": "d"], expect: nil),
        Row(name: "a relay that no longer hears the source gives way", bHeardAt: 0, hearing: ["c": ["b"]], taken: ["b": "d"],
            expect: (["b": "c"], [NodeCore.Relay(source: "b", relay: "d")], [NodeCore.Relay(source: "b", relay: "c")])),
        Row(name: "a member heard again drops its relay", bHeardAt: 1_900, hearing: ["c": ["b"]], taken: ["b": "c"],
            expect: ([:], [NodeCore.Relay(source: "b", relay: "c")], [])),
        Row(name: "a member without a link relays nothing", bHeardAt: 0, hearing: ["c": ["b"]], linked: ["b", "d"], expect: nil),
        Row(name: "nobody hears the silent member: no relay", bHeardAt: 0, hearing: [:], expect: nil),
    ]

    @Test(arguments: rows) func relayChanges(_ row: Row) {
        let core = Self.core(bHeardAt: row.bHeardAt, hearing: row.hearing, taken: row.taken)
        let changes = core.relayChanges(now: Self.at(2_000), base: Self.timing, linked: row.linked)
        #expect(changes?.plan == row.expect?.plan)
        #expect(changes.map { Set($0.drop) } == row.expect.map { Set($0.drop) })
        #expect(changes.map { Set($0.take) } == row.expect.map { Set($0.take) })
    }

    /// Only the relays whose subscriptions are in place count as taken: one that failed is
    /// chosen again at the next plan.
    @Test func onlySubscribedRelaysAreTaken() {
        var core = Self.core(bHeardAt: 0, hearing: ["c": ["b", "d"]])
        core.relaysTaken(["b": "c", "d": "c"], subscribed: [NodeCore.Relay(source: "b", relay: "c")])
        #expect(core.relays.taken == ["b": "c"])
    }
}
