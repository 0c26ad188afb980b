import Foundation

/// What members publish: updates, heartbeats, announcements and relays, read from their SUBs.
extension Replica {
    /// Reads a member's SUB while the turn's intake budget lasts; returns true if more may be
    /// waiting, so that a catch-up sync waits until the queued stream has been read.
    func receivePublished(from node: NodeID, budget: inout IntakeBudget) -> Bool {
        guard let link = sockets.links[node] else { return false }
        var taken = 0
        // A message handled below may close this very link (the member said it left): stop
        // there, instead of reading the closed socket and logging a failure that is not one.
        while taken < budget.share, link.subscriber.isOpen, budget.take() {
            taken += 1
            let message: ReceivedMessage?
            do {
                message = try link.subscriber.receive(maxFrames: 1)
            } catch {
                logger.warning("receive failed", metadata: ["peer": "\(node)", "error": "\(error)"])
                return false
            }
            guard let message else { return false }
            do {
                guard !message.truncated, let frame = message.frames.first else { throw WireError.wrongFrameCount(message.frames.count, more: message.truncated) }
                let bytes = frame.count
                let decoded = try codec.decodePublished(frame)
                guard decoded.origin == node else {
                    dropForged(decoded.origin, on: node)
                    continue
                }
                let now = instant()
                switch decoded {
                case .update(let update):
                    receive([update.entry], sequences: update.sequence...update.sequence, bytes: bytes, from: node, now: now)
                case .updates(let batch):
                    // A batch counts in the turn's intake by its updates, not as one message.
                    budget.spend(batch.entries.count - 1)
                    taken += batch.entries.count - 1
                    receive(batch.entries, sequences: batch.sequences, bytes: bytes, from: node, now: now)
                case .heartbeat(let heartbeat):
                    heard(node, bytes: bytes, now: now)
                    receive(heartbeat, from: node, now: now)
                case .members(let members):
                    heard(node, bytes: bytes, now: now)
                    mergeMembers(members.records, from: node, sender: node)
                case .relay(let relayed):
                    heard(node, bytes: bytes, now: now)
                    receive(relayed, from: node, now: now)
                case .syncRequest, .syncChunk, .repairRequest: throw WireError.unknownKind(decoded.kind.rawValue)
                }
            } catch {
                dropMalformed(error, from: node.rawValue)
            }
        }
        guard link.subscriber.isOpen else { return false }
        // Its messages wait to be read: it is not silent, this node is behind (a backlog after a
        // pause). Judging it silent would re-dial its connection and drop what is queued.
        if let actions = core.sessions[node]?.heardDirectly(now: instant()) { perform(actions, for: node, now: instant()) }
        return true
    }

    func dropMalformed(_ error: any Error, from source: String) {
        let (cause, message): (String, String)
        if case WireError.tooLarge(field: "message", _, _) = error {
            core.counters.oversizedDropped += 1
            (cause, message) = ("oversized", "an oversized message")
        } else {
            core.counters.malformedDropped += 1
            (cause, message) = ("malformed", "a malformed message")
        }
        warn(cause, "dropped \(message) from \(source): \(error)")
    }

    /// A message on member `node`'s own connection that claims another origin (another member,
    /// or this node): a member speaks for itself only; forwarded entries travel in syncs,
    /// repairs and relays, which keep their writers.
    func dropForged(_ origin: NodeID, on node: NodeID) {
        core.counters.forgedOriginsDropped += 1
        warn("forged origin", "dropped a message claiming origin \(origin) on \(node)'s connection")
    }

    /// Logs a warning at most once per cause per interval, with the count of those not logged.
    func warn(_ cause: String, _ message: @autoclosure () -> String) {
        let (log, suppressed) = core.warnings.admit(cause, now: instant())
        guard log else { return }
        logger.warning("\(message())\(suppressed > 0 ? " (and \(suppressed) more since the last such line)" : "")")
    }

    /// A message on the member's own connection: it is heard.
    private func heard(_ node: NodeID, bytes: Int, now: MonotonicInstant) {
        guard let actions = core.sessions[node]?.heardDirectly(now: now) else { return }
        core.sessions[node]?.countBytes(update: bytes)
        if !actions.isEmpty { perform(actions, for: node, now: now) }
    }

