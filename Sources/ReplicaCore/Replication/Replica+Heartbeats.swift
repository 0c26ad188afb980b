import Foundation

/// Heartbeats: liveness, our stream position, digests, and what we know of every member.
extension Replica {
    func publishHeartbeat(now: ContinuousClock.Instant) {
        guard let publisher = sockets.publisher else { return }
        var reports: [PeerReport] = []
        let active = activeSessions
        reports.reserveCapacity(active.count)
        for session in active {
            let echo = session.echo
            reports.append(PeerReport(
                node: session.node, epoch: session.stream.epoch, through: session.heldThrough,
                echoWallMillis: echo?.wallMillis ?? 0,
                heldMillis: echo.map { UInt32(clamping: Int64(max(0, $0.receivedAt.duration(to: now) / .milliseconds(1)))) } ?? 0,
                hearsDirectly: session.hearsHeartbeatsDirectly(now: now, base: timing)))
        }
        // The least stamp our next write can carry, not a reading of the wall clock: every write
        // stamped below it went out by `sequence`, so a member that holds our stream through
        // `sequence` holds all of them (what a sync reply of a third member leaves out:
        // `PublishedStamps.heard`). Moving the clock to the wall clock here instead would carry
        // a wrong wall clock into it without any write.
        let heartbeat = Heartbeat(
            origin: identity.node, incarnation: identity.incarnation, epoch: epoch, sequence: core.own.sequence,
            timestamp: core.clock.leastNext, wallMillis: configuration.wallClock(), digestRoot: store.digest.root,
            entryCount: UInt64(store.count), membersDigest: core.membership.digest, storeSerial: store.serial,
            reports: reports)
        do {
            try publisher.send([codec.publishFrame(.heartbeat(heartbeat))])
        } catch {
            logger.error("heartbeat failed", metadata: ["error": "\(error)"])
        }
    }
}
