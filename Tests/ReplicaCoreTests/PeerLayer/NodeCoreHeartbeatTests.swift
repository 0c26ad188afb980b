import Foundation
import Testing
@testable import ReplicaCore

/// What this node's heartbeat says (`NodeCore.heartbeat`), without an actor.
@Suite struct NodeCoreHeartbeatTests {
    typealias Clock = NodeCoreClockTests
    static let identity = StoreIdentity(node: "a", incarnation: UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)))
    static let store = NodeCore.StoreSummary(digestRoot: 42, entryCount: 7, serial: 9)

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// When the heartbeat is composed, in milliseconds after both members were heard.
        var at: Int
        /// Each member's report: the life and how far its stream is held, heard directly or not.
        var reports: [NodeID: (epoch: UInt64, through: UInt64, direct: Bool)]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "members just heard: their lives, streams and direct hearing", at: 100,
            reports: ["b": (Clock.wall - 10, 3, true), "c": (Clock.wall - 10, 9, true)]),
        Row(name: "members silent past the suspicion time: still reported, not as heard directly", at: 2_000,
            reports: ["b": (Clock.wall - 10, 3, false), "c": (Clock.wall - 10, 9, false)]),
    ]

    @Test(arguments: rows) func whatTheHeartbeatReports(_ row: Row) {
        var core = NodeCoreSyncTests.core()
        for node: NodeID in ["b", "c"] { core.sessions[node]?.covered(through: node == "b" ? 3 : 9, epoch: Clock.wall - 10) }
        let heartbeat = core.heartbeat(identity: Self.identity, epoch: Clock.wall, now: Clock.start + .milliseconds(row.at),
                                       wallMillis: Clock.wall + 5, base: NodeCoreSyncTests.timing, store: Self.store)
        #expect(heartbeat.origin == "a" && heartbeat.epoch == Clock.wall && heartbeat.sequence == 0 && heartbeat.wallMillis == Clock.wall + 5)
        #expect(heartbeat.digestRoot == 42 && heartbeat.entryCount == 7 && heartbeat.storeSerial == 9)
        #expect(heartbeat.timestamp == core.clock.leastNext, "the least stamp the next write can carry, not the wall clock")
        let reports = Dictionary(uniqueKeysWithValues: heartbeat.reports.map { ($0.node, $0) })
        #expect(Set(reports.keys) == Set(row.reports.keys))
        for (node, expected) in row.reports {
            let report = reports[node]
            #expect(report?.epoch == expected.epoch && report?.through == expected.through && report?.hearsDirectly == expected.direct,
                    "\(node): \(String(describing: report))")
        }
    }
}