    /// Updates of the member itself (one, or a batch), with their sequences: one step of its
    /// session for all of them, then each entry to the commit.
    private func receive(_ entries: [Entry], sequences: ClosedRange<UInt64>, bytes: Int, from node: NodeID, now: MonotonicInstant) {
        if let actions = core.sessions[node]?.updatesReceived(sequences, bytes: bytes, now: now), !actions.isEmpty {
            perform(actions, for: node, now: now)
        }
        if !core.relays.served.isEmpty, let epoch = core.sessions[node]?.stream.epoch {
            for (offset, entry) in entries.enumerated() {
                relay(Update(origin: node, sequence: sequences.lowerBound + UInt64(offset), entry: entry), epoch: epoch)
            }
        }
        accept(entries, from: node)
    }

    /// A relay moves the source's stream only from the member this node chose to relay it (one
    /// queued before an unsubscription is not); its entry is merged whoever passed it on.
    private func receive(_ relayed: RelayedUpdate, from node: NodeID, now: MonotonicInstant) {
        let source = relayed.source
        guard source != identity.node, core.sessions[source] != nil, core.relays.taken[source] == node else {
            accept(relayed.entry, from: relayed.origin)
            return
        }
        let actions = core.sessions[source]?.relayReceived(sequence: relayed.sequence, epoch: relayed.sourceEpoch, now: now, base: timing) ?? []
        perform(actions, for: source, now: now)
        accept(relayed.entry, from: source)
    }

    private func receive(_ heartbeat: Heartbeat, from node: NodeID, now: MonotonicInstant) {
        // What housekeeping judges (clocks, liveness, reports, relays) moves with heartbeats.
        core.housekeeping.runSoon()
        // A heartbeat is not data: its timestamp does not move our clock (but while this node's
        // store may lack stamps of its own, see `ForgottenStamps`). From a member whose clock
        // is beyond the limit ahead of ours it keeps the member alive and measures its clock (so
        // the skew shows), and does nothing else: no gap, repair, sync or exchange.
        let wall = configuration.wallClock()
        let ahead = Int64(bitPattern: heartbeat.wallMillis &- wall)
        if ahead > core.clockCheck.limitMillis + Int64(core.clockCheck.allowanceMillis) {
            core.counters.skewedHeartbeats += 1
            if let actions = core.sessions[node]?.skewedHeartbeatReceived(heartbeat, local: identity.node, now: now, wallMillis: wall) {
                perform(actions, for: node, now: now)
            }
            return
        }
        let local = PeerSession.LocalView(
            node: identity.node, digestRoot: store.digest.root, membersDigest: core.membership.digest,
            syncing: core.planner.inFlight?.peer == node, heartbeatInterval: configuration.heartbeatInterval)
        guard let actions = core.sessions[node]?.heartbeatReceived(heartbeat, local: local, now: now, wallMillis: wall) else { return }
        if core.forgottenStamps.takes(heartbeat.timestamp) {
            // Stamps of this id's earlier life may be above this clock (`ForgottenStamps`). One
            // beyond the drift limit is taken again after the clock check.
            do {
                try core.clock.receive(heartbeat.timestamp, wallMillis: wall)
                core.forgottenStamps.took(from: node)
            } catch {
                core.forgottenStamps.refusedTimestamp(heartbeat.timestamp, from: node)
            }
        }
        perform(actions, for: node, now: now)
        if heartbeat.digestRoot == local.digestRoot {
            let us = identity.node
            core.digestsEqual(heartbeat, from: node, local: us, now: now, base: timing)
        }
        leaveHeard(from: node, now: now)
        if let ofUs = heartbeat.reports.first(where: { $0.node == identity.node }) { judgeReport(ofUs: ofUs, by: node, now: now) }
        // What the member says about the others: whom it hears (indirect liveness), and how far it
        // has their streams (updates of members we cannot hear that we lack).
        for report in heartbeat.reports where report.node != identity.node && report.node != node {
            guard var session = core.sessions[report.node], session.record.status == .active else { continue }
            var follow: [PeerSession.Action] = []
            if report.hearsDirectly { follow += session.heardIndirectly(now: now) }
            if !session.hearsDirectly(now: now, base: timing) && session.stream.behind(epoch: report.epoch, through: report.through) != nil {
                session.heldElsewhere(epoch: report.epoch, through: report.through)
                core.planner.wantCatchUp(.behindMember, preferring: node)
            }
            core.sessions[report.node] = session
            perform(follow, for: report.node, now: now)
        }
    }

