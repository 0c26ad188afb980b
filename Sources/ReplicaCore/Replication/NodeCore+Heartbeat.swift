/// What this node's heartbeat says: its stream's position, the least stamp its next write can
/// carry, its digests, and a report of every active member (the life heard, how far its stream
/// is held, the echo of its clock, whether it is heard directly).
extension NodeCore {
    /// The store's side of a heartbeat, read by the actor.
    struct StoreSummary {
        var digestRoot: UInt64
        var entryCount: UInt64
        var serial: UInt64
    }

    func heartbeat(identity: StoreIdentity, epoch: UInt64, now: MonotonicInstant, wallMillis: UInt64, base: PeerTiming, store: StoreSummary) -> Heartbeat {
        var reports: [PeerReport] = []
        let active = activeSessions
        reports.reserveCapacity(active.count)
        for session in active {
            let echo = session.echo
            reports.append(PeerReport(
                node: session.node, epoch: session.stream.epoch, through: session.heldThrough,
                echoWallMillis: echo?.wallMillis ?? 0,
                heldMillis: echo.map { UInt32(clamping: Int64(max(0, $0.receivedAt.duration(to: now) / .milliseconds(1)))) } ?? 0,
                hearsDirectly: session.hearsHeartbeatsDirectly(now: now, base: base)))
        }
        // The least stamp our next write can carry, not a reading of the wall clock: every write
        // stamped below it went out by `sequence`, so a member that holds our stream through
        // `sequence` holds all of them (what a sync reply of a third member leaves out:
        // `PublishedStamps.heard`). Moving the clock to the wall clock here instead would carry
        // a wrong wall clock into it without any write.
        return Heartbeat(
            origin: identity.node, incarnation: identity.incarnation, epoch: epoch, sequence: own.sequence,
            timestamp: clock.leastNext, wallMillis: wallMillis, digestRoot: store.digestRoot,
            entryCount: store.entryCount, membersDigest: membership.digest, storeSerial: store.serial,
            reports: reports)
    }
}
