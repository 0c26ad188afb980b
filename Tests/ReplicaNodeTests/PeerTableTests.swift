import Foundation
@testable import ReplicaCore
@testable import ReplicaNode
import Testing

/// The `peers` table (and the members section of `status`), rendered from a status value: what
/// each column says for a member reached directly, through a relay, untrusted, and gone.
@Suite struct PeerTableTests {
    private func peer(_ id: String, _ state: PeerState, relayedBy: String? = nil, inSync: Bool = true,
                      syncing: Bool = false, trusted: Bool = true, lastSeen: Double? = 0.5) -> ReplicaStatus.Peer {
        ReplicaStatus.Peer(
            id: id, address: "127.0.0.1:7002", state: state, since: Date(timeIntervalSince1970: 1_800_000_000),
            lastSeenSecondsAgo: lastSeen, relayedBy: relayedBy, epoch: 1, lastSequence: nil, inSync: inSync, sequenceGaps: 0,
            syncsCompleted: 1, repairsCompleted: 0, syncInProgress: syncing, missingUpdates: 0, roundTripMillis: nil,
            clockOffsetMillis: nil, incarnation: "J", trusted: trusted,
            bytesReceived: .init(published: 0, sync: 0, repair: 0), futureTimestampsRejected: 0, skewedHeartbeats: 0)
    }

    /// The cells of each row after the header, split on the column gaps (two spaces or more).
    private func rows(_ peers: [ReplicaStatus.Peer]) -> [String: [String]] {
        let lines = Status.renderPeers(peers).split(separator: "\n").dropFirst()
        var rows: [String: [String]] = [:]
        for line in lines {
            let cells = line.split(separator: "  ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            rows[cells[0]] = cells
        }
        return rows
    }

    private static let via = 5, inSync = 6

    @Test(arguments: [
        // state, relayed by, in sync, syncing, trusted -> first cell, VIA, IN SYNC
        (PeerState.alive, nil as String?, true, false, true, "n2", "direct", "yes"),
        (PeerState.alive, "n3", true, false, true, "n2", "relay n3", "yes"),
        (PeerState.suspect, nil, false, true, true, "n2", "direct", "syncing"),
        (PeerState.down, nil, false, false, true, "n2", "direct", "no"),
        // An untrusted member is not dialled: heard through a relay, or not at all.
        (PeerState.alive, nil, true, false, false, "n2 (untrusted)", "- (not dialled)", "yes"),
        (PeerState.alive, "n3", true, false, false, "n2 (untrusted)", "relay n3", "yes"),
        // A member that left is reached by no route and is not "in sync": it is gone.
        (PeerState.left, nil, false, false, true, "n2", "-", "no"),
        (PeerState.left, "n3", false, false, true, "n2", "-", "no"),
    ] as [(PeerState, String?, Bool, Bool, Bool, String, String, String)])
    func columns(_ row: (PeerState, String?, Bool, Bool, Bool, String, String, String)) throws {
        let (state, relay, inSync, syncing, trusted, first, via, sync) = row
        let cells = try #require(rows([peer("n2", state, relayedBy: relay, inSync: inSync, syncing: syncing, trusted: trusted)])[first])
        #expect(cells[2] == state.rawValue)
        #expect(cells[Self.via] == via)
        #expect(cells[Self.inSync] == sync)
    }

    @Test func noMembersSaysNone() {
        #expect(Status.renderPeers([]) == "  (none)\n")
    }

    @Test func neverSeenSaysNever() throws {
        let cells = try #require(rows([peer("n2", .down, lastSeen: nil)])["n2"])
        #expect(cells[4] == "never")
    }
}
