import ArgumentParser
import Foundation
import ReplicaCore

struct Status: ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a node's identity, members, digest, counters, clock and every current problem.",
        discussion: """
            Equal digests on two nodes mean equal replicated state. Members are alive, suspect \
            (silent > 1.5 s), down (silent > 5 s) or left (announced their departure); silence \
            counts from the last word of a member, or of another member vouching for it, so a \
            node that stops is suspect about 2 to 3 s later and down about 5 to 7 s later. \
            LAST SEEN is when it was last heard itself; SINCE is \
            when they entered that state, VIA whether their updates come directly or through a \
            relay, RTT the round trip, OFFSET their clock minus ours, MISSING the updates of \
            theirs known lost and not yet repaired. Times are UTC. Exits with 1 if the node is \
            not running. --json prints every field (docs/status-json.md).

            Examples:
              replica-node status --data cluster-data/node1
              replica-node status --json --data cluster-data/node1
            """)

    @OptionGroup var options: ClientOptions

    func perform(with client: ControlClient) throws {
        let status = try client.call(.status, expecting: \.status)
        if options.json { try Output.json(encoding: status) } else { Output.text(Self.render(status)) }
    }

    static func render(_ status: ReplicaStatus, now: Date = Date()) -> String {
        var out = ""
        func line(_ label: String, _ value: String) { out += label.padded(to: 14) + value + "\n" }
        line("id", status.id)
        var slot = ""
        if let counterSlot = status.counterSlot, counterSlot != status.incarnation.lowercased() {
            slot = " (counter slots: \(counterSlot), since a run that did not stop cleanly)"
        }
        line("incarnation", status.incarnation + slot)
        line("listen", "\(status.listen) (sync on port + 1)")
        let membership = switch status.membership {
        case "left": " (left the cluster)"
        case "leaving": " (leaving: handing its writes over; writes are refused)"
        default: ""
        }
        line("advertise", status.advertise + membership)
        let started = now.addingTimeInterval(-status.uptimeSeconds)
        line("started", "\(TimeText.iso8601(started)) (up \(TimeText.duration(seconds: status.uptimeSeconds)))")
        line("hlc", status.hlc + (TimeText.iso8601(hybridTimestamp: status.hlc).map { " (\($0))" } ?? ""))
        line("entries", "\(status.liveEntryCount) live, \(status.entryCount - status.liveEntryCount) tombstones")
        line("digest", status.digest)
        if let disk = status.disk {
            let low = disk.isLow ? " (LOW: commits fail once the disk is full; free space or move the data directory)" : ""
            line("disk", "\(ByteCount.text(disk.freeBytes)) free of \(ByteCount.text(disk.totalBytes))\(low)")
        }
        line("security", status.security == "curve" ? "CURVE (encrypted, authenticated)" : "INSECURE (no encryption, no authentication)")
        let counters = status.counters
        line("counters", "published \(counters.updatesPublished), applied \(counters.updatesApplied), "
            + "relayed \(counters.updatesRelayed), sync entries received \(counters.syncEntriesReceived), syncs served \(counters.syncRequestsServed) "
            + "(\(counters.syncEntriesLeftOut) entries left out, the requester held them)")
        line("repairs", "\(counters.repairedUpdates) lost updates resent to us, \(counters.repairsUnavailable) no longer held (synced instead), "
            + "\(counters.repairsServed) repairs served")
        line("dropped", "\(counters.malformedDropped) malformed, \(counters.oversizedDropped) oversized, "
            + "\(counters.forgedOriginsDropped) forged origins, \(counters.futureTimestampsRejected) future timestamps, "
            + "\(counters.skewedHeartbeats) heartbeats from skewed clocks, \(counters.handshakesFailed) failed handshakes, "
            + "\(counters.revokedConnectionsEnded) connections of revoked keys ended, "
            + "\(counters.inboundDroppedOnFailedCommit) received entries on failed commits, "
            + "\(counters.memberRecordsRefused) member records refused")
        let clock = status.clock
        let median = clock.medianOffsetMillis.map { ", members' median \(TimeText.offset(seconds: Double($0) / 1000)) from ours" } ?? ""
        line("clock", "\(clock.verdict)\(median) (limit \(clock.limitMillis / 1000) s)")
        out += "\npeers\n" + renderPeers(status.peers)
        if !status.pendingSeeds.isEmpty {
            // A seed that never answered is still asked for as long as the node runs, also once
            // it joined through another (a tester read "joining through" as not joined).
            let joined = status.peers.contains { $0.state == .alive }
            out += "  \(joined ? "seeds not answering (still asked)" : "joining through"): \(status.pendingSeeds.joined(separator: ", "))\n"
        }
        if !status.refusedHandshakes.isEmpty {
            out += "\nrefused connections (key not trusted)\n"
            for refusal in status.refusedHandshakes {
                out += "  \(refusal.address): \(refusal.count)x, key \(refusal.publicKey ?? "-"), last \(TimeText.iso8601(refusal.last))\n"
            }
        }
        out += "\nproblems\n"
        if status.problems.isEmpty { out += "  (none)\n" }
        for problem in status.problems {
            let times = problem.count > 1
                ? "\(problem.count)x, first \(TimeText.iso8601(problem.since)), last \(TimeText.iso8601(problem.last))"
                : "at \(TimeText.iso8601(problem.since))"
            // A key in a subject or message may hold a newline: shown escaped, one line each.
            out += "  \(problem.kind.rawValue) \(TextLine.visible(problem.subject)): \(TextLine.visible(problem.message)) (\(times))\n"
        }
        return out
    }

    /// How a member is heard: an untrusted one is not dialled, so with no relay it is not
    /// heard at all (its record came from another member), not `direct`.
    static func via(_ peer: ReplicaStatus.Peer) -> String {
        if peer.state == .left { return "-" }
        if let relay = peer.relayedBy { return "relay \(relay)" }
        return peer.trusted ? "direct" : "- (not dialled)"
    }

    static func renderPeers(_ peers: [ReplicaStatus.Peer], now: Date = Date()) -> String {
        guard !peers.isEmpty else { return "  (none)\n" }
        let header = ["ID", "ADDRESS", "STATE", "SINCE", "LAST SEEN", "VIA", "IN SYNC", "RTT", "OFFSET", "MISSING", "GAPS", "SYNCS"]
        var rows = [header]
        for peer in peers {
            let lastSeen = peer.lastSeenSecondsAgo.map {
                "\(TimeText.iso8601(now.addingTimeInterval(-$0))) (\(TimeText.duration(seconds: $0)) ago)"
            }
            rows.append([
                peer.id + (peer.trusted ? "" : " (untrusted)"), peer.address, peer.state.rawValue, TimeText.iso8601(peer.since),
                lastSeen ?? "never",
                via(peer),
                peer.inSync ? "yes" : (peer.syncInProgress ? "syncing" : "no"),
                peer.roundTripMillis.map { "\(Int($0.rounded())) ms" } ?? "-",
                peer.clockOffsetMillis.map { TimeText.offset(seconds: Double($0) / 1000) } ?? "-",
                "\(peer.missingUpdates)",
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

extension String {
    /// The string with spaces after it up to `width` characters.
    func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
