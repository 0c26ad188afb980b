import Foundation

/// Heartbeats: liveness, our stream position, digests, and what we know of every member.
extension Replica {
    func publishHeartbeat(now: ContinuousClock.Instant) {
        guard let publisher else { return }
        var reports: [PeerReport] = []
        let active = activeSessions
        reports.reserveCapacity(active.count)
        for session in active {
            let echo = session.echo
            reports.append(PeerReport(
                node: session.node, epoch: session.stream.epoch, through: session.heldThrough,
                echoWallMillis: echo?.wallMillis ?? 0,
                heldMillis: echo.map { UInt32(clamping: Int64(max(0, $0.receivedAt.duration(to: now) / .milliseconds(1)))) } ?? 0,
                hearsDirectly: session.hearsDirectly(now: now, base: timing)))
        }
        let heartbeat = Heartbeat(
            origin: identity.node, incarnation: identity.incarnation, epoch: epoch, sequence: sequence,
            timestamp: clock.peek(), wallMillis: configuration.wallClock(), digestRoot: store.digest.root,
            entryCount: UInt64(store.count), membersDigest: membership.digest, storeSerial: store.serial,
            reports: reports)
        do {
            try publisher.send([codec.publishFrame(.heartbeat(heartbeat))])
        } catch {
            logger.error("heartbeat failed", metadata: ["error": "\(error)"])
        }
    }
}
