import ArgumentParser
import Foundation
import ReplicaCore

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a node's identity, peers, digest, counters, and load and save errors.",
        discussion: """
            Equal digests on two nodes mean equal replicated state. Members are alive, suspect \
            (silent > 1.5 s), down (silent > 5 s) or left (announced their departure). Exits with 1 if the \
            node is not running, so it also serves as a health check.

            Example: replica-node status --data /tmp/n1 --json
            """)

    @OptionGroup var options: ClientOptions

    func run() throws {
        try reportingErrors {
            guard let status = try options.client().call(ControlRequest(command: .status)).status else { return }
            if options.json { try printJSON(status) } else { print(Self.render(status), terminator: "") }
        }
    }

    static func render(_ status: ReplicaStatus) -> String {
        var out = ""
        func line(_ label: String, _ value: String) { out += label.padding(toLength: 14, withPad: " ", startingAt: 0) + value + "\n" }
        line("id", status.id)
        line("incarnation", status.incarnation)
        line("listen", "\(status.listen) (sync on port + 1)")
        line("advertise", status.advertise + (status.membership == "left" ? " (left the cluster)" : ""))
        line("hlc", status.hlc)
        line("uptime", String(format: "%.1f s", status.uptimeSeconds))
        line("entries", "\(status.liveEntryCount) live, \(status.entryCount) with tombstones")
        line("digest", status.digest)
        line("security", status.security == "curve" ? "CURVE (encrypted, authenticated)" : "INSECURE (no encryption, no authentication)")
        let counters = status.counters
        line("counters", "published \(counters.updatesPublished), applied \(counters.updatesApplied), "
            + "relayed \(counters.updatesRelayed), sync entries received \(counters.syncEntriesReceived), syncs served \(counters.syncRequestsServed)")
        line("repairs", "\(counters.repairedUpdates) lost updates resent to us, \(counters.repairsServed) repairs served")
        line("dropped", "\(counters.malformedDropped) malformed, \(counters.futureTimestampsRejected) future timestamps, "
            + "\(counters.handshakesFailed) failed handshakes")
        out += "\npeers\n" + renderPeers(status.peers)
        if !status.pendingSeeds.isEmpty { out += "  joining through: \(status.pendingSeeds.joined(separator: ", "))\n" }
        if !status.refusedHandshakes.isEmpty {
            out += "\nrefused connections (key not trusted)\n"
            for refusal in status.refusedHandshakes {
                out += "  \(refusal.address): \(refusal.count)x, key \(refusal.publicKey ?? "-"), last \(ISO8601DateFormatter().string(from: refusal.last))\n"
            }
        }
        for (title, problems) in [("load errors", status.loadErrors), ("save errors", status.saveErrors)] {
            out += "\n\(title)\n"
            if problems.isEmpty { out += "  (none)\n" }
            for problem in problems {
                out += "  \(problem.subject): \(problem.message) (since \(ISO8601DateFormatter().string(from: problem.since)))\n"
            }
        }
        return out
    }

    static func renderPeers(_ peers: [ReplicaStatus.Peer]) -> String {
        guard !peers.isEmpty else { return "  (none)\n" }
        let header = ["ID", "ADDRESS", "STATE", "SINCE", "LAST SEEN", "VIA", "IN SYNC", "RTT", "OFFSET", "GAPS", "SYNCS"]
        var rows = [header]
        let time = DateFormatter()
        time.dateFormat = "HH:mm:ss"
        for peer in peers {
            rows.append([
                peer.id + (peer.trusted ? "" : " (untrusted)"), peer.address, peer.state.rawValue, time.string(from: peer.since),
                peer.lastSeenSecondsAgo.map { String(format: "%.1fs ago", $0) } ?? "never",
                peer.relayedBy.map { "relay \($0)" } ?? "direct",
                peer.inSync ? "yes" : (peer.syncInProgress ? "syncing" : "no"),
                peer.roundTripMillis.map { String(format: "%.0fms", $0) } ?? "-",
                peer.clockOffsetMillis.map { "\($0)ms" } ?? "-",
                "\(peer.sequenceGaps)", "\(peer.syncsCompleted)",
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            "  " + row.enumerated().map { $1.padding(toLength: widths[$0] + 2, withPad: " ", startingAt: 0) }
                .joined().trimmingCharacters(in: .whitespaces) + "\n"
        }.joined()
    }
}
