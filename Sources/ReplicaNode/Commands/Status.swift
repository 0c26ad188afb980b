import ArgumentParser
import Foundation
import ReplicaCore

struct Status: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a node's identity, peers, digest, counters, and load and save errors.",
        discussion: """
            Equal digests on two nodes mean equal replicated state. Peers are alive, suspect \
            (silent > 1.5 s), down (silent > 5 s) or unknown (never heard); LAG is how long \
            this node has been missing updates a peer published, CLOCK the peer's clock minus \
            ours. Times are UTC. Exits with 1 if the node is not running, so it also serves as \
            a health check. --json prints every field (docs/operations.md).

            Examples:
              replica-node status --data cluster-data/node1
              replica-node status --json --data cluster-data/node1
            """)

    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        let status = try client.call(.status, expecting: \.status)
        if options.json { try Output.json(encoding: status) } else { print(Self.render(status), terminator: "") }
    }

    static func render(_ status: ReplicaStatus, now: Date = Date()) -> String {
        var out = ""
        func line(_ label: String, _ value: String) { out += label.padded(to: 14) + value + "\n" }
        line("id", status.id)
        line("incarnation", status.incarnation)
        line("listen", "\(status.listen) (sync on port + 1)")
        let started = now.addingTimeInterval(-status.uptimeSeconds)
        line("started", "\(TimeText.iso8601(started)) (up \(TimeText.duration(seconds: status.uptimeSeconds)))")
        line("hlc", status.hlc + (TimeText.iso8601(hybridTimestamp: status.hlc).map { " (\($0))" } ?? ""))
        line("entries", "\(status.liveEntryCount) live, \(status.entryCount) with tombstones")
        line("digest", status.digest)
        line("security", status.security == "curve" ? "CURVE (encrypted, authenticated)" : "INSECURE (no encryption, no authentication)")
        let counters = status.counters
        line("counters", "published \(counters.updatesPublished), applied \(counters.updatesApplied), "
            + "sync entries \(counters.syncEntriesApplied), syncs served \(counters.syncRequestsServed)")
        line("repairs", "\(counters.repairedUpdates) lost updates resent to us, \(counters.repairsServed) repairs served")
        line("dropped", "\(counters.malformedDropped) malformed, \(counters.futureTimestampsRejected) future timestamps, "
            + "\(counters.handshakesFailed) failed handshakes")
        out += "\npeers\n" + renderPeers(status.peers)
        if !status.refusedHandshakes.isEmpty {
            out += "\nrefused connections (key not trusted)\n"
            for refusal in status.refusedHandshakes {
                out += "  \(refusal.address): \(refusal.count)x, key \(refusal.publicKey ?? "-"), last \(TimeText.iso8601(refusal.last))\n"
            }
        }
        for (title, problems) in [("load errors", status.loadErrors), ("save errors", status.saveErrors)] {
            out += "\n\(title)\n"
            if problems.isEmpty { out += "  (none)\n" }
            for problem in problems {
                out += "  \(problem.subject): \(problem.message) (since \(TimeText.iso8601(problem.since)))\n"
            }
        }
        return out
    }

    static func renderPeers(_ peers: [ReplicaStatus.Peer]) -> String {
        guard !peers.isEmpty else { return "  (none)\n" }
        let header = ["ADDRESS", "ID", "STATE", "LAST SEEN", "IN SYNC", "LAG", "CLOCK", "GAPS", "SYNCS"]
        var rows = [header]
        for peer in peers {
            let lastSeen = zip(peer.lastSeen, peer.lastSeenSecondsAgo).map {
                "\(TimeText.iso8601($0)) (\(TimeText.duration(seconds: $1)) ago)"
            }
            rows.append([
                peer.address, peer.id ?? "-", peer.state.rawValue, lastSeen ?? "never",
                peer.inSync ? "yes" : (peer.syncInProgress ? "syncing" : "no"),
                peer.replicationLagSeconds == 0 ? "0" : TimeText.duration(seconds: peer.replicationLagSeconds),
                peer.clockOffsetSeconds.map(TimeText.offset) ?? "-",
                "\(peer.sequenceGaps)", "\(peer.syncsCompleted)",
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            var text = "  "
            for (column, cell) in row.enumerated() {
                text += column == row.count - 1 ? cell : cell.padded(to: widths[column] + 2)
            }
            return text + "\n"
        }.joined()
    }
}

/// `zip` for two optionals: both or nothing.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}

extension String {
    /// The string with spaces after it up to `width` characters.
    func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