    /// Queues remote entries for the next commit, those whose timestamps are acceptable, with
    /// one reading of the clocks for all of them.
    func accept(_ entries: [Entry], from node: NodeID) {
        let wall = core.clock.wallMillis()
        let now = instant()
        var dropped = false
        for entry in entries where !accept(entry, from: node, wallMillis: wall, now: now) { dropped = true }
        // Once per message: the next syncs ask for everything in the differing buckets, so what
        // was dropped or refused is fetched again (for a refused one, once the clocks agree).
        if dropped { forgetSyncMarks() }
    }

    /// Queues a remote entry for the next commit if its timestamp is acceptable.
    func accept(_ entry: Entry, from node: NodeID) { accept([entry], from: node) }

    /// Queues one entry; false if it was refused or dropped (not an expired tombstone, which is
    /// collected everywhere and never to be fetched again).
    private func accept(_ entry: Entry, from node: NodeID, wallMillis: UInt64, now: MonotonicInstant) -> Bool {
        if entry.isTombstone, let cutoff = tombstoneCutoff(received: true), entry.version.timestamp < cutoff {
            // Already collected here (or about to be): taking it back would undo the collection.
            core.counters.expiredTombstonesDropped += 1
            return true
        }
        do {
            try core.clock.receive(entry.version.timestamp, wallMillis: wallMillis)
        } catch {
            core.counters.futureTimestampsRejected += 1
            let aheadMillis = Int64(entry.version.timestamp.wallMillis) - Int64(wallMillis)
            core.sessions[entry.version.node]?.countFutureRejection(aheadMillis: aheadMillis, stampWallMillis: entry.version.timestamp.wallMillis, now: now)
            let ahead = Double(aheadMillis) / 1000
            warn("future \(entry.version.node)", "refused entries written by \(entry.version.node) \(Int(ahead)) s ahead of this node's clock "
                + "(limit \(core.clockCheck.limitMillis / 1000) s), received from \(node)")
            return false
        }
        guard core.commits.accept(entry, from: node, now: now) else {
            core.counters.inboundDroppedOnFailedCommit += 1
            return false
        }
        return true
    }

    /// Received entries were dropped (a failed commit, a refused timestamp). No sync mark may
    /// claim we hold what members held, not even that of the sync now running: the next syncs
    /// ask for everything in the differing buckets, so what was dropped is fetched again.
    func forgetSyncMarks() {
        for member in core.sessions.keys {
            core.sessions[member]?.forgetSyncMark()
            core.sessions[member]?.receivedEntriesDropped()
        }
        core.planner.entriesDropped()
    }
}

/// What one loop turn may still read from members: a number of messages, and a deadline checked
/// every few hundred of them (reading the clock per message would cost more than the message).
struct IntakeBudget {
    private(set) var messages: Int
    let deadline: MonotonicInstant
    let now: () -> MonotonicInstant
    /// The most one member's connection may take of it.
    var share: Int = .max
    private var sinceCheck = 0

    init(messages: Int, deadline: MonotonicInstant, now: @escaping () -> MonotonicInstant) {
        self.messages = messages
        self.deadline = deadline
        self.now = now
    }

    /// A message just taken held `extra` more updates (a batch): they count too.
    mutating func spend(_ extra: Int) {
        messages = max(0, messages - max(0, extra))
    }

    /// Takes one message from the budget; false when it is spent.
    mutating func take() -> Bool {
        guard messages > 0 else { return false }
        sinceCheck += 1
        if sinceCheck == 256 {
            sinceCheck = 0
            if now() >= deadline {
                messages = 0
                return false
            }
        }
        messages -= 1
        return true
    }
}
