import Foundation
import Logging

/// Requesting: full anti-entropy syncs (as the `SyncPlanner` decides) and repairs of lost
/// updates (as each `PeerSession` decides), and what comes back on the members' DEALERs.
extension Replica {
    /// Starts the sync the core chooses (`NodeCore.chooseSync`), if any.
    func startNextSync(now: MonotonicInstant) {
        let links = sockets.links
        let choice: NodeCore.SyncChoice
        switch core.chooseSync(now: now, base: timing, catchUpPatience: Self.catchUpPatience, isLinked: { links[$0] != nil }) {
        case .none(let waiting):
            if let waiting { warn("catch-up waiting", waiting) }
            return
        case .start(let chosen):
            choice = chosen
        }
        guard let link = sockets.links[choice.peer] else { return }
        let request = SyncRequest(origin: identity.node, requestID: choice.requestID, buckets: store.digest.buckets, since: choice.since)
        do {
            guard try link.dealer.send([codec.encode(.syncRequest(request))]) else { return }
        } catch {
            logger.warning("sync request to \(choice.peer) failed: \(error)")
            return
        }
        core.syncSent(choice, now: now)
        // Routine periodic checks log at debug; every other sync is worth a line.
        logger.log(level: choice.reason == .periodic ? .debug : .info, "sync with \(choice.peer) started (\(choice.reason.rawValue))")
    }

    func requestRepair(_ range: ClosedRange<UInt64>, from node: NodeID, now: MonotonicInstant) {
        let requestID = core.nextRequestID
        let request = RepairRequest(origin: identity.node, requestID: requestID, first: range.lowerBound, last: range.upperBound)
        let sent: Bool
        do {
            sent = try sockets.links[node]?.dealer.send([codec.encode(.repairRequest(request))]) ?? false
        } catch {
            logger.warning("repair request to \(node) failed: \(error)")
            sent = false
        }
        guard sent else {
            // The range goes back to the missing ones; failed sends count like timeouts.
            perform(core.sessions[node]?.repairNotSent(range) ?? [], for: node, now: now)
            return
        }
        core.nextRequestID += 1
        core.sessions[node]?.repairStarted(requestID: requestID, range: range, now: now)
        logger.debug("repair requested", metadata: ["peer": "\(node)", "range": "\(range)"])
    }

    /// Reads replies on a member's DEALER: sync and repair chunks, and membership answers.
    func receiveReplies(from node: NodeID) {
        guard let link = sockets.links[node] else { return }
        // A bounded intake per loop turn (at most 8 chunks, about 8,000 entries), so one commit
        // stays short and heartbeats, local writes and other members are served in between.
        // A reply handled below may close this very link, or every socket: the acknowledgement
        // that completes our own departure shuts the node down. Stop there, rather than read
        // the closed socket and log a failure that is not one.
        for _ in 0..<8 where link.dealer.isOpen {
            let message: ReceivedMessage?
            do {
                message = try link.dealer.receive(maxFrames: 1)
            } catch {
                logger.warning("sync receive failed: \(error)")
                return
            }
            guard let message else { return }
            do {
                guard message.frames.count == 1, !message.truncated else { throw WireError.wrongFrameCount(message.frames.count, more: message.truncated) }
                let decoded = try codec.decode(message.frames[0])
                guard decoded.origin == node else {
                    dropForged(decoded.origin, on: node)
                    continue
                }
                let now = instant()
                if let actions = core.sessions[node]?.heardDirectly(now: now) { perform(actions, for: node, now: now) }
                switch decoded {
                case .syncChunk(let chunk): receive(chunk, bytes: message.frames[0].count, from: node, now: now)
                case .members(let members): receiveMembersReply(members, from: node)
                default: throw WireError.misplacedKind(decoded.kind.rawValue, socket: "a sync DEALER")
                }
            } catch {
                dropMalformed(error, from: node.rawValue)
            }
        }
    }

    func receive(_ chunk: SyncChunk, bytes: Int, from node: NodeID, now: MonotonicInstant) {
        guard var session = core.sessions[node] else { return }
        switch session.repairChunk(requestID: chunk.requestID, entries: chunk.entries.count, isLast: chunk.isLast, isUnavailable: chunk.isUnavailable, now: now) {
        case .unrelated:
            break
        case .unavailable:
            core.sessions[node] = session
            core.counters.repairsUnavailable += 1
            logger.info("\(node) no longer holds the updates we lost; syncing instead")
            core.planner.wantCatchUp(.repairUnavailable, preferring: node)
            return
        case .unavailableDeferred:
            core.sessions[node] = session
            core.counters.repairsUnavailable += 1
            warn("unserved \(node)", "\(node) answered again that it no longer holds updates its heartbeats claim "
                + "(\(session.unservedRepairs) times in a row); syncing after \(PeerSession.unservedCatchUpWait(afterUnserved: session.unservedRepairs))")
            return
        case .progress, .completed:
            // A repair that completes lets the next one, or a sync, start at the next turn.
            core.housekeeping.runSoon()
            session.countBytes(repair: bytes)
            core.sessions[node] = session
            accept(chunk.entries, from: node)
            core.counters.repairedUpdates += chunk.entries.count
            return
        }
        switch core.planner.received(requestID: chunk.requestID, from: node, entries: chunk.entries.count, bytes: bytes, isLast: chunk.isLast, now: now) {
        case .unrelated:
            // A reply to a request we abandoned (a chunk slower than our patience): its entries
            // are as good as any, versions decide, so they are kept; it completes nothing. (They
            // were dropped, and behind a slow link each retry's reply queued behind the last
            // one's, which then crossed the link for nothing.)
            core.sessions[node]?.countBytes(sync: bytes)
            accept(chunk.entries, from: node)
            core.counters.syncEntriesReceived += chunk.entries.count
            core.counters.syncBytesReceived += bytes
            return
        case .progress(let sync):
            if sync.chunks % 100 == 0 {
                logger.info("sync from \(node) in progress: \(sync.entries) entries, \(sync.bytes) bytes")
            }
        case .completed(let sync):
            core.housekeeping.runSoon()  // the next sync starts at the next turn
            let level: Logger.Level = sync.entries > 0 || sync.reason != .periodic ? .info : .debug
            logger.log(level: level, "sync from \(node) done (\(sync.reason.rawValue)): \(sync.entries) entries, \(sync.bytes) bytes in \(now - sync.started)")
            core.syncCompleted(sync, mark: chunk.mark, sequence: chunk.sequence, now: now, base: timing)
            if sync.reason == .commitFailed && core.commits.needsTestCommit(afterCatchUpOf: sync.entries) {
                // Nothing received is missing, so no commit of its own will tell whether the store
                // writes again: a test commit does. If it fails, the next fetch (and test) comes
                // after the back-off, as after any failed commit.
                if let refusal = commitRefusal() {
                    _ = core.commits.failed(refusal, now: now)
                } else if core.commits.committed(now: now, disk: nil, frameBytes: 0) != nil {  // the refusal test just found room
                    logger.info("commits succeed again: a test commit worked and the disk has room")
                }
            }
        }
        core.sessions[node]?.countBytes(sync: bytes)
        accept(chunk.entries, from: node)
        core.counters.syncEntriesReceived += chunk.entries.count
        core.counters.syncBytesReceived += bytes
    }
}
